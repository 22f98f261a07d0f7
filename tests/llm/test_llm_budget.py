"""LLM budgets through the public API against the scripted server: a call that would pass a
plugin's budget is refused before any request leaves, a call's reservation settles to what it
used, periods end at the budget's midnight (a clock the test sets: `HERMES_LLM_BUDGET_NOW`), and
100 concurrent calls never take more than the budget holds."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest

from hermes_core import PluginLlmBudgetError, PluginLlmError
from hermes_core.testing import Reply, ScriptedServer
from tests.helpers import llm_config, plugin_ctx

# a 35-token prompt (budget.prompt_tokens: 14 + 62 chars / 3)
HI = [{"role": "user", "content": "hi, please answer in one short word: is the sky blue or green?"}]


def at(when: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The budget's clock reads `when` (ISO 8601, with its offset)."""
    monkeypatch.setenv("HERMES_LLM_BUDGET_NOW", str(dt.datetime.fromisoformat(when).timestamp()))


def budget(home: Path, url: str, section: str, extra: str = "") -> None:
    llm_config(home, url, f"  pricing:\n    scripted-model: {{input: 1000, output: 1000}}\nplugins:\n{section}" + extra)


def used(tokens: int) -> Reply:
    return Reply("ok", usage={"prompt_tokens": tokens // 2, "completion_tokens": tokens - tokens // 2,
                              "total_tokens": tokens})


def test_a_call_past_the_token_budget_is_refused_before_any_request(home: Path, llm_server: ScriptedServer,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    at("2026-11-25T10:00:00+00:00", monkeypatch)
    budget(home, llm_server.url, "  entries:\n    probe:\n      llm_budget: {tokens_per_day: 1000}\n")
    llm_server.push(used(400)).push(used(400))
    llm = plugin_ctx(home).llm
    assert llm.complete(HI, max_tokens=65).text == "ok"  # reserves 100, settles to the 400 it used
    assert llm.complete(HI, max_tokens=65).text == "ok"  # 800 used
    with pytest.raises(PluginLlmBudgetError) as refused:
        llm.complete(HI, max_tokens=265)  # would need up to 300: 200 are left
    assert len(llm_server.requests) == 2  # nothing left for the refused call
    error = refused.value
    assert isinstance(error, PluginLlmError)
    assert (error.plugin_id, error.budget, error.used, error.limit) == ("probe", "tokens_per_day", 800, 1000)
    assert error.resets == "2026-11-26T00:00:00+00:00"
    assert str(error) == ("plugin 'probe' is at its LLM budget tokens_per_day (plugins.entries.probe.llm_budget."
                          "tokens_per_day): used 800 tokens of 1,000 tokens today, 200 tokens left, and this call "
                          "may take up to 300 tokens; it resets at 2026-11-26T00:00:00+00:00")
    llm_server.push(used(150))
    assert llm.complete(HI, max_tokens=65).text == "ok"  # a smaller call still fits
    audit = (home / "logs" / "agent.log").read_text(encoding="utf-8")
    assert "plugin=probe" in audit and "outcome=refused:tokens_per_day" in audit


def test_cost_budgets_per_day_and_month_and_the_default_for_every_plugin(home: Path, llm_server: ScriptedServer,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    # $0.001 a token: a budget of $1 a day holds 1,000 tokens, $1.5 a month 1,500
    budget(home, llm_server.url, "  llm_budget: {cost_per_day: 1.0, cost_per_month: 1.5, timezone: Europe/Paris}\n")
    llm = plugin_ctx(home).llm
    at("2026-11-30T23:30:00+01:00", monkeypatch)
    with pytest.raises(PluginLlmBudgetError, match=r"cost_per_day \(plugins.llm_budget.cost_per_day\)"):
        llm.complete(HI, max_tokens=1000)  # up to $1.035: more than the day holds, even unspent
    llm_server.push(used(900))
    llm.complete(HI, max_tokens=865)  # $0.90 today
    with pytest.raises(PluginLlmBudgetError, match="resets at 2026-12-01T00:00:00"):
        llm.complete(HI, max_tokens=165)
    at("2026-12-01T00:30:00+01:00", monkeypatch)  # Paris' next day, and month: both reset
    llm_server.push(used(900))
    llm.complete(HI, max_tokens=865)
    at("2026-12-02T09:00:00+01:00", monkeypatch)  # a new day, but $0.90 of December's $1.5 is spent
    with pytest.raises(PluginLlmBudgetError, match=r"cost_per_month.*\$0\.6000 left.*2027-01-01T00:00:00\+01:00"):
        llm.complete(HI, max_tokens=865)
    assert len(llm_server.requests) == 2


def test_a_failed_call_releases_what_it_reserved(home: Path, llm_server: ScriptedServer,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    at("2026-11-25T10:00:00+00:00", monkeypatch)
    budget(home, llm_server.url, "  entries:\n    probe:\n      llm_budget: {tokens_per_day: 1000}\n")
    llm_server.fail(400, "bad request")
    llm = plugin_ctx(home).llm
    with pytest.raises(PluginLlmError):
        llm.complete(HI, max_tokens=765)
    llm_server.push(used(790))
    assert llm.complete(HI, max_tokens=765).text == "ok"  # the failed call's 800 came back


def test_concurrent_calls_never_take_more_than_the_budget_holds(home: Path, llm_server: ScriptedServer,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    at("2026-11-25T10:00:00+00:00", monkeypatch)
    budget(home, llm_server.url, "  entries:\n    probe:\n      llm_budget: {tokens_per_day: 10000}\n")
    llm_server.always(used(1000))
    llm = plugin_ctx(home).llm

    async def burst() -> list[Any]:
        return await asyncio.gather(*(llm.acomplete(HI, max_tokens=965) for _ in range(100)), return_exceptions=True)

    results = asyncio.run(burst())  # each reserves 1,000: exactly ten fit
    refused = [r for r in results if isinstance(r, PluginLlmBudgetError)]
    assert len(refused) == 90 and len(llm_server.requests) == 10
    assert all(not isinstance(r, BaseException) and r.text == "ok" for r in results if r not in refused)


def test_calls_held_up_by_others_reservations_wait_for_them_and_the_budget_is_used(
        home: Path, llm_server: ScriptedServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each call reserves its worst case (500) and settles to what it used (100): a call that the
    reservations of calls still running leave no room for waits for them to settle instead of
    being refused, so calls go on until what was spent plus one call's worst case passes the cap."""
    at("2026-11-25T10:00:00+00:00", monkeypatch)
    budget(home, llm_server.url, "  entries:\n    probe:\n      llm_budget: {tokens_per_day: 1000}\n")
    llm_server.always(Reply("ok", usage={"prompt_tokens": 50, "completion_tokens": 50, "total_tokens": 100},
                            delay=0.2))
    llm = plugin_ctx(home).llm

    async def burst() -> list[Any]:
        return await asyncio.gather(*(llm.acomplete(HI, max_tokens=465) for _ in range(8)), return_exceptions=True)

    results = asyncio.run(burst())
    refused = [r for r in results if isinstance(r, PluginLlmBudgetError)]
    assert len(llm_server.requests) == 6 and len(refused) == 2  # 5 x 100 spent + 500 reserved fit; a 7th does not
    assert all("used 600 tokens of 1,000 tokens today" in str(r) for r in refused)


KILLED = """
import os, sys
from hermes_core import PluginManager
manager = PluginManager(discover_plugins=False).load()
ctx = manager.add_plugin(lambda ctx: ctx.register_command("probe", lambda raw: raw), "probe").ctx
ctx.llm.complete([{"role": "user", "content": "hi, please answer in one short word: is the sky blue or green?"}], max_tokens=665)
"""


def test_a_killed_process_leaves_a_reservation_that_expires(home: Path, llm_server: ScriptedServer,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    import subprocess
    import sys
    import time

    at("2026-11-25T10:00:00+00:00", monkeypatch)
    budget(home, llm_server.url, "  entries:\n    probe:\n      llm_budget: {tokens_per_day: 1000}\n",
           "auxiliary:\n  plugin_llm: {timeout: 30}\n")
    llm_server.push(Reply("late", delay=60))
    process = subprocess.Popen([sys.executable, "-c", KILLED])  # reserves 700, then waits for its answer
    try:
        deadline = time.monotonic() + 30
        while not llm_server.requests and time.monotonic() < deadline:
            time.sleep(0.05)
        assert llm_server.requests, "the call was never sent"
    finally:
        process.kill()
        process.wait(timeout=30)
    llm = plugin_ctx(home).llm
    with pytest.raises(PluginLlmBudgetError, match="used 700 tokens"):
        llm.complete(HI, max_tokens=465)  # the dead call's 700 are still held
    at("2026-11-25T10:01:31+00:00", monkeypatch)  # its time limit (30 s) and a minute later
    llm_server.push(used(500))
    assert llm.complete(HI, max_tokens=465).text == "ok"


def test_the_usage_command_shows_each_plugin_against_its_budget(home: Path, llm_server: ScriptedServer,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.helpers import hermes

    at("2026-11-25T10:00:00+00:00", monkeypatch)
    budget(home, llm_server.url, "  llm_budget: {cost_per_month: 10}\n  entries:\n    probe:\n"
                                 "      llm_budget: {tokens_per_day: 1000, cost_per_day: 2}\n    idle:\n"
                                 "      llm_budget: {tokens_per_day: 50}\n")
    llm_server.push(used(400)).push(used(200))
    llm = plugin_ctx(home).llm
    llm.complete(HI, max_tokens=65)
    llm.complete(HI, max_tokens=65)
    rows = {row["plugin"]: row for row in json.loads(hermes("plugins", "usage", "--json").stdout)}
    assert set(rows) == {"probe", "idle"}
    probe = rows["probe"]
    assert (probe["tokens"], probe["cost_usd"], probe["requests"]) == (600, 0.6, 2)
    assert probe["budgets"] == {"tokens_per_day": {"limit": 1000, "used": 600, "left": 400},
                                "cost_per_day": {"limit": 2.0, "used": 0.6, "left": 1.4}}
    assert rows["idle"]["requests"] == 0 and rows["idle"]["budgets"]["tokens_per_day"]["left"] == 50
    month = json.loads(hermes("plugins", "usage", "probe", "--period", "month", "--json").stdout)
    assert [row["budgets"] for row in month] == [{"cost_per_month": {"limit": 10.0, "used": 0.6, "left": 9.4}}]
    text = hermes("plugins", "usage").stdout
    assert "tokens_per_day 600 tokens of 1,000 tokens (60%)" in text and "cost_per_day $0.6000 of $2.0000 (30%)" in text
