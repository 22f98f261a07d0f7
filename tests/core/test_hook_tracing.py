"""Hook tracing: with `HERMES_TRACE_HOOKS` set (or `hermes --debug`), every hook callback call is
one line on stderr naming the hook, the plugin, the callback, its duration and how it ended;
without it, no line. Durations are parsed, never compared."""

from __future__ import annotations

import asyncio
import re
import threading
from pathlib import Path

import pytest

from hermes_core import HookRunner, LifecycleHooks
from tests.helpers import hermes, make_folder_plugin, write_config

LINE = re.compile(r"^hermes: hook (\S+) plugin=(\S+) callback=(\S+) (\d+\.\d\d) ms (ok|blocked|raised \w+|timed out)$")

GUARD = """
import json

SCHEMA = {"name": "echo", "parameters": {"type": "object", "properties": {"text": {"type": "string"}}}}


class Guard:
    def check(self, tool_name, args):
        if tool_name == "secret":
            return {"action": "block", "message": "secrets stay secret"}
        return None


def explode(tool_name):
    raise RuntimeError("audit log unavailable")


def count(tool_name, status):
    return None


def register(ctx):
    ctx.register_tool("echo", "t", SCHEMA, lambda args, **kw: json.dumps(args))
    ctx.register_tool("secret", "t", {**SCHEMA, "name": "secret"}, lambda args, **kw: "the secret")
    ctx.register_hook("pre_tool_call", Guard().check)
    ctx.register_hook("post_tool_call", explode)
    ctx.register_hook("post_tool_call", count)
"""


def traced(stderr: str) -> list[tuple[str, str, str, str]]:
    """The trace lines of `stderr` as (hook, plugin, callback, outcome); any other line that
    starts like one fails the test."""
    lines = []
    for text in stderr.splitlines():
        if text.startswith("hermes: hook "):
            match = LINE.match(text)
            assert match, f"a trace line that does not parse: {text!r}"
            hook, plugin, callback, _ms, outcome = match.groups()
            lines.append((hook, plugin, callback, outcome))
    return lines


ECHO_LINES = [
    ("pre_tool_call", "guard", "Guard.check", "ok"),
    ("post_tool_call", "guard", "explode", "raised RuntimeError"),
    ("post_tool_call", "guard", "count", "ok"),
]
SECRET_LINES = [
    ("pre_tool_call", "guard", "Guard.check", "blocked"),
    ("post_tool_call", "guard", "explode", "raised RuntimeError"),
    ("post_tool_call", "guard", "count", "ok"),
]


@pytest.fixture
def guard(home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder plugin `guard`: a `pre_tool_call` that blocks the tool `secret`, a
    `post_tool_call` that raises and one that is fine; tracing off unless a test turns it on."""
    monkeypatch.delenv("HERMES_TRACE_HOOKS", raising=False)
    make_folder_plugin(home / "plugins", "guard", GUARD, "name: guard\n")
    write_config(home, "plugins:\n  enabled: [guard]\n")
    return home


def test_hermes_trace_hooks_writes_one_line_per_callback_call_and_leaves_stdout_alone(
    guard: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plain_echo = hermes("tools", "call", "echo", '{"text": "hi"}')
    plain_secret = hermes("tools", "call", "secret", '{"text": "hi"}', check=1)
    monkeypatch.setenv("HERMES_TRACE_HOOKS", "1")
    echo = hermes("tools", "call", "echo", '{"text": "hi"}')
    secret = hermes("tools", "call", "secret", '{"text": "hi"}', check=1)
    assert traced(echo.stderr) == ECHO_LINES
    assert traced(secret.stderr) == SECRET_LINES
    assert (echo.stdout, secret.stdout) == (plain_echo.stdout, plain_secret.stdout)
    assert secret.stdout.strip() == "secrets stay secret"


def test_hermes_debug_traces_hook_calls_too(guard: Path) -> None:
    plain = hermes("tools", "call", "secret", '{"text": "hi"}', check=1)
    debug = hermes("--debug", "tools", "call", "secret", '{"text": "hi"}', check=1)
    assert traced(debug.stderr) == SECRET_LINES
    assert debug.stdout == plain.stdout


@pytest.mark.parametrize("value", [None, "", "0"])
def test_without_the_variable_no_trace_line_appears(guard: Path, monkeypatch: pytest.MonkeyPatch,
                                                     value: str | None) -> None:
    if value is not None:
        monkeypatch.setenv("HERMES_TRACE_HOOKS", value)
    result = hermes("tools", "call", "secret", '{"text": "hi"}', check=1)
    assert result.stdout.strip() == "secrets stay secret"
    assert "hermes: hook " not in result.stderr
    assert "audit log unavailable" in result.stderr  # the failure is still logged, as always


@pytest.mark.fires("on_session_reset")
def test_a_callback_abandoned_at_its_time_limit_is_traced_as_timed_out(capfd: pytest.CaptureFixture[str]) -> None:
    runner = HookRunner(lambda: 0.2, trace=True)
    release = threading.Event()

    def slow() -> None:
        release.wait(30)

    def fine(session_id: str) -> None:
        pass

    runner.add("on_session_reset", slow, "sleepy")
    runner.add("on_session_reset", fine, "fine")
    try:
        LifecycleHooks(runner).on_session_reset(session_id="r", platform="cli", reason="new_session").run()
    finally:
        release.set()
    assert traced(capfd.readouterr().err) == [
        ("on_session_reset", "sleepy", slow.__qualname__, "timed out"),
        ("on_session_reset", "fine", fine.__qualname__, "ok"),
    ]


@pytest.mark.fires("on_session_end", "pre_tool_call")
def test_the_async_driver_traces_each_callback_call(capfd: pytest.CaptureFixture[str]) -> None:
    runner = HookRunner(lambda: 0.2, trace=True)
    hooks = LifecycleHooks(runner)

    async def hang() -> None:
        await asyncio.sleep(30)

    async def boom() -> None:
        raise ValueError("no")

    async def fine(session_id: str) -> None:
        await asyncio.sleep(0)

    async def guard(tool_name: str) -> dict[str, str]:
        return {"action": "block", "message": f"not {tool_name}"}

    def never() -> None:
        raise AssertionError("a block ends the chain")

    runner.add("on_session_end", hang, "hang")
    runner.add("on_session_end", boom, "boom")
    runner.add("on_session_end", fine, "fine")
    runner.add("pre_tool_call", guard, "guard")
    runner.add("pre_tool_call", never, "later")

    async def turn() -> bool:
        await hooks.on_session_end(session_id="s", task_id="t", turn_id="s:t:1", completed=True, failed=False,
                                   interrupted=False, turn_exit_reason="text_response", model="m",
                                   platform="cli").arun()
        decision = await hooks.pre_tool_call(tool_name="terminal", args={}, task_id="t", session_id="s",
                                             tool_call_id="c1", turn_id="s:t:1", api_request_id="a1").arun()
        return decision.blocked

    assert asyncio.run(turn())
    assert traced(capfd.readouterr().err) == [
        ("on_session_end", "hang", hang.__qualname__, "timed out"),
        ("on_session_end", "boom", boom.__qualname__, "raised ValueError"),
        ("on_session_end", "fine", fine.__qualname__, "ok"),
        ("pre_tool_call", "guard", guard.__qualname__, "blocked"),
    ]


@pytest.mark.fires("transform_tool_result")
def test_an_answer_that_ends_a_chain_is_ok_and_a_host_callback_has_no_plugin(capfd: pytest.CaptureFixture[str]) -> None:
    runner = HookRunner(lambda: 0, trace=True)

    def shout(result: str) -> str:
        return result.upper()

    runner.add("transform_tool_result", shout)
    runner.add("transform_tool_result", lambda result: "never asked", "later")
    assert LifecycleHooks(runner).transform_tool_result(
        tool_name="echo", args={}, result="hi", task_id="t", session_id="s", tool_call_id="c1", turn_id="s:t:1",
        api_request_id="a1", duration_ms=1, status="ok", error_type=None, error_message=None).run() == "HI"
    assert traced(capfd.readouterr().err) == [("transform_tool_result", "-", shout.__qualname__, "ok")]


@pytest.mark.fires("on_session_reset")
def test_the_variable_is_read_when_the_runner_is_made_and_the_argument_overrides_it(
    monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    def reset(runner: HookRunner) -> None:
        runner.add("on_session_reset", lambda: None, "p")
        LifecycleHooks(runner).on_session_reset(session_id="r", platform="cli", reason="new_session").run()

    monkeypatch.setenv("HERMES_TRACE_HOOKS", "yes")
    on, off = HookRunner(lambda: 0), HookRunner(lambda: 0, trace=False)
    monkeypatch.delenv("HERMES_TRACE_HOOKS")
    reset(off)
    assert traced(capfd.readouterr().err) == []
    reset(on)
    assert [line[:2] for line in traced(capfd.readouterr().err)] == [("on_session_reset", "p")]
