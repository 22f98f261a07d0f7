"""Budgets with Redis's hot counters (`HERMES_REDIS_URL`) over the ledger, on both of the ledger's
backends, against a redis-server the test starts: the cap holds and the ledger has every call; a
Redis restarted empty, counters above the truth, or Redis out of reach never refuse a call that
fits, nor let one past the cap; the counters come back to the ledger's figures within seconds; a
call counted in Redis is written to the ledger once however often it settles; and a call cut off
by its caller keeps only its prompt's part of its reservation (with and without Redis)."""

from __future__ import annotations

import asyncio
import datetime as dt
import importlib
import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from hermes_core import PluginLlmBudgetError
from hermes_core.testing import Reply, ScriptedServer
from tests.helpers import hermes, llm_config, plugin_ctx
from tests.helpers.redis import RedisServer

# a 35-token prompt (budget.prompt_tokens: 14 + 62 chars / 3)
HI = [{"role": "user", "content": "hi, please answer in one short word: is the sky blue or green?"}]
CAP, USED = 1000, 80
BUDGET = f"plugins:\n  entries:\n    probe:\n      llm_budget: {{tokens_per_day: {CAP}}}\n"
DAY = "2026-11-25"


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str | None:
    if request.param == "sqlite":
        monkeypatch.delenv("HERMES_STATE_URL", raising=False)
        return None
    found = str(request.getfixturevalue("pg_url"))
    monkeypatch.setenv("HERMES_STATE_URL", found)
    return found


@pytest.fixture(autouse=True)
def clock(monkeypatch: pytest.MonkeyPatch) -> float:
    moment = dt.datetime.fromisoformat(f"{DAY}T10:00:00+00:00").timestamp()
    monkeypatch.setenv("HERMES_LLM_BUDGET_NOW", str(moment))
    return moment


@pytest.fixture
def redis(redis_server: RedisServer, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The test's redis-server, named by HERMES_REDIS_URL, and a client to look into it."""
    import redis as redis_py

    monkeypatch.setenv("HERMES_REDIS_URL", redis_server.url)
    client = redis_py.Redis.from_url(redis_server.url)
    yield client
    client.close()


def usage() -> dict[str, dict[str, Any]]:
    return {row["plugin"]: row for row in json.loads(hermes("plugins", "usage", "--json").stdout)}


def counted(client: Any, who: str = "probe") -> float:
    """What Redis's counters say `who` settled today (0 when they are not loaded), once the calls that
    ended are written to the ledger and settled in Redis (on the counters' thread, after the call)."""
    try:
        deadline = time.monotonic() + 5
        while client.hlen(f"hermes:budgets:{who}:calls") and time.monotonic() < deadline:
            time.sleep(0.01)
        return float(client.hget(f"hermes:budgets:{who}:{DAY}", "t") or 0)
    except Exception:  # noqa: BLE001 - Redis is down
        return -1.0


def spend_until_refused(llm: Any, limit: int = 100) -> tuple[int, PluginLlmBudgetError]:
    for done in range(limit):
        try:
            llm.complete(HI, max_tokens=65)
        except PluginLlmBudgetError as exc:
            return done, exc
    raise AssertionError("never refused")


def test_the_cap_holds_on_the_counters_and_the_ledger_has_every_call(
        home: Path, llm_server: ScriptedServer, url: str | None, redis: Any) -> None:
    llm_config(home, llm_server.url, BUDGET)
    llm_server.always(Reply("ok", usage={"prompt_tokens": 30, "completion_tokens": USED - 30, "total_tokens": USED}))
    done, refusal = spend_until_refused(plugin_ctx(home).llm)
    assert done == 12 and done * USED > CAP - 100  # refused once no call of 100 fits
    assert str(refusal).startswith("plugin 'probe' is at its LLM budget tokens_per_day "
                                   "(plugins.entries.probe.llm_budget.tokens_per_day): used 960 tokens of 1,000")
    assert counted(redis) == 960  # the counters did the checking
    row = usage()["probe"]
    assert (row["tokens"], row["requests"], row["refusals"]) == (960, 12, 1)


def test_redis_restarted_empty_rebuilds_its_counters_from_the_ledger(
        home: Path, llm_server: ScriptedServer, url: str | None, redis: Any, redis_server: RedisServer) -> None:
    llm_config(home, llm_server.url, BUDGET)
    llm_server.always(Reply("ok", usage={"prompt_tokens": 30, "completion_tokens": USED - 30, "total_tokens": USED}))
    llm = plugin_ctx(home).llm
    for _ in range(6):
        llm.complete(HI, max_tokens=65)
    redis_server.restart()  # every counter and reservation gone
    done, _ = spend_until_refused(llm)
    assert done == 6  # not 12 more: the counters started from the ledger's 480 (or the ledger decided)
    assert usage()["probe"]["tokens"] == 960
    time.sleep(1.1)  # Redis is tried again a second after it could not be reached, if it was not
    with pytest.raises(PluginLlmBudgetError):
        llm.complete(HI, max_tokens=65)
    assert counted(redis) == 960


def test_counters_above_the_truth_never_refuse_a_call(
        home: Path, llm_server: ScriptedServer, url: str | None, redis: Any) -> None:
    llm_config(home, llm_server.url, BUDGET)
    llm_server.always(Reply("ok", usage={"prompt_tokens": 30, "completion_tokens": USED - 30, "total_tokens": USED}))
    llm = plugin_ctx(home).llm
    llm.complete(HI, max_tokens=65)
    redis.hset(f"hermes:budgets:probe:{DAY}", "t", 5000)  # drifted far above the ledger's 80
    llm.complete(HI, max_tokens=65)  # checked against the ledger before refusing: it fits
    assert counted(redis) == 160 and usage()["probe"]["tokens"] == 160


def test_redis_out_of_reach_leaves_the_ledger_to_decide_and_the_counters_catch_up(
        home: Path, llm_server: ScriptedServer, url: str | None, redis: Any, redis_server: RedisServer) -> None:
    llm_config(home, llm_server.url, BUDGET)
    llm_server.always(Reply("ok", usage={"prompt_tokens": 30, "completion_tokens": USED - 30, "total_tokens": USED}))
    llm = plugin_ctx(home).llm
    for _ in range(3):
        llm.complete(HI, max_tokens=65)
    redis_server.stop()
    for _ in range(3):  # through the ledger's own reservations
        llm.complete(HI, max_tokens=65)
    assert usage()["probe"]["tokens"] == 480
    redis_server.start()  # empty
    deadline = time.monotonic() + 5
    while True:  # Redis is tried again within a second, and its counters are rebuilt then
        try:
            llm.complete(HI, max_tokens=65)
        except PluginLlmBudgetError:
            break
        if counted(redis) == usage()["probe"]["tokens"] or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert time.monotonic() <= deadline
    done, _ = spend_until_refused(llm)
    assert counted(redis) == usage()["probe"]["tokens"] == 960


def test_a_call_counted_in_redis_is_written_to_the_ledger_once_however_often_it_settles(
        home: Path, url: str | None, redis_server: RedisServer) -> None:
    ledger_module = importlib.import_module("hermes_core._llm.ledger")
    counters_module = importlib.import_module("hermes_core._llm.counters")
    budget_module = importlib.import_module("hermes_core._llm.budget")
    ledger = ledger_module.Ledger(home, url=url)
    counters = counters_module.Counters(redis_server.url, ledger)
    budgets = [budget_module.Budget("probe", "plugins.llm_budget", tokens_per_day=CAP),
               budget_module.Budget("fleet", "budgets.fleet", cost_per_day=1.0)]
    try:
        reservation = counters.reserve(budgets, 100, 0.1, 60.0)
        assert reservation.counted
        for _ in range(3):
            counters.hand_over(reservation, 70, 0.04)
        assert counters.flush()
        for budget in budgets:
            figures = ledger.spent(budget.who, "UTC", "day")
            assert (figures["tokens"], round(figures["cost"], 9), figures["requests"]) == (70, 0.04, 1)
        assert counters.rebuild(budgets[0], ("2026-11-25", "2026-11") + ("", "")) is False  # they agree
    finally:
        counters.close()
        ledger.close()


def test_a_reservation_run_twice_by_a_client_retrying_after_a_timeout_holds_once(
        home: Path, redis: Any, redis_server: RedisServer) -> None:
    counters_module = importlib.import_module("hermes_core._llm.counters")
    budget = importlib.import_module("hermes_core._llm.budget").Budget("probe", "plugins.llm_budget", tokens_per_day=CAP)
    ledger = importlib.import_module("hermes_core._llm.ledger").Ledger(home)
    counters = counters_module.Counters(redis_server.url, ledger)
    script = redis.register_script(importlib.import_module("hermes_core._llm.scripts").RESERVE)
    try:
        steps = counters._reserving([budget], 100, 0.0, 60.0)  # the reservation's steps, as both callers drive them
        counters.rebuild(*next(steps))  # its counters loaded from the (empty) ledger
        args = next(steps)
        assert script(args=args) == script(args=args) == [b"ok"]  # its first answer lost, as to a timeout
        assert float(redis.hget(f"hermes:budgets:probe:{DAY}", "ht")) == 100  # held once, not twice
        with pytest.raises(StopIteration) as done:
            steps.send([b"ok"])
        counters.hand_over(done.value.value, 80, 0.0)
        assert counters.flush()
        assert counted(redis) == 80 and float(redis.hget(f"hermes:budgets:probe:{DAY}", "ht")) == 0
    finally:
        counters.close()
        ledger.close()


def test_redis_going_away_passes_the_cap_by_at_most_what_the_calls_it_held_use(
        home: Path, llm_server: ScriptedServer, url: str | None, redis: Any, redis_server: RedisServer) -> None:
    llm_config(home, llm_server.url, "plugins:\n  entries:\n    probe:\n      llm_budget: {tokens_per_day: 200}\n")
    answered: list[Any] = []

    def answer(body: Any) -> Reply:  # the first call takes 3 s, the rest answer at once
        answered.append(body)
        return Reply("ok", usage={"prompt_tokens": 30, "completion_tokens": USED - 30, "total_tokens": USED},
                     delay=3.0 if len(answered) == 1 else 0.0)

    llm_server.answer(answer)
    llm = plugin_ctx(home).llm
    held = threading.Thread(target=llm.complete, args=(HI,), kwargs={"max_tokens": 65})
    held.start()  # reserves 100 in Redis
    deadline = time.monotonic() + 20
    while not answered and time.monotonic() < deadline:
        time.sleep(0.02)
    redis_server.stop()  # the ledger takes over, and does not see what Redis held
    done, _ = spend_until_refused(llm)
    held.join()
    spent = usage()["probe"]["tokens"]
    assert done == 2 and spent == 3 * USED  # 240 of a 200 cap: the gap the docs name
    assert spent <= 200 + USED  # by at most what the call Redis held used


def test_a_bad_redis_url_is_one_line_saying_what_to_write(
        home: Path, llm_server: ScriptedServer, monkeypatch: pytest.MonkeyPatch) -> None:
    llm_config(home, llm_server.url, BUDGET)
    monkeypatch.setenv("HERMES_REDIS_URL", "http://127.0.0.1:6379")
    with pytest.raises(Exception, match=r"^HERMES_REDIS_URL must be a redis:// URL \(got 'http://127.0.0.1:6379'\)"):
        plugin_ctx(home).llm.complete(HI, max_tokens=65)
    monkeypatch.setenv("HERMES_REDIS_URL", "http://:hunter2@127.0.0.1:6379")  # a password only, as Redis has
    with pytest.raises(Exception, match=r"\(got 'http://\[REDACTED\]@127.0.0.1:6379'\)") as raised:
        plugin_ctx(home).llm.complete(HI, max_tokens=65)
    assert "hunter2" not in str(raised.value)


@pytest.mark.parametrize("with_redis", [False, True], ids=["ledger", "redis"])
def test_a_call_cut_off_by_its_caller_keeps_only_its_prompt(
        home: Path, llm_server: ScriptedServer, url: str | None, redis_server: RedisServer, with_redis: bool,
        monkeypatch: pytest.MonkeyPatch) -> None:
    if with_redis:
        monkeypatch.setenv("HERMES_REDIS_URL", redis_server.url)
    llm_config(home, llm_server.url, BUDGET)
    llm_server.always(Reply("ok", usage={"prompt_tokens": 30, "completion_tokens": 50, "total_tokens": 80},
                            delay=30))
    llm = plugin_ctx(home).llm

    async def cut_off() -> None:
        task = asyncio.ensure_future(llm.acomplete(HI, max_tokens=65))
        deadline = time.monotonic() + 20
        while not llm_server.requests and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        assert llm_server.requests  # the request is out: the model has read the prompt
        await asyncio.sleep(0.1)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(cut_off())
    row = usage()["probe"]
    # the prompt's 35 tokens (its bound) are kept, not the 100 reserved, nor nothing
    assert (row["tokens"], row["requests"], row["reserved"]["tokens"]) == (35, 1, 0)


def test_usage_shows_what_running_calls_hold_in_redis(
        home: Path, llm_server: ScriptedServer, url: str | None, redis: Any) -> None:
    llm_config(home, llm_server.url, BUDGET)
    answer = threading.Event()  # the model answers once the test has looked
    llm_server.always(Reply("ok", usage={"prompt_tokens": 30, "completion_tokens": USED - 30, "total_tokens": USED},
                            hold=answer))
    llm = plugin_ctx(home).llm
    call = threading.Thread(target=llm.complete, args=(HI,), kwargs={"max_tokens": 65})
    call.start()
    try:
        deadline = time.monotonic() + 20
        while not llm_server.requests and time.monotonic() < deadline:
            time.sleep(0.02)
        row = usage()["probe"]
        assert (row["tokens"], row["reserved"]["tokens"]) == (100, 100)  # reserved on Redis's counters
    finally:
        answer.set()
        call.join()
    counted(redis)
    row = usage()["probe"]
    assert (row["tokens"], row["requests"], row["reserved"]["tokens"]) == (USED, 1, 0)


def test_without_a_redis_url_redis_py_is_never_imported(
        home: Path, llm_server: ScriptedServer, monkeypatch: pytest.MonkeyPatch) -> None:
    import subprocess
    import sys

    monkeypatch.delenv("HERMES_REDIS_URL", raising=False)
    llm_config(home, llm_server.url, BUDGET)
    llm_server.always(Reply("ok", usage={"prompt_tokens": 30, "completion_tokens": USED - 30, "total_tokens": USED}))
    script = ("import sys\nfrom hermes_core import PluginManager\n"
              "manager = PluginManager(discover_plugins=False).load()\n"
              "llm = manager.add_plugin(lambda ctx: None, 'probe').ctx.llm\n"
              "llm.complete([{'role': 'user', 'content': 'hi'}], max_tokens=65)\n"
              "print('redis' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == "False", done.stderr[-2000:]
    assert usage()["probe"]["tokens"] == USED  # the ledger alone counted it


def test_a_rebuild_that_reads_the_ledger_while_a_call_settles_counts_that_call(
        home: Path, url: str | None, redis: Any, redis_server: RedisServer) -> None:
    """A call reserved after a rebuild read the calls Redis holds, written to the ledger after the rebuild
    read it, and settled in Redis before the rebuild set the counters: neither read has it, so the counters
    it sets would leave it out (and let that much more through) unless the rebuild reads again."""
    counters_module = importlib.import_module("hermes_core._llm.counters")
    budget = importlib.import_module("hermes_core._llm.budget").Budget("probe", "plugins.llm_budget", tokens_per_day=CAP)
    ledger = importlib.import_module("hermes_core._llm.ledger").Ledger(home, url=url)
    rebuilding, other = counters_module.Counters(redis_server.url, ledger), counters_module.Counters(redis_server.url, ledger)
    periods = (DAY, DAY[:7], "", "")
    read_ledger, slipped_in = rebuilding._truth, []

    def truth_then_a_call_settles(*args: Any) -> Any:
        found = read_ledger(*args)
        if not slipped_in:  # once: the call comes and goes between the ledger's read and the counters' update
            reservation = other.reserve([budget], 100, 0.0, 60.0)
            other.hand_over(reservation, USED, 0.0)
            assert other.flush()
            slipped_in.append(reservation)
        return found

    try:
        rebuilding.rebuild(budget, periods)  # loaded from the empty ledger
        rebuilding._truth = truth_then_a_call_settles
        rebuilding.rebuild(budget, periods)
        assert slipped_in and ledger.spent("probe", "UTC", "day")["tokens"] == USED
        assert counted(redis) == USED  # the counters have it, as the ledger does
    finally:
        rebuilding.close()
        other.close()
        ledger.close()


@pytest.mark.parametrize("caller", ["sync", "async"])
def test_a_redis_that_does_not_answer_is_waited_for_not_taken_for_gone(
        home: Path, llm_server: ScriptedServer, redis: Any, redis_server: RedisServer, caller: str) -> None:
    """A Redis that answers nothing for 12 seconds (a machine under load, a Redis stopped) is asked again,
    and the call waits for it: on the ledger alone, which does not see what the calls Redis holds have
    reserved, every call let through could pass the cap by all they hold. (Before, one timeout of 1 s
    and a retry sent the call on the ledger alone.)"""
    llm_config(home, llm_server.url, BUDGET)
    llm_server.always(Reply("ok", usage={"prompt_tokens": 30, "completion_tokens": USED - 30, "total_tokens": USED}))
    llm = plugin_ctx(home).llm
    got: list[Any] = []
    ask = (lambda: got.append(llm.complete(HI, max_tokens=65).text)) if caller == "sync" else (
        lambda: got.append(asyncio.run(llm.acomplete(HI, max_tokens=65)).text))
    with redis_server.paused():
        asking = threading.Thread(target=ask)
        asking.start()
        time.sleep(12)
        assert llm_server.requests == [] and not got  # still waiting for Redis
    asking.join(timeout=60)
    assert got == ["ok"] and len(llm_server.requests) == 1
    assert counted(redis) == USED and usage()["probe"]["tokens"] == USED


@pytest.mark.parametrize("on_store_error", ["closed", "open"])
def test_a_redis_silent_past_the_calls_time_limit_refuses_it_or_lets_the_ledger_decide(
        home: Path, llm_server: ScriptedServer, redis: Any, redis_server: RedisServer, on_store_error: str) -> None:
    llm_config(home, llm_server.url, BUDGET + f"budgets:\n  on_store_error: {on_store_error}\n"
                                              "auxiliary:\n  plugin_llm: {timeout: 2}\n")
    llm_server.always(Reply("ok", usage={"prompt_tokens": 30, "completion_tokens": USED - 30, "total_tokens": USED}))
    llm = plugin_ctx(home).llm
    with redis_server.paused():
        if on_store_error == "open":  # let through, on the ledger's own reservation, and counted there
            assert llm.complete(HI, max_tokens=65).text == "ok"
        else:
            with pytest.raises(PluginLlmBudgetError) as refused:
                llm.complete(HI, max_tokens=65)
            assert refused.value.budget == "on_store_error" and llm_server.requests == []
            assert str(refused.value).startswith(f"the LLM call of plugin 'probe' is refused: Redis "
                                                 f"(redis://127.0.0.1:{redis_server.port}/0) did not answer for 10 s")
    assert usage()["probe"]["tokens"] == (USED if on_store_error == "open" else 0)


def test_two_rebuilds_at_once_never_lose_a_call_one_of_them_took_off(
        home: Path, url: str | None, redis: Any, redis_server: RedisServer) -> None:
    """Host A's rebuild reads the ledger before a call is written there; host B's, after, takes the call
    off what Redis holds (its ledger read has it); the call's own settlement then finds nothing to move.
    A's rebuild must still count the call: B remembers it as settled, as a settlement would have."""
    counters_module = importlib.import_module("hermes_core._llm.counters")
    budget = importlib.import_module("hermes_core._llm.budget").Budget("probe", "plugins.llm_budget", tokens_per_day=CAP)
    ledger = importlib.import_module("hermes_core._llm.ledger").Ledger(home, url=url)
    a, b, calling = (counters_module.Counters(redis_server.url, ledger) for _ in range(3))
    periods = (DAY, DAY[:7], "", "")
    try:
        a.rebuild(budget, periods)  # loaded from the empty ledger
        reservation = calling.reserve([budget], 100, 0.0, 60.0)
        confirm, read_ledger = calling._confirm, a._truth

        def b_rebuilds_first(*args: Any, **kwargs: Any) -> Any:  # between the call's ledger write and its settling
            b.rebuild(budget, periods)
            return confirm(*args, **kwargs)

        def the_call_settles_after(*args: Any) -> Any:  # after A read the ledger
            found = read_ledger(*args)
            if a._truth is the_call_settles_after:
                a._truth = read_ledger
                calling.hand_over(reservation, USED, 0.0)
                assert calling.flush()
            return found

        calling._confirm, a._truth = b_rebuilds_first, the_call_settles_after
        a.rebuild(budget, periods)
        assert ledger.spent("probe", "UTC", "day")["tokens"] == USED
        assert counted(redis) == USED  # the counters have it, as the ledger does
    finally:
        for counters in (a, b, calling):
            counters.close()
        ledger.close()
