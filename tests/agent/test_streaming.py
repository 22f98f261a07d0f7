"""Streaming: `hermes run` and `hermes chat` show the answer as it arrives on a terminal (checked
on a pseudo-terminal while the scripted server holds its stream part-way), plain text when the
output is not one; tool calls, results and failures as they happen, usage after the answer; the
`on_stream_*` hooks hear every streamed request; a stream that breaks off falls back."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

from hermes_core import PluginManager
from hermes_core.agent import Agent
from hermes_core.testing import Reply, ScriptedServer, tool_call
from tests.helpers import CTRL_C, Screen, hermes, llm_config, make_folder_plugin
from tests.helpers.streams import heard, stream_recorder


@pytest.fixture
def screens() -> Any:
    opened: list[Screen] = []

    def start(*args: str) -> Screen:
        opened.append(Screen(*args))
        return opened[-1]

    yield start
    for screen in opened:
        screen.close()


def test_the_scripted_server_streams_as_openai_does_through_the_sdk(llm_server: ScriptedServer) -> None:
    import openai

    llm_server.reply("Hello there world", tool_calls=[tool_call("current_time", {"zone": "UTC"}, call_id="c7")],
                     usage={"prompt_tokens": 5, "completion_tokens": 3})
    client = openai.OpenAI(base_url=llm_server.url, api_key="none", max_retries=0)
    chunks = list(client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}],
                                                 stream=True, stream_options={"include_usage": True}))
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "Hello there world" and len([c for c in chunks if c.choices and c.choices[0].delta.content]) == 3
    calls = [t for c in chunks if c.choices for t in c.choices[0].delta.tool_calls or []]
    assert calls[0].id == "c7" and calls[0].function.name == "current_time"
    assert json.loads("".join(t.function.arguments or "" for t in calls)) == {"zone": "UTC"}
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "tool_calls"
    assert chunks[-1].choices == [] and chunks[-1].usage.prompt_tokens == 5


def test_hermes_run_shows_the_answer_as_it_streams_on_a_terminal(home: Path, llm_server: ScriptedServer,
                                                                 screens: Any) -> None:
    llm_config(home, llm_server.url, "  pricing: {scripted-model: {input: 1, output: 2}}\n")
    gate = threading.Event()
    llm_server.reply("Checking.", tool_calls=[tool_call("current_time", {}, call_id="c1")])
    llm_server.push(Reply("", chunks=["The answer ", "is ", "forty-two."], hold=gate, hold_after=2))
    run = screens("run", "what", "is", "it?")
    before = run.expect("The answer is ")  # two pieces are on the screen; the server holds the third
    assert "Checking." in before and "→ current_time" in before and "← current_time:" in before
    assert before.index("Checking.") < before.index("→ current_time") < before.index("← current_time:")
    assert "forty-two." not in run.shown
    gate.set()
    after = run.expect("forty-two.")
    assert after == ""  # the rest of the same line
    screen = run.finish()
    assert run.pid == 0
    tail = screen[screen.index("forty-two."):]
    assert "· tokens:" in tail and "$" in tail  # usage and cost after the answer, once
    assert screen.count("forty-two.") == 1 and screen.count("The answer") == 1
    assert all(r.body["stream"] is True and r.body["stream_options"] == {"include_usage": True}
               for r in llm_server.requests)


def test_output_that_is_not_a_terminal_gets_the_answer_whole_and_nothing_streams(
        home: Path, llm_server: ScriptedServer) -> None:
    llm_config(home, llm_server.url)
    llm_server.reply("Plain answer.")
    result = hermes("run", "hi")
    assert result.stdout == "Plain answer.\n"
    assert "stream" not in llm_server.requests[0].body


def test_a_plugin_listening_to_stream_hooks_hears_every_streamed_request(home: Path,
                                                                         llm_server: ScriptedServer) -> None:
    stream_recorder(home)
    llm_config(home, llm_server.url, "plugins:\n  enabled: [streams]\n")
    llm_server.reply("Let me see.", tool_calls=[tool_call("current_time", {}, call_id="c1")])
    llm_server.reply("Done, it is late.")
    assert hermes("run", "time?").stdout == "Done, it is late.\n"  # stdout a pipe: shown whole, once
    events = heard(home)
    (interim,) = [kwargs for name, kwargs in events if name == "on_interim_message"]
    assert interim["already_streamed"] is True
    stream = [(name, kwargs) for name, kwargs in events if name != "on_interim_message"]
    assert [name for name, _ in stream] == [
        "on_stream_start", *["on_stream_delta"] * 3, "on_stream_end",
        "on_stream_start", *["on_stream_delta"] * 4, "on_stream_end"]
    ends = [kwargs for name, kwargs in stream if name == "on_stream_end"]
    assert [(e["final_text"], e["finished"], e["error"], e["iteration"]) for e in ends] == [
        ("Let me see.", True, None, 1), ("Done, it is late.", True, None, 2)]
    assert {kwargs["provider"] for _, kwargs in stream} == {"custom"}


def test_a_stream_that_breaks_off_is_shown_and_the_fallback_answers(home: Path, llm_server: ScriptedServer,
                                                                    screens: Any) -> None:
    stream_recorder(home)
    backup = llm_server.url_for("backup")
    llm_config(home, llm_server.url, "  fallback:\n    - {provider: custom, model: backup-model, base_url: "
               f"'{backup}'}}\nplugins:\n  enabled: [streams]\n")
    llm_server.push(Reply("This will not make it to the end", cut_after=2))
    llm_server.reply("The backup answers.")
    run = screens("run", "hi")
    run.expect("This will")
    run.expect("✗ the answer broke off (connection failed")
    run.expect("The backup answers.")
    run.finish()
    assert run.pid == 0
    assert [r.path for r in llm_server.requests] == ["/v1/chat/completions", "/backup/v1/chat/completions"]
    ends = [kwargs for name, kwargs in heard(home) if name == "on_stream_end"]
    assert [(e["final_text"], e["finished"], e["model"]) for e in ends] == [
        ("This will", False, "scripted-model"), ("The backup answers.", True, "backup-model")]
    assert "connection failed" in ends[0]["error"]
    stored = json.loads(hermes("sessions", "list", "--json").stdout)[0]
    shown = hermes("sessions", "show", stored["id"]).stdout
    assert "The backup answers." in shown and "This will" not in shown  # the broken piece is not stored


def test_a_server_that_cannot_stream_is_read_whole(home: Path) -> None:
    stream_recorder(home)
    with ScriptedServer(streams="whole") as server:
        llm_config(home, server.url, "plugins:\n  enabled: [streams]\n")
        server.reply("Whole at once.", tool_calls=[tool_call("current_time", {}, call_id="c1")])
        server.reply("Still fine.")
        assert hermes("run", "hi").stdout == "Still fine.\n"
        assert server.requests[0].body["stream"] is True
    ends = [kwargs for name, kwargs in heard(home) if name == "on_stream_end"]
    assert [e["final_text"] for e in ends] == ["Whole at once.", "Still fine."]


def test_a_server_that_ends_a_stream_empty_is_asked_for_whole_answers_from_then_on(home: Path) -> None:
    """llama-cpp-python's server cannot stream a request with tools: its event stream ends empty."""
    stream_recorder(home)
    with ScriptedServer(streams="empty") as server:
        llm_config(home, server.url, "plugins:\n  enabled: [streams]\n")
        server.reply("Checking.", tool_calls=[tool_call("current_time", {}, call_id="c1")])
        server.reply("It is noon.")
        result = hermes("run", "time?")
        assert result.stdout == "It is noon.\n" and "→ current_time" in result.stderr
        assert [r.body.get("stream") for r in server.requests] == [True, None, None]
    assert not [name for name, _ in heard(home) if name.startswith("on_stream_")]
    log = (home / "logs" / "agent.log").read_text(encoding="utf-8").splitlines()
    assert "attempts=2 outcome=ok" in log[-2] and "attempts=1 outcome=ok" in log[-1]


def test_stream_false_asks_that_server_for_whole_answers(home: Path, llm_server: ScriptedServer) -> None:
    stream_recorder(home)
    llm_config(home, llm_server.url, "  stream: false\nplugins:\n  enabled: [streams]\n")
    llm_server.reply("Not streamed.")
    result = hermes("run", "hi")
    assert result.stdout == "Not streamed.\n" and "unknown key" not in result.stderr
    assert "stream" not in llm_server.requests[0].body
    assert not [name for name, _ in heard(home) if name.startswith("on_stream_")]
    llm_config(home, llm_server.url, "  stream: sometimes\n")
    bad = hermes("run", "hi", check=1)
    assert "model.stream must be true or false, not 'sometimes'" in bad.stderr


def test_a_plugin_that_rewrites_the_answer_after_it_streamed_is_shown_what_was_stored(
        home: Path, llm_server: ScriptedServer, screens: Any) -> None:
    make_folder_plugin(home / "plugins", "shouty", "def register(ctx):\n"
                       "    ctx.register_hook('transform_llm_output', lambda response_text: response_text.upper())\n",
                       "name: shouty\n")
    llm_config(home, llm_server.url, "plugins:\n  enabled: [shouty]\n")
    llm_server.reply("quiet words")
    run = screens("run", "hi")
    run.expect("quiet words")
    run.expect("a plugin rewrote the answer (transform_llm_output); as stored:")
    run.expect("QUIET WORDS")
    run.finish()
    assert run.pid == 0


def test_a_stream_hook_that_raises_or_is_slow_does_not_stop_the_answer(home: Path,
                                                                       llm_server: ScriptedServer) -> None:
    make_folder_plugin(home / "plugins", "grumpy", "import time\n"
                       "def delta(delta):\n    time.sleep(0.05)\n    raise RuntimeError('no deltas for me')\n"
                       "def register(ctx):\n    ctx.register_hook('on_stream_delta', delta)\n", "name: grumpy\n")
    llm_config(home, llm_server.url, "plugins:\n  enabled: [grumpy]\n")
    llm_server.reply("one two three four five")
    result = hermes("run", "hi")
    assert result.stdout == "one two three four five\n"
    assert "no deltas for me" in result.stderr


def test_chat_streams_and_ctrl_c_stops_the_answer_and_keeps_the_session(home: Path, llm_server: ScriptedServer,
                                                                        screens: Any) -> None:
    llm_config(home, llm_server.url)
    gate = threading.Event()
    llm_server.push(Reply("", chunks=["Once upon ", "a time ", "there was"], hold=gate, hold_after=2))
    llm_server.reply("Hello again.")
    chat = screens("chat")
    chat.expect("you> ")
    chat.type("tell me a story\r")
    chat.expect("Once upon a time ")
    chat.type(CTRL_C)
    chat.expect("(interrupted; the session is kept)")
    gate.set()
    chat.expect("you> ")
    chat.type("hi\r")
    chat.expect("Hello again.")
    chat.expect("you> ")
    chat.type("/exit\r")
    chat.finish()
    assert llm_server.requests[-1].body["messages"][-1]["content"] == "hi"


def test_a_host_can_watch_the_stream_with_the_agent_api(home: Path, llm_server: ScriptedServer) -> None:
    """The library path: a display writing to a real terminal (a pty) streams; the text arrives whole."""
    import os

    llm_config(home, llm_server.url)
    llm_server.reply("streamed to a terminal")
    master, slave = os.openpty()
    from hermes_core.agent import Display

    with open(slave, "w", encoding="utf-8") as tty, open(os.devnull, "w") as progress:
        display = Display(progress, answers=tty)
        assert display.streams_answers
        with Agent(PluginManager(), display=display) as agent:
            result = agent.ask("hi")
            display.answer(result.text)
    shown = b""
    while True:
        try:
            shown += os.read(master, 4096)
        except OSError:
            break
        if shown.endswith(b"\n"):
            break
    os.close(master)
    assert shown.replace(b"\r\n", b"\n") == b"streamed to a terminal\n"
    assert llm_server.requests[0].body["stream"] is True
