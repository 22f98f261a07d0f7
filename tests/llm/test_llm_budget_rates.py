"""LLM budgets beyond amounts, through the public API and the CLI against the scripted server:
request rates and concurrency (waiting for room, or refused), the host's own `model.budget`
(`hermes run` and `hermes chat`), the `on_budget_check` hook, two processes sharing one ledger,
doctor's warning, and a property: whatever calls are made and whatever they use, the recorded
total never passes a cap."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hermes_core import LlmConfigError, PluginLlmBudgetError, PluginLlmError, PluginManager
from hermes_core.testing import Fault, Reply, ScriptedServer
from tests.helpers import hermes, llm_config, plugin_ctx

# a 35-token prompt (budget.prompt_tokens: 14 + 62 chars / 3)
HI = [{"role": "user", "content": "hi, please answer in one short word: is the sky blue or green?"}]


def budget(home: Path, url: str, section: str, extra: str = "") -> None:
    llm_config(home, url, f"  pricing:\n    scripted-model: {{input: 1000, output: 1000}}\n{extra}plugins:\n{section}")


def used(tokens: int, **fields: Any) -> Reply:
    return Reply("ok", usage={"prompt_tokens": tokens // 2, "completion_tokens": tokens - tokens // 2,
                              "total_tokens": tokens}, **fields)


def test_requests_per_minute_refused_then_room_a_minute_later(home: Path, llm_server: ScriptedServer,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    start = 1_790_000_000.0
    monkeypatch.setenv("HERMES_LLM_BUDGET_NOW", str(start))
    budget(home, llm_server.url,
           "  entries:\n    probe:\n      llm_budget: {requests_per_minute: 2, on_limit: refuse}\n")
    llm_server.always(used(10))
    llm = plugin_ctx(home).llm
    llm.complete(HI, max_tokens=10)
    monkeypatch.setenv("HERMES_LLM_BUDGET_NOW", str(start + 30))
    llm.complete(HI, max_tokens=10)
    with pytest.raises(PluginLlmBudgetError) as refused:
        llm.complete(HI, max_tokens=10)
    assert len(llm_server.requests) == 2
    error = refused.value
    assert (error.plugin_id, error.budget, error.used, error.limit) == ("probe", "requests_per_minute", 2, 2)
    assert str(error).startswith("plugin 'probe' is at its LLM budget requests_per_minute (plugins.entries.probe."
                                 "llm_budget.requests_per_minute): used 2 requests of 2 requests in the last minute; "
                                 "plugins.entries.probe.llm_budget.on_limit is refuse; room comes back at ")
    assert error.resets == "2026-09-21T14:14:20+00:00"  # the first request's minute ends
    monkeypatch.setenv("HERMES_LLM_BUDGET_NOW", str(start + 60.5))  # the first request left the window
    llm.complete(HI, max_tokens=10)
    with pytest.raises(PluginLlmBudgetError, match="requests_per_minute"):
        llm.complete(HI, max_tokens=10)
    assert len(llm_server.requests) == 3


def test_requests_per_minute_waits_for_room_within_the_calls_time_limit(home: Path, llm_server: ScriptedServer,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    budget(home, llm_server.url, "  entries:\n    probe:\n      llm_budget: {requests_per_minute: 2}\n",
           "auxiliary:\n  plugin_llm: {timeout: 5}\n")
    llm_server.always(used(10))
    llm = plugin_ctx(home).llm
    first = time.time() - 59.5  # two requests made 59.5 s ago: room comes back in half a second
    monkeypatch.setenv("HERMES_LLM_BUDGET_NOW", str(first))
    llm.complete(HI, max_tokens=10)
    llm.complete(HI, max_tokens=10)
    monkeypatch.delenv("HERMES_LLM_BUDGET_NOW")
    assert llm.complete(HI, max_tokens=10).text == "ok"  # on_limit defaults to wait
    assert time.time() >= first + 60  # not sent before the first request's minute was over
    llm.complete(HI, max_tokens=10)  # the minute now holds these two
    with pytest.raises(PluginLlmBudgetError) as refused:  # room in about a minute, the time limit is 5 s
        llm.complete(HI, max_tokens=10)
    assert "no room came within the call's time limit" in str(refused.value)
    assert len(llm_server.requests) == 4


def test_max_concurrent_waits_for_a_running_call_or_refuses(home: Path, llm_server: ScriptedServer) -> None:
    budget(home, llm_server.url, "  entries:\n    probe:\n      llm_budget: {max_concurrent: 2}\n")
    llm_server.always(used(10, delay=0.3))
    llm = plugin_ctx(home).llm

    async def burst(n: int) -> list[Any]:
        return await asyncio.gather(*(llm.acomplete(HI, max_tokens=10) for _ in range(n)), return_exceptions=True)

    assert [r.text for r in asyncio.run(burst(6))] == ["ok"] * 6
    arrived = sorted(request.received_at for request in llm_server.requests)
    # never more than two at once: each request arrived after one of the two before it was answered
    assert all(arrived[i] >= arrived[i - 2] + 0.3 for i in range(2, 6)), arrived
    budget(home, llm_server.url, "  entries:\n    probe:\n      llm_budget: {max_concurrent: 1, on_limit: refuse}\n")
    results = asyncio.run(burst(3))
    refused = [r for r in results if isinstance(r, PluginLlmBudgetError)]
    assert len(refused) == 2 and all(r.budget == "max_concurrent" for r in refused)
    assert "room comes back when one of them ends" in str(refused[0]) and len(llm_server.requests) == 7
    (row,) = json.loads(hermes("plugins", "usage", "--json").stdout)
    assert row["requests"] == 7 and row["rates"] == {"max_concurrent": {"limit": 1, "used": 0}, "on_limit": "refuse"}
    assert "max_concurrent 0 of 1 now" in hermes("plugins", "usage").stdout


def test_a_budget_key_of_the_wrong_type_is_one_line_naming_it(home: Path, llm_server: ScriptedServer) -> None:
    budget(home, llm_server.url,
           "  entries:\n    probe:\n      llm_budget: {requests_per_minute: 5, on_limit: later}\n")
    with pytest.raises(LlmConfigError) as wrong:
        plugin_ctx(home).llm.complete(HI, max_tokens=10)
    assert "plugins.entries.probe.llm_budget.on_limit" in str(wrong.value) and "wait or refuse" in str(wrong.value)
    assert len(str(wrong.value).splitlines()) == 1 and llm_server.requests == []


def test_the_hosts_model_budget_ends_run_with_one_line_and_chat_keeps_the_session(
        home: Path, llm_server: ScriptedServer) -> None:
    # the built-in tools' schemas are part of each reservation: fewer of them, room for two runs
    llm_config(home, llm_server.url, "  budget: {tokens_per_day: 12000}\nplugins:\n  disabled: [cron, skills, todo]\n")
    llm_server.always(used(5000))
    hermes("run", "hello")  # reserves its prompt and 4,096 for the answer, settles to 5,000
    hermes("run", "hello again")  # 10,000 used
    result = hermes("run", "and again", check=1)
    line = result.stderr.strip().splitlines()[-1]  # after the "thinking" the display shows
    assert line.startswith("hermes: error: the host's own calls are at their LLM budget tokens_per_day "
                           "(model.budget.tokens_per_day): used 10,000 tokens of 12,000 tokens today")
    assert "session" in line and "kept" in line and len(llm_server.requests) == 2
    chat = hermes("chat", input="one more\n/help\n/exit\n")
    assert "model.budget.tokens_per_day" in chat.stderr and "/compress" in chat.stdout  # the chat went on
    rows = {row["plugin"]: row for row in json.loads(hermes("plugins", "usage", "--json").stdout)}
    assert rows["host"]["tokens"] == 10000 and rows["host"]["requests"] == 2
    assert rows["host"]["budgets"] == {"tokens_per_day": {"limit": 12000, "used": 10000, "left": 2000}}
    doctor = hermes("plugins", "doctor", "--json", check=None).stdout
    assert "the host's own calls have used 83% of the LLM budget model.budget.tokens_per_day" in doctor


def _manager(home: Path, policy: Any) -> tuple[PluginManager, Any, Any]:
    """A manager with plugin `probe` and plugin `policy`, which implements `on_budget_check`."""
    manager = PluginManager(home=home, discover_plugins=False).load()
    probe = manager.add_plugin(lambda ctx: ctx.register_command("probe", lambda raw: raw), "probe")
    guard = manager.add_plugin(lambda ctx: ctx.register_hook("on_budget_check", policy), "policy")
    assert probe.status == guard.status == "ok", (probe.failure, guard.failure)
    return manager, probe.ctx, guard.ctx


@pytest.mark.fires("on_budget_check")
def test_the_budget_hook_can_refuse_what_the_numbers_allow_and_never_allow_what_they_refuse(
        home: Path, llm_server: ScriptedServer) -> None:
    seen: list[dict[str, Any]] = []

    def policy(plugin_id: str, budget: dict[str, Any], used: dict[str, float], requested: dict[str, float],
               **rest: Any) -> Any:
        seen.append({"plugin_id": plugin_id, "budget": budget, "used": used, "requested": requested})
        if used["requests_per_minute"] >= 1:
            return {"action": "block", "message": "one call a minute is enough for probe"}
        return {"action": "allow"}

    budget(home, llm_server.url, "  entries:\n    probe:\n      llm_budget: {tokens_per_day: 1000}\n")
    llm_server.always(used(400))
    manager, probe, guard = _manager(home, policy)
    try:
        probe.llm.complete(HI, max_tokens=65)
        with pytest.raises(PluginLlmBudgetError) as blocked:
            probe.llm.complete(HI, max_tokens=65)
        assert blocked.value.budget == "on_budget_check" and len(llm_server.requests) == 1
        assert str(blocked.value) == ("plugin 'probe''s LLM call was refused by a budget policy (on_budget_check): "
                                      "one call a minute is enough for probe")
        assert seen[0] == {"plugin_id": "probe", "budget": {"tokens_per_day": 1000, "timezone": "UTC",
                                                            "on_limit": "wait"},
                           "used": {"tokens_per_day": 0, "cost_per_day": 0, "cost_per_month": 0,
                                    "requests_per_minute": 0, "max_concurrent": 0},
                           "requested": {"tokens": 100, "cost": pytest.approx(0.1)}}
        assert seen[1]["used"]["tokens_per_day"] == 400
        guard.llm.complete(HI, max_tokens=65)  # the policy's own call: not asked about, no budget
        assert len(seen) == 2 and len(llm_server.requests) == 2
    finally:
        manager.close()
    seen.clear()
    budget(home, llm_server.url, "  entries:\n    probe:\n      llm_budget: {tokens_per_day: 500}\n")
    manager, probe, _ = _manager(home, lambda **kwargs: {"action": "allow"})
    try:
        with pytest.raises(PluginLlmBudgetError, match="tokens_per_day"):  # 400 used, 100 more would pass 500
            probe.llm.complete(HI, max_tokens=200)
    finally:
        manager.close()


TWO_PROCESSES = """
import asyncio, json, sys
from hermes_core import LlmConfigError, PluginLlmBudgetError, PluginLlmError, PluginManager
manager = PluginManager(discover_plugins=False).load()
llm = manager.add_plugin(lambda ctx: ctx.register_command("probe", lambda raw: raw), "probe").ctx.llm
async def burst():
    prompt = [{"role": "user", "content": "hi, please answer in one short word: is the sky blue or green?"}]
    return await asyncio.gather(*(llm.acomplete(prompt, max_tokens=965)
                                  for _ in range(50)), return_exceptions=True)
results = asyncio.run(burst())
print(json.dumps({"ok": sum(not isinstance(r, BaseException) for r in results),
                  "refused": sum(isinstance(r, PluginLlmBudgetError) for r in results),
                  "other": [repr(r) for r in results if isinstance(r, BaseException)
                            and not isinstance(r, PluginLlmBudgetError)]}))
"""


def test_two_processes_share_one_budget(home: Path, llm_server: ScriptedServer) -> None:
    budget(home, llm_server.url, "  entries:\n    probe:\n      llm_budget: {tokens_per_day: 10000}\n")
    llm_server.always(used(1000, delay=0.05))  # each call reserves 1,000 and uses it: ten fit
    processes = [subprocess.Popen([sys.executable, "-c", TWO_PROCESSES], stdout=subprocess.PIPE, text=True)
                 for _ in range(2)]
    counts = [json.loads(process.communicate(timeout=120)[0]) for process in processes]
    assert [c["other"] for c in counts] == [[], []]
    assert sum(c["ok"] for c in counts) == 10 and sum(c["refused"] for c in counts) == 90
    assert len(llm_server.requests) == 10
    (row,) = json.loads(hermes("plugins", "usage", "probe", "--json").stdout)
    assert row["tokens"] == 10000 and row["requests"] == 10


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(calls=st.lists(st.tuples(st.integers(1, 400), st.floats(0, 1), st.booleans()), min_size=1, max_size=8),
       cap=st.integers(100, 1500))
def test_the_recorded_total_never_passes_the_cap(llm_server: ScriptedServer, calls: list[tuple[int, float, bool]],
                                                 cap: int) -> None:
    """Whatever each call asks for, whatever share of it the server reports using (never more than the
    call could: its prompt and its max_tokens), and whichever calls fail: the ledger, as the
    `on_budget_check` hook reads it before each call and after the last, stays within the cap."""
    totals: list[float] = []
    with tempfile.TemporaryDirectory() as folder:
        home = Path(folder)
        budget(home, llm_server.url, f"  entries:\n    probe:\n      llm_budget: {{tokens_per_day: {cap}}}\n")
        manager, probe, _ = _manager(home, lambda used, **rest: totals.append(used["tokens_per_day"]))
        try:
            for max_tokens, share, fails in [*calls, (1, 0.0, False)]:  # the last call reads the final total
                llm_server.always(Fault("status", 400, b'{"error": {"message": "no"}}') if fails
                                  else used(int((35 + max_tokens) * share)))
                try:
                    probe.llm.complete(HI, max_tokens=max_tokens)
                except PluginLlmError:
                    pass  # refused by the budget, or the scripted failure
        finally:
            manager.close()
    assert len(totals) == len(calls) + 1 and max(totals) <= cap


def test_an_answer_that_fails_its_schema_was_still_paid_for(home: Path, llm_server: ScriptedServer,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HERMES_LLM_BUDGET_NOW", "1790000000")
    budget(home, llm_server.url, "  entries:\n    probe:\n      llm_budget: {tokens_per_day: 100000}\n")
    llm_server.always(Reply('{"colour": 7}', usage={"prompt_tokens": 300, "completion_tokens": 20,
                                                    "total_tokens": 320}))
    schema = {"type": "object", "properties": {"colour": {"type": "string"}}, "required": ["colour"]}
    with pytest.raises(PluginLlmError):
        plugin_ctx(home).llm.complete_structured(instructions="Name a colour.", input=[{"type": "text", "text": "sky"}],
                                                 json_schema=schema, max_tokens=50)
    (row,) = json.loads(hermes("plugins", "usage", "--json").stdout)
    assert row["tokens"] == 320 * len(llm_server.requests) and row["requests"] == len(llm_server.requests) >= 1


def test_cancelled_async_calls_give_back_all_but_their_prompts(home: Path, llm_server: ScriptedServer,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HERMES_LLM_BUDGET_NOW", "1790000000")
    budget(home, llm_server.url, "  entries:\n    probe:\n      llm_budget: {tokens_per_day: 1000}\n")
    answer = threading.Event()  # the model answers only once every call is cancelled
    llm_server.always(used(100, hold=answer))
    llm = plugin_ctx(home).llm

    async def cancelled() -> None:
        calls = [asyncio.ensure_future(llm.acomplete(HI, max_tokens=65)) for _ in range(5)]  # 500 reserved
        while len(llm_server.requests) < 5:
            await asyncio.sleep(0.01)
        for call in calls:
            call.cancel()
        await asyncio.gather(*calls, return_exceptions=True)

    asyncio.run(cancelled())
    answer.set()
    llm_server.always(used(800))
    with pytest.raises(PluginLlmBudgetError, match="used 175 tokens of 1,000"):  # each kept its prompt's 35
        llm.complete(HI, max_tokens=965)
    assert llm.complete(HI, max_tokens=790).text == "ok"  # the rest, 825, was free again
