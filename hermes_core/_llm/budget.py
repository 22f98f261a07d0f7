"""LLM budgets: what each plugin's `ctx.llm` may spend per calendar day and month, kept in one
SQLite ledger under `$HERMES_HOME` that every `hermes` process on the machine shares.

A call first reserves its worst case (the prompt's estimated tokens plus its `max_tokens`, priced
with `model.pricing`) in one short transaction that also checks the budget, so two calls (or two
processes) can never both take the last of it; the answer's real usage then replaces the
reservation, and a failed call releases it. A process killed between the two leaves a reservation
that expires (the call's time limit plus a minute) instead of blocking the budget for good.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import os
import sqlite3
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from .. import config_keys as keys
from .._config.config import Config
from .._errors import PluginLlmBudgetError
from .._sqlite import SqliteFile
from .reply import _price, _priced

__all__ = ["Budget", "Ledger", "NOW_VARIABLE", "RESERVED_ANSWER_TOKENS", "budget_for", "worst_case"]

RESERVED_ANSWER_TOKENS = 4096  # what a call without max_tokens reserves for its answer
NOW_VARIABLE = "HERMES_LLM_BUDGET_NOW"  # a fixed clock (UNIX seconds) for tests of period boundaries
_HOLD = 60.0  # seconds a reservation outlives its call's time limit


@attrs.frozen
class Budget:
    """One plugin's budget: each limit None when unset; `where` is the config section it came from."""

    plugin_id: str
    where: str
    tokens_per_day: int | None = None
    cost_per_day: float | None = None
    cost_per_month: float | None = None
    timezone: str = "UTC"

    def limits(self) -> list[tuple[str, float]]:
        return [(name, float(value)) for name, value in (("tokens_per_day", self.tokens_per_day),
                                                          ("cost_per_day", self.cost_per_day),
                                                          ("cost_per_month", self.cost_per_month))
                if value is not None]


def budget_for(config: Config, plugin_id: str) -> Budget | None:
    """Plugin `plugin_id`'s budget: each key of `plugins.entries.<id>.llm_budget`, else of
    `plugins.llm_budget`; None when neither sets a limit."""
    own, default = keys.PLUGIN_LLM_BUDGET, keys.PLUGINS_LLM_BUDGET
    names = ("tokens_per_day", "cost_per_day", "cost_per_month", "timezone")
    mine = {name: config.read(own[index], plugin_id) for index, name in enumerate(names, start=1)}
    shared = {name: config.read(default[index]) for index, name in enumerate(names, start=1)}
    values = {name: shared[name] if mine[name] is None else mine[name] for name in names}
    where = (f"plugins.entries.{plugin_id}.llm_budget" if any(mine[name] is not None for name in names[:3])
             else "plugins.llm_budget")
    if all(values[name] is None for name in ("tokens_per_day", "cost_per_day", "cost_per_month")):
        return None
    return Budget(plugin_id, where, values["tokens_per_day"], values["cost_per_day"], values["cost_per_month"],
                  values["timezone"] or "UTC")


def worst_case(messages: Any, max_tokens: int | None, pricing: Mapping[str, Any], model: str) -> tuple[int, float]:
    """The most a call can use: its prompt's estimated tokens (4 characters a token) plus its
    `max_tokens` (4,096 when unset), and their price (0 when `model` has none)."""
    prompt = math.ceil(len(json.dumps(messages, ensure_ascii=False, default=str)) / 4)
    answer = max_tokens or RESERVED_ANSWER_TOKENS
    price = _price(pricing, model) if pricing else None
    cost = _priced(price, prompt, answer, 0, 0) if price is not None else None
    return prompt + answer, cost or 0.0


def now() -> float:
    fixed = os.environ.get(NOW_VARIABLE)
    return float(fixed) if fixed else time.time()


def _periods(moment: float, zone: str) -> tuple[str, str, str, str]:
    """The day and month of `moment` in `zone`, and when each ends (ISO 8601)."""
    from zoneinfo import ZoneInfo

    local = dt.datetime.fromtimestamp(moment, ZoneInfo(zone))
    day_end = dt.datetime.combine(local.date() + dt.timedelta(days=1), dt.time(), local.tzinfo)
    month_end = dt.datetime(local.year + local.month // 12, local.month % 12 + 1, 1, tzinfo=local.tzinfo)
    return local.strftime("%Y-%m-%d"), local.strftime("%Y-%m"), day_end.isoformat(), month_end.isoformat()


class Ledger(SqliteFile):
    """`$HERMES_HOME/llm-usage.db`: every plugin call's tokens and cost, by plugin, day and month."""

    what = "LLM usage ledger"
    schema = """
        CREATE TABLE spend (id INTEGER PRIMARY KEY, who TEXT NOT NULL, day TEXT NOT NULL, month TEXT NOT NULL,
                            tokens INTEGER NOT NULL, cost REAL NOT NULL, expires REAL);
        CREATE INDEX spend_day ON spend (who, day);
        CREATE INDEX spend_month ON spend (who, month);
    """

    def __init__(self, home: Path) -> None:
        super().__init__(home / "llm-usage.db")

    def reserve(self, budget: Budget, tokens: int, cost: float, seconds: float) -> int:
        """Reserve `tokens` and `cost` for a call of `budget`'s plugin that may take `seconds`; its id.
        `PluginLlmBudgetError` when that would pass a limit (nothing is reserved then)."""
        moment = now()
        day, month, day_end, month_end = _periods(moment, budget.timezone)
        with self._writing() as db:
            used = self._used(db, budget.plugin_id, day, month, moment)
            asked = {"tokens_per_day": tokens, "cost_per_day": cost, "cost_per_month": cost}
            for name, limit in budget.limits():
                if used[name] + asked[name] > limit:
                    raise _refused(budget, name, used[name], asked[name], limit,
                                   month_end if name == "cost_per_month" else day_end)
            return int(db.execute(
                "INSERT INTO spend (who, day, month, tokens, cost, expires) VALUES (?, ?, ?, ?, ?, ?)",
                (budget.plugin_id, day, month, tokens, cost, moment + seconds + _HOLD)).lastrowid or 0)

    @staticmethod
    def _used(db: sqlite3.Connection, who: str, day: str, month: str, moment: float) -> dict[str, float]:
        live = "who = ? AND (expires IS NULL OR expires > ?)"
        tokens, day_cost = db.execute(f"SELECT COALESCE(SUM(tokens), 0), COALESCE(SUM(cost), 0) FROM spend "
                                      f"WHERE {live} AND day = ?", (who, moment, day)).fetchone()
        (month_cost,) = db.execute(f"SELECT COALESCE(SUM(cost), 0) FROM spend WHERE {live} AND month = ?",
                                   (who, moment, month)).fetchone()
        return {"tokens_per_day": float(tokens), "cost_per_day": float(day_cost), "cost_per_month": float(month_cost)}

    def spent(self, who: str, zone: str, period: str) -> dict[str, float]:
        """What `who` used in the current `period` ("day" or "month") of time zone `zone`: tokens, cost
        and requests, counting the live reservations of calls still running."""
        day, month, _, _ = _periods(now(), zone)
        column, value = ("day", day) if period == "day" else ("month", month)
        with self._reading() as db:
            if db is None:
                return {"tokens": 0, "cost": 0.0, "requests": 0}
            tokens, cost, requests = db.execute(
                f"SELECT COALESCE(SUM(tokens), 0), COALESCE(SUM(cost), 0), COUNT(*) FROM spend WHERE who = ? AND "
                f"{column} = ? AND (expires IS NULL OR expires > ?)", (who, value, now())).fetchone()
        return {"tokens": int(tokens), "cost": float(cost), "requests": int(requests)}

    def plugins(self) -> list[str]:
        """Every plugin the ledger has a call of."""
        with self._reading() as db:
            return [] if db is None else [row[0] for row in db.execute("SELECT DISTINCT who FROM spend ORDER BY who")]

    def settle(self, reservation: int, tokens: int, cost: float) -> None:
        """The call's real usage replaces its reservation (kept for good)."""
        with self._writing() as db:
            db.execute("UPDATE spend SET tokens = ?, cost = ?, expires = NULL WHERE id = ?", (tokens, cost, reservation))

    def release(self, reservation: int) -> None:
        """A call that failed spent nothing: its reservation goes."""
        with self._writing() as db:
            db.execute("DELETE FROM spend WHERE id = ? AND expires IS NOT NULL", (reservation,))


def _refused(budget: Budget, name: str, used: float, asked: float, limit: float, resets: str) -> PluginLlmBudgetError:
    def shown(value: float) -> str:
        return f"${value:.4f}" if name.startswith("cost") else f"{value:,.0f} tokens"

    period = "this month" if name == "cost_per_month" else "today"
    return PluginLlmBudgetError(
        f"plugin {budget.plugin_id!r} is at its LLM budget {name} ({budget.where}.{name}): used {shown(used)} of "
        f"{shown(limit)} {period}, {shown(max(limit - used, 0))} left, and this call may take up to {shown(asked)}; "
        f"it resets at {resets}",
        plugin_id=budget.plugin_id, budget=name, used=used, limit=limit, resets=resets)
