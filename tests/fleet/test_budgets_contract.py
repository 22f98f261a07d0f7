"""The budgets ledger's contract on both backends: `$HERMES_HOME/llm-usage.db`, or the shared
database `state.url` names. Through the public API (a plugin's `ctx.llm` against the scripted
server, `spending_as`, `hermes plugins usage --json`), the same tests run on each: one call
reserves on every holder it has (its plugin, its caller, the fleet) or on none, a refusal names
the holder, the cap and the window, and is counted; a running call's reservation is shown and
settles to what the call used; a call whose cost is unknown reserves `budgets.unpriced_cost`; a
ledger out of reach refuses (`budgets.on_store_error: closed`) or lets through (`open`); a killed
process's reservation expires after its time limit and `budgets.reservation_ttl`."""

from __future__ import annotations

import datetime as dt
import json
import re
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from hermes_core import PluginLlmBudgetError, spending_as
from hermes_core.testing import Reply, ScriptedServer
from tests.helpers import hermes, llm_config, plugin_ctx

# a 35-token prompt (budget.prompt_tokens: 14 + 62 chars / 3)
HI = [{"role": "user", "content": "hi, please answer in one short word: is the sky blue or green?"}]
PRICED = "  pricing:\n    scripted-model: {input: 1000, output: 1000}\n"  # $0.001 a token


@pytest.fixture(params=["sqlite", "postgresql", "postgresql+redis"])
def url(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str | None:
    """None (SQLite under the home) or a fresh PostgreSQL database's URL, as HERMES_STATE_URL; with
    Redis's hot counters over it (a redis-server of the test's own, as HERMES_REDIS_URL) too."""
    monkeypatch.delenv("HERMES_REDIS_URL", raising=False)
    if request.param == "sqlite":
        monkeypatch.delenv("HERMES_STATE_URL", raising=False)
        return None
    found = str(request.getfixturevalue("pg_url"))
    monkeypatch.setenv("HERMES_STATE_URL", found)
    if request.param.endswith("+redis"):
        monkeypatch.setenv("HERMES_REDIS_URL", request.getfixturevalue("redis_server").url)
    return found


@pytest.fixture(autouse=True)
def clock(monkeypatch: pytest.MonkeyPatch) -> float:
    moment = dt.datetime.fromisoformat("2026-11-25T10:00:00+00:00").timestamp()
    monkeypatch.setenv("HERMES_LLM_BUDGET_NOW", str(moment))
    return moment


def used(tokens: int, **fields: Any) -> Reply:
    return Reply("ok", usage={"prompt_tokens": tokens // 2, "completion_tokens": tokens - tokens // 2,
                              "total_tokens": tokens}, **fields)


def usage(*args: str) -> dict[str, dict[str, Any]]:
    return {row["plugin"]: row for row in json.loads(hermes("plugins", "usage", "--json", *args).stdout)}


BUDGETS = ("plugins:\n  entries:\n    probe:\n      llm_budget: {tokens_per_day: 1000}\n"
           "budgets:\n  fleet: {tokens_per_day: 1500}\n  caller: {tokens_per_day: 400}\n")


def test_a_call_reserves_on_every_holder_or_on_none(home: Path, llm_server: ScriptedServer, url: str | None) -> None:
    llm_config(home, llm_server.url, PRICED + BUDGETS)
    llm = plugin_ctx(home).llm
    llm_server.push(used(300), used(100))
    with spending_as(caller="api_server:alice"):
        llm.complete(HI, max_tokens=65)  # reserves 100 on probe, alice and the fleet; settles to 300
        llm.complete(HI, max_tokens=65)  # alice's 400 are spent
        with pytest.raises(PluginLlmBudgetError) as refused:
            llm.complete(HI, max_tokens=65)
    error = refused.value
    assert (error.plugin_id, error.budget, error.used, error.limit) == ("caller:api_server:alice", "tokens_per_day",
                                                                        400, 400)
    assert str(error) == ("caller 'api_server:alice' is at their LLM budget tokens_per_day (budgets.caller."
                          "tokens_per_day): used 400 tokens of 400 tokens today, 0 tokens left, and this call may take "
                          "up to 100 tokens; it resets at 2026-11-26T00:00:00+00:00")
    llm_server.push(used(500))
    with spending_as(caller="api_server:bob"):
        llm.complete(HI, max_tokens=265)  # bob has his own 400; probe is at 900 then
        with pytest.raises(PluginLlmBudgetError, match=r"^plugin 'probe' is at its LLM budget tokens_per_day "):
            llm.complete(HI, max_tokens=165)  # 200 more would pass probe's 1,000 (not bob's 400, nor the fleet)
    other = plugin_ctx(home, "other").llm  # no budget of its own: the fleet's holds it
    llm_server.push(used(500))
    other.complete(HI, max_tokens=465)
    with pytest.raises(PluginLlmBudgetError, match=r"^the fleet \(every call together\) is at its LLM budget "
                                                   r"tokens_per_day \(budgets.fleet.tokens_per_day\): used 1,400"):
        other.complete(HI, max_tokens=165)
    assert len(llm_server.requests) == 4  # no refused call sent anything
    rows = usage()
    assert {name: (row["tokens"], row["requests"], row["refusals"]) for name, row in rows.items()} == {
        "probe": (900, 3, 1), "other": (500, 1, 0), "fleet": (1400, 4, 1),
        "caller:api_server:alice": (400, 2, 1), "caller:api_server:bob": (500, 1, 0)}
    assert rows["fleet"]["budgets"] == {"tokens_per_day": {"limit": 1500, "used": 1400, "left": 100}}
    assert rows["probe"]["store"] == ("sqlite" if url is None else "postgresql")


def test_a_running_call_shows_its_reservation_which_settles_to_what_it_used(
        home: Path, llm_server: ScriptedServer, url: str | None) -> None:
    llm_config(home, llm_server.url, PRICED + BUDGETS)
    llm = plugin_ctx(home).llm
    answer = threading.Event()  # the model answers once the test has looked
    llm_server.push(used(40, hold=answer))
    call = threading.Thread(target=llm.complete, args=(HI,), kwargs={"max_tokens": 465})
    call.start()
    try:
        deadline = time.monotonic() + 30
        while not llm_server.requests and time.monotonic() < deadline:
            time.sleep(0.02)
        rows = usage()
        assert rows["probe"]["reserved"] == {"tokens": 500, "cost_usd": 0.5}
        assert rows["fleet"]["reserved"]["tokens"] == 500
        assert rows["probe"]["budgets"]["tokens_per_day"]["used"] == 500  # what is held counts while it runs
    finally:
        answer.set()
        call.join(timeout=30)
    rows = usage()
    assert (rows["probe"]["tokens"], rows["probe"]["reserved"]) == (40, {"tokens": 0, "cost_usd": 0.0})
    assert rows["fleet"]["tokens"] == 40


def test_a_call_whose_cost_is_unknown_reserves_the_configured_ceiling(
        home: Path, llm_server: ScriptedServer, url: str | None) -> None:
    llm_config(home, llm_server.url, "plugins:\n  entries:\n    probe:\n      llm_budget: {cost_per_day: 0.1}\n"
                                     "budgets:\n  unpriced_cost: 0.25\n")  # no model.pricing: no price for the model
    with pytest.raises(PluginLlmBudgetError, match=r"cost_per_day.*used \$0\.0000 of \$0\.1000 today.*may take up to "
                                                   r"\$0\.2500"):
        plugin_ctx(home).llm.complete(HI, max_tokens=10)
    assert llm_server.requests == []
    (home / "config.yaml").write_text((home / "config.yaml").read_text().replace("0.25", "0.050"))  # another size: a new config
    answer = threading.Event()  # the model answers once the test has looked
    llm_server.push(used(100, hold=answer))
    llm = plugin_ctx(home).llm
    call = threading.Thread(target=llm.complete, args=(HI,), kwargs={"max_tokens": 10})
    call.start()
    try:
        deadline = time.monotonic() + 30
        while not llm_server.requests and time.monotonic() < deadline:
            time.sleep(0.02)
        assert usage()["probe"]["reserved"]["cost_usd"] == 0.05  # never nothing
    finally:
        answer.set()
        call.join(timeout=30)
    assert usage()["probe"]["reserved"]["cost_usd"] == 0.0


def _out_of_reach(home: Path, url: str | None, monkeypatch: pytest.MonkeyPatch) -> str:
    """Make the ledger unreachable: a SQLite file that is no database, or a database nobody serves."""
    if url is None:
        (home / "llm-usage.db").write_bytes(b"this is not a SQLite database, and is long enough to be read" * 4)
        return str(home / "llm-usage.db")
    monkeypatch.setenv("HERMES_STATE_URL", "postgresql://hermes:s3cret@127.0.0.1:1/gone")
    return "postgresql://hermes:***@127.0.0.1:1/gone"


def test_a_ledger_out_of_reach_refuses_the_call_by_default_naming_it(
        home: Path, llm_server: ScriptedServer, url: str | None, monkeypatch: pytest.MonkeyPatch) -> None:
    llm_config(home, llm_server.url, PRICED + BUDGETS)
    where = _out_of_reach(home, url, monkeypatch)
    with pytest.raises(PluginLlmBudgetError) as refused:
        plugin_ctx(home).llm.complete(HI, max_tokens=65)
    assert refused.value.budget == "on_store_error" and llm_server.requests == []
    text = str(refused.value)
    assert text.startswith(f"the LLM usage ledger ({where}) cannot be reached, so the LLM call of plugin 'probe' "
                           "is refused (budgets.on_store_error is closed: set it to open")
    assert "\n" not in text and "s3cret" not in text


def test_with_on_store_error_open_a_call_goes_through_while_the_ledger_is_out_of_reach(
        home: Path, llm_server: ScriptedServer, url: str | None, monkeypatch: pytest.MonkeyPatch) -> None:
    llm_config(home, llm_server.url, PRICED + BUDGETS.replace("budgets:\n", "budgets:\n  on_store_error: open\n"))
    _out_of_reach(home, url, monkeypatch)
    llm_server.push(used(100))
    assert plugin_ctx(home).llm.complete(HI, max_tokens=65).text == "ok"


def test_calls_let_through_while_the_database_was_down_are_counted_when_it_is_back(
        home: Path, llm_server: ScriptedServer, pg_url: str, pg_cluster: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HERMES_STATE_URL", pg_url)
    llm_config(home, llm_server.url, PRICED + BUDGETS.replace("budgets:\n", "budgets:\n  on_store_error: open\n"))
    llm = plugin_ctx(home).llm
    llm_server.push(used(100), used(200), used(300))
    llm.complete(HI, max_tokens=65)  # the tables made, 100 counted
    pg_cluster.stop()
    try:
        assert llm.complete(HI, max_tokens=65).text == "ok"  # let through, and its 200 kept for later
    finally:
        pg_cluster.start()
    llm.complete(HI, max_tokens=65)  # the next write records the 200 first
    rows = usage()
    assert (rows["probe"]["tokens"], rows["probe"]["requests"]) == (600, 3)
    assert rows["fleet"]["tokens"] == 600


KILLED = """
from hermes_core import PluginManager
manager = PluginManager(discover_plugins=False).load()
ctx = manager.add_plugin(lambda ctx: ctx.register_command("probe", lambda raw: raw), "probe").ctx
ctx.llm.complete([{"role": "user", "content": "hi, please answer in one short word: is the sky blue or green?"}], max_tokens=665)
"""


def test_a_killed_host_leaves_reservations_that_expire_after_the_reservation_ttl(
        home: Path, llm_server: ScriptedServer, url: str | None, clock: float, monkeypatch: pytest.MonkeyPatch) -> None:
    llm_config(home, llm_server.url, PRICED + BUDGETS.replace("budgets:\n", "budgets:\n  reservation_ttl: 5\n")
               + "auxiliary:\n  plugin_llm: {timeout: 3}\n")
    llm_server.push(Reply("late", delay=60))
    process = subprocess.Popen([sys.executable, "-c", KILLED])  # reserves 700 on probe and the fleet, then waits
    try:
        deadline = time.monotonic() + 60
        while not llm_server.requests and time.monotonic() < deadline:
            time.sleep(0.05)
        assert llm_server.requests, "the call was never sent"
    finally:
        process.kill()  # kill -9
        process.wait(timeout=30)
    rows = usage()
    assert rows["probe"]["reserved"]["tokens"] == 700 and rows["fleet"]["reserved"]["tokens"] == 700
    llm = plugin_ctx(home).llm
    with pytest.raises(PluginLlmBudgetError, match="used 700 tokens"):
        llm.complete(HI, max_tokens=465)  # the dead call's 700 are still held (waited for, 3 s)
    monkeypatch.setenv("HERMES_LLM_BUDGET_NOW", str(clock + 3 + 5 + 0.5))  # its time limit and the ttl later
    assert usage()["probe"]["reserved"]["tokens"] == 0
    llm_server.push(used(500))
    assert llm.complete(HI, max_tokens=465).text == "ok"


def test_state_migrate_adds_a_homes_spend_to_the_shared_ledger_once(
        home: Path, llm_server: ScriptedServer, pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HERMES_STATE_URL", raising=False)
    llm_config(home, llm_server.url, PRICED + BUDGETS)
    llm_server.push(used(300), used(100))
    llm = plugin_ctx(home).llm
    llm.complete(HI, max_tokens=65)
    llm.complete(HI, max_tokens=65)
    assert re.search(r"^budget_totals +4 added", hermes("state", "migrate", "--to", pg_url).stdout, re.M)
    assert "budget_totals" not in hermes("state", "migrate", "--to", pg_url).stdout  # a second run adds nothing
    monkeypatch.setenv("HERMES_STATE_URL", pg_url)
    rows = usage()
    assert (rows["probe"]["tokens"], rows["probe"]["requests"], rows["fleet"]["tokens"]) == (400, 2, 400)
    status = json.loads(hermes("state", "status", "--json").stdout)
    assert {"stage": "budgets", "version": 3, "known": 3, "state": "current"} in status["stages"]
