"""Lifecycle hooks: order, argument filtering, isolation, time limits, pre_tool_call policy."""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
from pathlib import Path

import pytest

from hermes_core import HookRunner, LifecycleHooks, PluginManager
from tests.helpers import make_folder_plugin, write_config


@pytest.fixture
def runner() -> HookRunner:
    return HookRunner(lambda: 1.0)


def session_start(runner: HookRunner, session_id: str = "s") -> None:
    LifecycleHooks(runner).on_session_start(session_id=session_id, model="m", platform="cli").run()


def session_end(runner: HookRunner) -> None:
    LifecycleHooks(runner).on_session_end(session_id="s", task_id="t", turn_id="s:t:1", completed=True, failed=False,
                                          interrupted=False, turn_exit_reason="text_response", model="m",
                                          platform="cli").run()


def session_reset(runner: HookRunner) -> None:
    LifecycleHooks(runner).on_session_reset(session_id="r", platform="cli", reason="new_session").run()


def pre_llm_call(runner: HookRunner) -> str | None:
    return LifecycleHooks(runner).pre_llm_call(session_id="s", task_id="t", turn_id="s:t:1", user_message="hi",
                                               conversation_history=[], is_first_turn=True, model="m",
                                               platform="cli").run()


def test_callbacks_run_in_registration_order_with_only_their_arguments(runner) -> None:
    seen = []
    runner.add("on_session_start", lambda session_id: seen.append(("a", session_id)), "p1")
    runner.add("on_session_start", lambda model, session_id: seen.append(("b", model, session_id)), "p2")
    runner.add("on_session_start", lambda **kw: seen.append(("c", sorted(kw))), "p3")
    runner.add("on_session_start", lambda: seen.append(("d",)), "p4")
    session_start(runner)
    assert seen == [("a", "s"), ("b", "m", "s"),
                    ("c", ["model", "platform", "session_id", "telemetry_schema_version"]), ("d",)]


def test_an_exception_is_logged_with_the_plugin_id_and_the_next_callback_runs(runner, caplog) -> None:
    seen = []
    runner.add("on_session_end", lambda: 1 / 0, "faulty")
    runner.add("on_session_end", lambda session_id: seen.append(session_id), "fine")
    with caplog.at_level(logging.ERROR):
        session_end(runner)
    assert seen == ["s"]
    assert any("plugin 'faulty'" in r.getMessage() and "ZeroDivisionError" in r.getMessage() for r in caplog.records)


def test_slow_sync_and_async_callbacks_are_cut_off_at_the_time_limit() -> None:
    runner = HookRunner(lambda: 0.2)
    release = threading.Event()
    seen = []

    async def slow_async():
        await asyncio.sleep(30)

    runner.add("on_session_reset", lambda: release.wait(30), "slow-sync")
    runner.add("on_session_reset", slow_async, "slow-async")
    runner.add("on_session_reset", lambda session_id: seen.append(session_id), "fast")
    started = time.monotonic()
    session_reset(runner)
    assert time.monotonic() - started < 10
    assert seen == ["r"]
    release.set()


def test_zero_timeout_means_no_limit_and_runs_inline() -> None:
    runner = HookRunner(lambda: 0)
    threads = []
    runner.add("on_session_reset", lambda: threads.append(threading.current_thread()), "p")
    session_reset(runner)
    assert threads == [threading.current_thread()]


def test_async_callbacks_are_awaited_from_sync_and_async_callers(runner) -> None:
    seen = []

    async def cb(session_id):
        await asyncio.sleep(0)
        seen.append(session_id)
        return session_id.upper()

    runner.add("on_session_start", cb, "p")
    session_start(runner, "sync")
    asyncio.run(LifecycleHooks(runner).on_session_start(session_id="async", model="m", platform="cli").arun())
    assert seen == ["sync", "async"]


def test_the_async_driver_isolates_and_times_out_too() -> None:
    runner = HookRunner(lambda: 0.2)
    seen = []

    async def hang():
        await asyncio.sleep(30)

    runner.add("on_session_end", hang, "hang")
    runner.add("on_session_end", lambda: 1 / 0, "boom")
    runner.add("on_session_end", lambda session_id: seen.append(session_id), "ok")
    asyncio.run(LifecycleHooks(runner).on_session_end(
        session_id="s", task_id="t", turn_id="s:t:1", completed=True, failed=False, interrupted=False,
        turn_exit_reason="text_response", model="m", platform="cli").arun())
    assert seen == ["s"]


def test_unknown_hook_name_is_a_warning_and_kept(runner, caplog) -> None:
    with caplog.at_level(logging.WARNING):
        runner.add("on_future_event", lambda: "kept", "p")
    assert "unknown hook 'on_future_event'" in caplog.text
    assert [cb.plugin_id for cb in runner.callbacks("on_future_event")] == ["p"]  # for a version that fires it
    assert runner.has("on_future_event") and "on_future_event" in runner.hooks()


def gate(args=None):
    return {"tool_name": "terminal", "args": args or {"command": "ls"}, "task_id": "t", "session_id": "s",
            "tool_call_id": "c", "turn_id": "s:t:1", "api_request_id": "s:t:1:api:1"}


def decide(runner, args=None):
    return LifecycleHooks(runner).pre_tool_call(**gate(args)).run()


def test_pre_tool_call_allows_modifies_and_blocks(runner) -> None:
    assert decide(runner) == decide(runner)  # no callbacks: allowed unchanged
    assert not decide(runner).blocked
    runner.add("pre_tool_call", lambda args: {"action": "modify", "args": {**args, "command": args["command"] + " -la"}}, "m")
    runner.add("pre_tool_call", lambda args: None if "-la" in args["command"] else {"action": "block", "message": "no"}, "c")
    decision = decide(runner)
    assert not decision.blocked and decision.args == {"command": "ls -la"}
    runner.add("pre_tool_call", lambda tool_name: {"action": "block", "message": f"{tool_name} is off limits"}, "b")
    after = []
    runner.add("pre_tool_call", lambda: after.append(1), "later")
    decision = decide(runner)
    assert decision.blocked and decision.message == "terminal is off limits"
    assert after == []  # a block ends the chain


@pytest.mark.parametrize(
    ("callback", "expected"),
    [
        (lambda: time.sleep(5), "timed out"),
        (lambda: "yes please", "invalid decision"),
        (lambda: {"action": "modify", "args": "nope"}, "invalid decision"),
    ],
)
def test_pre_tool_call_fails_closed(callback, expected) -> None:
    runner = HookRunner(lambda: 0.2)
    runner.add("pre_tool_call", callback, "guard")
    decision = decide(runner)
    assert decision.blocked
    assert expected in decision.message and "plugin 'guard'" in decision.message


def test_a_raising_pre_tool_call_blocks_with_hermes_message() -> None:
    def careful(**kwargs):
        raise ValueError("x" * 300)

    runner = HookRunner(lambda: 1.0)
    runner.add("pre_tool_call", careful, "guard")
    decision = decide(runner)
    assert decision.blocked
    assert decision.message == f"pre_tool_call plugin callback {careful.__qualname__} raised ValueError: {'x' * 200}"


@pytest.mark.parametrize("order", ["approve first", "block first"])
def test_block_wins_over_approve_whatever_the_order(order: str) -> None:
    runner = HookRunner(lambda: 1.0)
    approve = lambda **kw: {"action": "approve", "message": "ask a human"}  # noqa: E731
    block = lambda **kw: {"action": "block", "message": "never"}  # noqa: E731
    for plugin_id, callback in ([("a", approve), ("b", block)] if order == "approve first" else
                                [("a", block), ("b", approve)]):
        runner.add("pre_tool_call", callback, plugin_id)
    decision = decide(runner)
    assert (decision.blocked, decision.message) == (True, "never")
    approval_only = HookRunner(lambda: 1.0)
    approval_only.add("pre_tool_call", approve, "a")
    decision = decide(approval_only)
    assert decision.blocked and "requires a human's approval (ask a human)" in decision.message


def test_async_pre_tool_call(runner) -> None:
    async def guard(args):
        return {"action": "block", "message": "async says no"}

    runner.add("pre_tool_call", guard, "g")
    assert decide(runner).message == "async says no"
    decision = asyncio.run(LifecycleHooks(runner).pre_tool_call(**gate({})).arun())
    assert decision.blocked and decision.message == "async says no"


def test_pre_llm_call_context_and_transforms(runner) -> None:
    runner.add("pre_llm_call", lambda: "It is noon.", "clock")
    runner.add("pre_llm_call", lambda: {"context": "User likes tea."}, "memory")
    runner.add("pre_llm_call", lambda: None, "quiet")
    assert pre_llm_call(runner) == "It is noon.\n\nUser likes tea."
    runner.add("transform_llm_output", lambda: None, "a")
    runner.add("transform_llm_output", lambda response_text: response_text.upper(), "b")
    runner.add("transform_llm_output", lambda response_text: "never", "c")
    hooks = LifecycleHooks(runner)
    output = {"response_text": "hi", "session_id": "s", "model": "m", "platform": "cli", "turn_id": "s:t:1"}
    assert hooks.transform_llm_output(**output).run() == "HI"
    assert asyncio.run(hooks.transform_llm_output(**output).arun()) == "HI"
    assert hooks.transform_tool_result(tool_name="t", args={}, result="r", task_id="t", session_id="s",
                                       tool_call_id="c", turn_id="s:t:1", api_request_id="a", duration_ms=1,
                                       status="ok", error_type=None, error_message=None).run() is None


@pytest.mark.fires("pre_tool_call", "post_tool_call", "transform_tool_result")
def test_manager_dispatch_runs_hooks_around_the_tool(home: Path) -> None:
    make_folder_plugin(home / "plugins", "guard", """
import json
LOG = []
def register(ctx):
    ctx.register_tool("echo", "t", {"name": "echo", "parameters": {"type": "object", "properties": {"text": {"type": "string"}}}},
                      lambda args, **kw: json.dumps(args))
    ctx.register_hook("pre_tool_call", lambda tool_name, args: {"action": "block", "message": "blocked!"}
                      if args.get("text") == "secret" else {"action": "modify", "args": {"text": args.get("text", "") + "!"}})
    ctx.register_hook("post_tool_call", lambda **kw: LOG.append(kw))
    ctx.register_hook("transform_tool_result", lambda result: result.replace("!", "?"))
""")
    write_config(home, "plugins:\n  enabled: [guard]\n")
    manager = PluginManager()
    assert json.loads(manager.dispatch_tool("echo", {"text": "hi"}, session_id="s1", tool_call_id="c1")) == {"text": "hi?"}
    assert manager.dispatch_tool("echo", {"text": "secret"}) == "blocked?"  # transforms see blocks too
    assert asyncio.run(manager.adispatch_tool("echo", {"text": "a"})) == '{"text": "a?"}'
    log = manager.record("guard").module.LOG
    duration = log[0].pop("duration_ms")
    assert isinstance(duration, int) and duration >= 0
    assert log[0] == {"tool_name": "echo", "args": {"text": "hi!"}, "result": '{"text": "hi!"}', "session_id": "s1",
                      "tool_call_id": "c1", "task_id": "", "turn_id": "", "api_request_id": "", "status": "ok",
                      "error_type": None, "error_message": None, "middleware_trace": [],
                      "telemetry_schema_version": "hermes.observer.v1"}
    assert (log[1]["result"], log[1]["status"], log[1]["error_type"], log[1]["error_message"]) == (
        "blocked!", "blocked", "plugin_block", "blocked!")


def test_hookimpl_and_register_hook_share_one_policy(home: Path) -> None:
    make_folder_plugin(home / "plugins", "both", """
from hermes_core import hookimpl
SEEN = []
@hookimpl
def on_session_start(session_id):
    raise RuntimeError("first fails")
def register(ctx):
    ctx.register_hook("on_session_start", lambda session_id: SEEN.append(session_id))
""")
    write_config(home, "plugins:\n  enabled: [both]\n  hook_callback_timeout: 5\n")
    manager = PluginManager()
    manager.lifecycle.on_session_start(session_id="x", model="m", platform="p").run()
    assert manager.record("both").module.SEEN == ["x"]


def test_hookimpl_lifecycle_hooks_get_filtered_arguments(home: Path) -> None:
    make_folder_plugin(home / "plugins", "metrics", """
from hermes_core import hookimpl
SEEN = []
@hookimpl
def post_llm_call(assistant_response, model, telemetry_schema_version):
    SEEN.append((assistant_response, model, telemetry_schema_version))
""")
    write_config(home, "plugins:\n  enabled: [metrics]\n")
    manager = PluginManager()
    manager.lifecycle.post_llm_call(session_id="s", task_id="t", turn_id="s:t:1", user_message="hi",
                                    assistant_response="hello", conversation_history=[], model="m",
                                    platform="cli").run()
    assert manager.record("metrics").module.SEEN == [("hello", "m", "hermes.observer.v1")]


def test_the_time_limit_comes_from_config(home: Path) -> None:
    make_folder_plugin(home / "plugins", "sleepy", """
import time
def register(ctx):
    ctx.register_hook("pre_tool_call", lambda: time.sleep(3))
    ctx.register_tool("noop", "t", {"name": "noop"}, lambda args, **kw: "ran")
""")
    write_config(home, "plugins:\n  enabled: [sleepy]\n  hook_callback_timeout: 0.2\n")
    started = time.monotonic()
    result = PluginManager().dispatch_tool("noop", {})
    assert time.monotonic() - started < 2.5
    assert "timed out" in result and "plugin 'sleepy'" in result


def test_what_a_callback_declares_is_read_once_at_registration(runner) -> None:
    import inspect

    seen = []

    def narrow(session_id="-", /, model="", *, platform="?"):  # positional-only parameters get nothing
        seen.append(("narrow", session_id, model, platform))

    def wide(**kwargs):
        seen.append(("wide", sorted(kwargs)))

    runner.add("on_session_start", narrow, "n")
    runner.add("on_session_start", wide, "w")
    wide.__signature__ = inspect.signature(lambda model: None)  # a later change is not looked at again
    session_start(runner)
    assert seen == [("narrow", "-", "m", "cli"), ("wide", ["model", "platform", "session_id",
                                                           "telemetry_schema_version"])]


def test_a_callback_that_requires_what_the_hook_never_passes_is_named_once(runner, caplog) -> None:
    with caplog.at_level(logging.WARNING):
        runner.add("pre_llm_call", lambda user_message, messages: None, "old-style")
    warning = caplog.text
    assert "requires messages, which the hook never passes" in warning and "conversation_history" in warning
    caplog.clear()
    with caplog.at_level(logging.ERROR):
        for _ in range(3):
            pre_llm_call(runner)
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1 and "plugin 'old-style'" in errors[0].getMessage()
    assert "the pre_llm_call hook passes: session_id, task_id" in errors[0].getMessage()


def test_pre_tool_call_modify_merges_and_approve_refuses_without_an_approval_prompt(runner) -> None:
    runner.add("pre_tool_call", lambda args: {"action": "modify", "args": {"timeout": 5}}, "limits")
    decision = decide(runner, {"command": "ls"})
    assert not decision.blocked and decision.args == {"command": "ls", "timeout": 5}  # merged, as Hermes does
    runner.add("pre_tool_call", lambda: {"action": "approve", "message": "deletes files"}, "careful")
    decision = decide(runner)
    assert decision.blocked and "deletes files" in decision.message and "no one here can give it" in decision.message


def test_transform_llm_output_passes_over_an_empty_string(home: Path) -> None:
    manager = PluginManager(discover_plugins=False)
    manager.add_plugin(lambda ctx: [ctx.register_hook("transform_llm_output", lambda: ""),
                                    ctx.register_hook("transform_llm_output", lambda response_text: response_text[::-1])],
                       "p")
    changed = manager.lifecycle.transform_llm_output(response_text="abc", session_id="s", model="m", platform="cli",
                                                     turn_id="s:t:1").run()
    assert changed == "cba"


@pytest.mark.fires("transform_api_error_classification")
def test_an_error_classification_every_callback_runs_and_the_first_valid_reason_wins(runner, caplog) -> None:
    ran = []
    runner.add("transform_api_error_classification", lambda: ran.append("a") or {"reason": "nonsense"}, "a")
    runner.add("transform_api_error_classification", lambda status_code: ran.append("b") or {
        "reason": "billing", "should_fallback": 1, "message": "x" * 900}, "b")
    runner.add("transform_api_error_classification", lambda: ran.append("c") or {"reason": "rate_limit"}, "c")
    with caplog.at_level(logging.WARNING):
        verdict = LifecycleHooks(runner).transform_api_error_classification(
            provider="custom", model="m", status_code=400, error_type="BadRequestError", error_code=None,
            error_message="quota", error_body={}, error=ValueError("quota"), approx_tokens=10, context_length=100,
            num_messages=2).run()
    assert ran == ["a", "b", "c"]
    assert verdict == {"reason": "billing", "should_fallback": True, "message": "x" * 500}
    assert "no valid reason" in caplog.text and "also classified the error" in caplog.text


def test_a_host_declares_the_hooks_it_fires_and_doctor_names_the_others(home: Path) -> None:
    manager = PluginManager(discover_plugins=False)
    manager.add_plugin(lambda ctx: [ctx.register_hook("pre_llm_call", print),
                                    ctx.register_hook("transform_terminal_output", print),
                                    ctx.register_hook("on_something_new", print)], "p")
    assert manager.fired_hooks is None
    assert manager.doctor().plugins[0]["unfired_hooks"] is None  # the host did not say
    manager.declare_fired_hooks("pre_llm_call")
    manager.declare_fired_hooks("post_llm_call")
    assert manager.fired_hooks == {"pre_llm_call", "post_llm_call"}
    assert manager.doctor().plugins[0]["unfired_hooks"] == ["transform_terminal_output", "on_something_new"]
    with pytest.raises(ValueError, match="not lifecycle hooks: pre_llm"):
        manager.declare_fired_hooks("pre_llm")


def test_an_unknown_hook_name_close_to_a_known_one_is_pointed_at_it(runner, caplog) -> None:
    with caplog.at_level(logging.WARNING):
        runner.add("post_api_requests", print, "p")
    assert "unknown hook 'post_api_requests'" in caplog.text and "did you mean 'post_api_request'?" in caplog.text
    assert [cb.plugin_id for cb in runner.callbacks("post_api_requests")] == ["p"]  # kept all the same
