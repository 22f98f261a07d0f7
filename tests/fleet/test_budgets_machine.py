"""One random sequence of budgets-ledger operations applied to the SQLite ledger and the shared
PostgreSQL one side by side: reservations on one to three holders (amounts, a rate, concurrency,
a holder in another time zone), settlements (twice, some of them), refusals counted, the clock
moved past reservations' leases and midnights: every answer, and everything `hermes plugins
usage` reads, is the same on both."""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, invariant, rule, run_state_machine_as_test

from hermes_core import PluginLlmBudgetError

# The budgets stage's store, reached by name as tests/fleet/test_stages reaches every stage's.
_ledger = importlib.import_module("hermes_core._llm.ledger")
Budget, Busy, Ledger, Reservation = (getattr(importlib.import_module("hermes_core._llm.budget"), "Budget"),
                                     _ledger.Busy, _ledger.Ledger, _ledger.Reservation)
NOW_VARIABLE = "HERMES_LLM_BUDGET_NOW"

BUDGETS = [Budget("probe", "plugins.entries.probe.llm_budget", tokens_per_day=1000, cost_per_day=1.0, max_concurrent=3),
           Budget("fleet", "budgets.fleet", tokens_per_day=2500, requests_per_minute=5),
           Budget("caller:api_server:alice", "budgets.caller", cost_per_month=2.0, timezone="Europe/Paris")]
holders = st.lists(st.sampled_from(range(len(BUDGETS))), min_size=1, max_size=3, unique=True).map(
    lambda found: [BUDGETS[index] for index in sorted(found)])


def clear(url: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        if conn.execute("SELECT to_regclass('budget_calls')").fetchone()[0] is not None:
            conn.execute("TRUNCATE budget_calls, budget_totals")


def outcome(got: Any) -> Any:
    """What an answer says, without the rows' ids (each database numbers its own)."""
    if got is None:
        return None
    if isinstance(got, Reservation):
        return [(hold.who, hold.day, hold.month) for hold in got.holds]
    if isinstance(got, Busy):
        return ("busy", got.budget.who, got.name, round(got.used, 9), got.limit, got.retry_in, got.reserved)
    return ("refused", got.plugin_id, got.budget, round(got.used, 9), got.limit, str(got))


def same(figures: list[dict[str, Any]]) -> None:
    sqlite, postgres = ({name: round(value, 9) for name, value in found.items()} for found in figures)
    assert sqlite == postgres


class SideBySide(RuleBasedStateMachine):
    folder: Path
    url: str
    examples = 0

    reservations = Bundle("reservations")

    def __init__(self) -> None:
        super().__init__()
        SideBySide.examples += 1
        clear(self.url)
        self.now = 1_795_000_000.0  # 2026-11-18, late in the evening in Paris
        os.environ[NOW_VARIABLE] = str(self.now)
        self.ledgers = [Ledger(self.folder / str(self.examples)), Ledger(self.folder, url=self.url)]

    def both(self, op: Any) -> list[Any]:
        answers = []
        for ledger in self.ledgers:
            try:
                answers.append(op(ledger))
            except PluginLlmBudgetError as exc:
                answers.append(exc)
        assert outcome(answers[0]) == outcome(answers[1])
        return answers

    @rule(target=reservations, budgets=holders, tokens=st.integers(1, 900), cost=st.sampled_from([0.0, 0.1, 0.45]),
          lease=st.sampled_from([30.0, 90.0]))
    def reserve(self, budgets: list[Budget], tokens: int, cost: float, lease: float) -> Any:
        answers = self.both(lambda ledger: ledger.write(ledger.reserving(budgets, tokens, cost, lease)))
        if isinstance(answers[0], PluginLlmBudgetError):
            self.both(lambda ledger: ledger.write(ledger.refusing(
                next(b for b in budgets if b.who == answers[0].plugin_id))))
        return answers if isinstance(answers[0], Reservation) else None

    @rule(reservation=reservations, tokens=st.integers(0, 900), cost=st.sampled_from([0.0, 0.05, 0.3]))
    def settle(self, reservation: Any, tokens: int, cost: float) -> None:
        if reservation is not None:  # a second settlement of the same call counts nothing
            self.both(lambda ledger: ledger.write(ledger.settling(reservation[self.ledgers.index(ledger)], tokens,
                                                                  cost)))

    @rule(seconds=st.sampled_from([1.0, 20.0, 61.0, 3600.0 * 3]))
    def wait(self, seconds: float) -> None:
        self.now += seconds
        os.environ[NOW_VARIABLE] = str(self.now)

    @invariant()
    def usage_is_the_same(self) -> None:
        for budget in BUDGETS:
            same([ledger.used(budget) for ledger in self.ledgers])
            for period in ("day", "month"):
                same([ledger.spent(budget.who, budget.timezone, period) for ledger in self.ledgers])

    def teardown(self) -> None:
        for ledger in self.ledgers:
            ledger.close()


def test_the_same_operations_give_the_same_answers_on_sqlite_and_postgresql(
        tmp_path: Path, pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(NOW_VARIABLE, "0")  # restored after the test; each example sets its own clock
    SideBySide.folder, SideBySide.url = tmp_path, pg_url
    run_state_machine_as_test(SideBySide, settings=settings(
        max_examples=15, stateful_step_count=20, deadline=None, suppress_health_check=list(HealthCheck)))
