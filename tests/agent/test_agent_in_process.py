"""The reference agent embedded in a host's own process (`hermes_core.agent.Agent` on a
`PluginManager`), against the scripted server: a plugin's callbacks hear each hook the agent
fires, at its moment, in this process (what `tests/agent/test_agent_hooks.py` checks through the
`hermes` command line, argument by argument)."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from hermes_core import PluginManager
from hermes_core.agent import FIRED_HOOKS, Agent
from hermes_core.testing import ScriptedServer, tool_call
from tests.helpers import llm_config, make_folder_plugin

LISTENER = """
import os, signal
HEARD = []

def _listen(name):
    def heard(**kwargs):
        HEARD.append(name)
    return heard

def interrupt(args, **kwargs):
    os.kill(os.getpid(), signal.SIGINT)  # the user's Ctrl-C, while the tool runs
    import time
    time.sleep(10)
    return "never"

def register(ctx):
    for name in HOOKS:
        ctx.register_hook(name, _listen(name))
    ctx.register_tool("lookup", "demo", {"name": "lookup", "parameters": {"type": "object"}},
                      lambda args, **kw: '{"found": 1}')
    ctx.register_tool("interrupt", "demo", {"name": "interrupt", "parameters": {"type": "object"}}, interrupt)
    ctx.register_command("ping", lambda raw: "pong")
"""


def listening(home: Path, url: str, extra: str = "") -> PluginManager:
    make_folder_plugin(home / "plugins", "listener", f"HOOKS = {sorted(FIRED_HOOKS)!r}\n" + LISTENER,
                       "name: listener\n")
    llm_config(home, url, extra + "plugins:\n  enabled: [listener]\n")
    return PluginManager()


def heard(manager: PluginManager) -> list[str]:
    return list(manager.record("listener").module.HEARD)


@pytest.mark.fires("on_session_start", "pre_llm_call", "pre_api_request", "api_request_error",
                   "transform_api_error_classification", "post_api_request", "on_stream_start", "on_stream_delta",
                   "on_stream_end", "on_interim_message", "pre_tool_call", "post_tool_call", "transform_tool_result",
                   "transform_llm_output", "post_llm_call", "on_session_end", "on_session_finalize")
def test_a_turn_with_a_failover_and_a_tool_call_fires_the_hooks_at_their_moments(
        home: Path, llm_server: ScriptedServer) -> None:
    fallback = f"  fallback:\n    - {{provider: custom, model: backup-model, base_url: '{llm_server.url_for('b')}'}}\n"
    manager = listening(home, llm_server.url_for("main"), fallback)
    llm_server.fail(503, "overloaded")
    llm_server.reply("Let me look that up.", tool_calls=[tool_call("lookup", {}, call_id="c1")])
    llm_server.reply("Found it.")
    with Agent(manager) as agent:
        assert agent.ask("find it").text == "Found it."
        turn = [name for name in heard(manager) if not name.startswith("on_stream_")]  # those come on their own worker
    assert turn[:3] == ["on_session_start", "pre_llm_call", "pre_api_request"]
    assert turn.index("api_request_error") < turn.index("post_api_request")  # the main route failed, the backup answered
    assert turn.index("on_interim_message") < turn.index("pre_tool_call") < turn.index("post_tool_call")
    assert turn[-3:] == ["transform_llm_output", "post_llm_call", "on_session_end"]  # the answer is known, the turn ends
    after = heard(manager)  # closing the session delivered what was queued
    assert {"on_stream_start", "on_stream_delta", "on_stream_end"} <= set(after)  # a plugin listens: the answer streams
    assert [name for name in after if not name.startswith("on_stream_")][-1] == "on_session_finalize"  # the session closed


@pytest.mark.fires("pre_command", "on_session_finalize", "on_session_reset", "on_session_start")
def test_slash_commands_and_a_reset_fire_pre_command_and_the_session_boundary(
        home: Path, llm_server: ScriptedServer) -> None:
    manager = listening(home, llm_server.url)
    with Agent(manager) as agent:
        assert agent.command("/ping") == "pong"
        assert agent.command("/reset") == "conversation cleared"
        assert heard(manager) == ["on_session_start", "pre_command", "pre_command", "on_session_finalize",
                                  "on_session_reset", "on_session_start"]


@pytest.mark.fires("agent_loop_stopped", "on_session_end")
def test_ctrl_c_during_a_turn_fires_agent_loop_stopped_and_the_session_goes_on(
        home: Path, llm_server: ScriptedServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(signal, "getsignal", signal.getsignal)  # restored whatever the test changes below
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)  # as a terminal's process starts
    try:
        manager = listening(home, llm_server.url)
        llm_server.reply(None, tool_calls=[tool_call("interrupt", {}, call_id="c1")])
        llm_server.reply("Here now.")
        with Agent(manager) as agent:
            with pytest.raises(KeyboardInterrupt):
                agent.ask("a slow question")
            turn = [name for name in heard(manager) if not name.startswith("on_stream_")]  # on their own worker
            assert turn[-2:] == ["agent_loop_stopped", "on_session_end"]
            assert agent.ask("again").text == "Here now."  # the interrupted turn left a valid conversation
    finally:
        signal.signal(signal.SIGINT, previous)
    assert os.getpid()  # still here: the Ctrl-C ended the turn, not the process
