"""Stopping a running turn from another thread (`Agent.cancel()`, a `hosting.Cancel` handed to
`ask`): the model request is broken off at once, whether streamed or not, while the scripted
server still holds its answer; no attempt is retried; the session stays valid for the next turn."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from hermes_core import PluginManager
from hermes_core.agent import Agent, Display
from hermes_core.hosting import Cancel, Cancelled
from hermes_core.testing import Reply, ScriptedServer, tool_call
from tests.helpers import llm_config, make_folder_plugin


class Watching(Display):
    """A display that streams the answer (as a terminal's does), and keeps what it was shown."""

    def __init__(self) -> None:
        super().__init__(quiet=True)
        self.streams_answers = True
        self.shown: list[str] = []

    def stream_delta(self, text: str) -> None:
        self.shown.append(text)


def in_background(agent: Agent, text: str, **kwargs: Any) -> tuple[threading.Thread, dict[str, Any]]:
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["result"] = agent.ask(text, **kwargs)
        except BaseException as exc:  # noqa: BLE001 - what the turn raised is the outcome
            outcome["raised"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, outcome


def until(condition: Any, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


@pytest.mark.parametrize(("streamed", "framing", "first"), [
    (True, "yes", True), (True, "unframed", True), (True, "yes", False), (False, "yes", False)],
    ids=["streamed", "streamed-closed-at-end", "streamed-before-its-first-byte", "whole"])
def test_a_turn_stopped_mid_request_ends_at_once_and_the_session_goes_on(
        home: Path, llm_server: ScriptedServer, streamed: bool, framing: str, first: bool) -> None:
    llm_server.streams = framing  # unframed: the stream broken off looks as if it had ended
    held = threading.Event()
    if first:  # the model sends a piece, then holds the rest of its answer
        llm_server.push(Reply("one two three", hold=held, hold_after=1))
    else:  # the model takes a minute to answer at all (a stream: to send its first byte)
        llm_server.push(Reply("too late", delay=60))
    llm_config(home, llm_server.url, "plugins:\n  disabled: [memory/builtin]\n")
    display = Watching() if streamed else Display(quiet=True)
    with Agent(PluginManager(), display=display) as agent:
        thread, outcome = in_background(agent, "Tell me a long story.")
        until(lambda: llm_server.requests and (not first or display.shown))  # type: ignore[attr-defined]
        agent.cancel()
        thread.join(30)
        assert not thread.is_alive()  # the turn ended while the model still held its answer
        assert isinstance(outcome.get("raised"), Cancelled), outcome
        assert len(llm_server.requests) == 1  # a request broken off by its turn is not tried again
        held.set()
        llm_server.reply("Here is a short one.")
        assert agent.ask("A short one, then.").text == "Here is a short one."
        assert [m["role"] for m in agent.messages] == ["user", "user", "assistant"]


def test_a_cancel_set_before_the_turn_starts_stops_it_before_any_request(
        home: Path, llm_server: ScriptedServer) -> None:
    llm_config(home, llm_server.url, "plugins:\n  disabled: [memory/builtin]\n")
    cancel = Cancel()
    cancel.set()
    with Agent(PluginManager()) as agent, pytest.raises(Cancelled):
        agent.ask("Never mind.", cancel=cancel)
    assert llm_server.requests == []


ASKER = """
import json

def register(ctx):
    def ask_model(args, **kwargs):
        answer = ctx.llm.complete([{"role": "user", "content": "summarise"}])
        return json.dumps({"summary": answer.text})

    ctx.register_tool("summarise", "asker", {"name": "summarise", "parameters": {"type": "object"}}, ask_model)
"""


def test_a_plugin_waiting_on_its_own_model_call_is_stopped_with_the_turn_not_failed(
        home: Path, llm_server: ScriptedServer) -> None:
    make_folder_plugin(home / "plugins", "asker", ASKER, "name: asker\n")
    llm_config(home, llm_server.url, "plugins:\n  enabled: [asker]\n  disabled: [memory/builtin]\n")
    llm_server.push(Reply("", tool_calls=[tool_call("summarise", {})]), Reply("too late", delay=60))
    with Agent(PluginManager()) as agent:
        thread, outcome = in_background(agent, "Summarise it.")
        until(lambda: len(llm_server.requests) == 2)  # the plugin's own request is being answered
        agent.cancel()
        thread.join(30)
        assert isinstance(outcome.get("raised"), Cancelled), outcome  # long before the model's answer
        # Not the plugin's failure (which would be its tool's error result, sent to the model):
        # the turn ended, and its call has the stub result that keeps the session valid.
        results = [m["content"] for m in agent.messages if m.get("role") == "tool"]
        assert results == ['{"error": "no result: the turn ended before this tool answered, or its result was dropped"}']
        assert len(llm_server.requests) == 2


def test_a_turn_waits_for_its_model_in_its_own_thread_and_a_stop_breaks_that_wait(
        home: Path, llm_server: ScriptedServer) -> None:
    """A model request on the process's own HTTP client (every one but a provider's own client) is
    sent and waited for by the turn's thread itself, no second thread handed the request: a stop
    shuts that connection down, and the turn ends as `Cancelled`, not as a connection error."""
    import sys

    llm_server.push(Reply("too late", delay=60))
    llm_config(home, llm_server.url, "plugins:\n  disabled: [memory/builtin]\n")
    with Agent(PluginManager()) as agent:
        thread, outcome = in_background(agent, "Take your time.")
        until(lambda: llm_server.requests)

        def reads_the_socket() -> bool:
            frame = sys._current_frames().get(thread.ident or 0)
            names = []
            while frame is not None:
                names.append(frame.f_code.co_filename)
                frame = frame.f_back
            return any("httpcore" in name for name in names)

        until(reads_the_socket)  # the turn's own thread is in the HTTP read, not waiting on another thread
        agent.cancel()
        thread.join(30)
        assert not thread.is_alive()
        assert isinstance(outcome.get("raised"), Cancelled), outcome
        assert len(llm_server.requests) == 1
