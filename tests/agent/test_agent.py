"""The reference host: multi-turn conversations against the scripted server, through the
`hermes` CLI (a subprocess) and the `Agent` API, with sessions stored in SQLite."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from hermes_core import PluginManager, message_problems
from hermes_core.agent import Agent, SessionNotFoundError, SessionStore
from hermes_core.testing import Reply, tool_call
from tests.helpers import HERMES, hermes, llm_config, make_folder_plugin, sigint_default


def sessions(home: Path) -> list[dict]:
    return json.loads(hermes("sessions", "list", "--json").stdout)


def test_a_tool_call_and_its_result_go_back_with_the_right_id(home: Path, llm_server) -> None:
    llm_config(home, llm_server.url)
    llm_server.reply(None, tool_calls=[tool_call("current_time", {"timezone": "UTC"}, call_id="call_42")])
    llm_server.reply("It is Sunday.", usage={"prompt_tokens": 120, "completion_tokens": 4, "total_tokens": 124})
    result = hermes("run", "what", "day", "is", "it?")
    assert result.stdout.strip() == "It is Sunday."
    assert "→ current_time" in result.stderr and "tokens:" in result.stderr  # progress on stderr, plain lines
    first, second = (r.body for r in llm_server.requests)
    assert {t["function"]["name"] for t in first["tools"]} >= {"current_time", "memory_save"}
    assert first["messages"][0]["role"] == "system" and first["messages"][-1] == {"role": "user",
                                                                                 "content": "what day is it?"}
    call, answer = second["messages"][-2:]
    assert call["tool_calls"][0]["id"] == "call_42"
    assert answer["role"] == "tool" and answer["tool_call_id"] == "call_42" and "weekday" in answer["content"]
    (stored,) = sessions(home)
    assert stored["messages"] == 4 and stored["title"] == "what day is it?"
    shown = json.loads(hermes("sessions", "show", stored["id"], "--json").stdout)
    assert shown["tool_calls"][0]["call_id"] == "call_42" and shown["usage"][-1]["input_tokens"] == 120


GUARD = """
from hermes_core import hookimpl

@hookimpl
def pre_tool_call(tool_name, args):
    if tool_name == "current_time":
        return {"action": "block", "message": '{"error": "the clock is off limits"}'}
"""


def test_a_blocked_tool_answers_with_the_block_message(home: Path, llm_server) -> None:
    make_folder_plugin(home / "plugins", "guard", GUARD, "name: guard\n")
    llm_config(home, llm_server.url, "plugins:\n  enabled: [guard]\n")
    llm_server.reply(None, tool_calls=[tool_call("current_time", {}, call_id="c1")]).reply("I cannot tell the time.")
    assert hermes("run", "time?").stdout.strip() == "I cannot tell the time."
    result = llm_server.requests[1].body["messages"][-1]
    assert result == {"role": "tool", "tool_call_id": "c1", "content": '{"error": "the clock is off limits"}'}


@pytest.mark.parametrize("engine", ["compressor", "lcm"])
def test_a_conversation_continues_validly_after_compression(home: Path, llm_server, engine: str) -> None:
    llm_config(home, llm_server.url, "  context_length: 4000\n"
               f"context:\n  engine: {engine}\ncompression:\n  protect_last_n: 4\nlcm:\n  protect_last_n: 4\n")
    big = {"prompt_tokens": 3_000, "completion_tokens": 10, "total_tokens": 3_010}  # over the 0.5 threshold
    llm_server.always(Reply("summary or answer", usage=big))
    with Agent(PluginManager()) as agent:
        for n in range(8):
            agent.ask(f"turn {n}: tell me about topic{n}")
        session_id = agent.session_id
    bodies = [r.body for r in llm_server.requests if r.body.get("tools")]  # the agent's requests
    assert all(message_problems(b["messages"]) == [] for b in bodies)
    assert bodies[-1]["messages"][-1]["content"] == "turn 7: tell me about topic7"
    assert len(bodies[-1]["messages"]) < 1 + 2 * 8  # the window was compressed
    shown = SessionStore(home).show(session_id)
    assert shown["compressions"] and shown["compressions"][0]["engine"] == engine
    assert len(shown["messages"]) == 16  # the transcript keeps everything
    if engine == "lcm":
        assert "lcm_grep" in {t["function"]["name"] for t in bodies[-1]["tools"]}


def test_memory_saved_in_one_session_is_found_in_the_next(home: Path, llm_server) -> None:
    llm_config(home, llm_server.url)
    llm_server.reply(None, tool_calls=[tool_call("memory_save", {"content": "The user's cat is called Miso"})])
    llm_server.reply("Noted.")
    hermes("run", "remember my cat is called Miso")
    llm_server.reply("Your cat is Miso.")
    assert hermes("run", "what is my cat called?").stdout.strip() == "Your cat is Miso."
    request = llm_server.requests[-1].body["messages"]
    assert "The user's cat is called Miso" in request[0]["content"]  # the memory digest in the system prompt
    assert "Possibly relevant memories" in request[-1]["content"]  # prefetched into this turn's user message
    assert len(sessions(home)) == 2


def test_an_outage_is_answered_by_the_fallback(home: Path, llm_server) -> None:
    llm_config(home, llm_server.url_for("main"),
               f"  fallback:\n    - {{provider: custom, model: backup-model, base_url: '{llm_server.url_for('backup')}'}}\n")
    llm_server.fail(503).reply("from the backup")
    assert hermes("run", "hello").stdout.strip() == "from the backup"
    assert [r.path.split("/")[1] for r in llm_server.requests] == ["main", "backup"]


def test_when_every_provider_fails_the_error_is_one_line_and_the_session_is_kept(home: Path, llm_server) -> None:
    llm_config(home, llm_server.url)
    llm_server.fail(503)
    result = hermes("run", "hello there", check=1)
    (line,) = result.stderr.strip().splitlines()[-1:]
    assert line.startswith("hermes: error: every provider failed") and "hermes chat --resume" in line
    (kept,) = sessions(home)
    assert kept["title"] == "hello there" and kept["messages"] == 1
    llm_server.reply("I am back.")
    chat = hermes("chat", "--resume", kept["id"], input="are you there?\n/exit\n")
    assert "I am back." in chat.stdout
    assert [m["content"] for m in llm_server.requests[-1].body["messages"][1:]] == ["hello there", "are you there?"]


GLOSS = """
from hermes_core import hookimpl

@hookimpl
def pre_llm_call(**kwargs):
    return {"context": "a gloss with half \\ud800 a pair"}
"""


def test_text_no_utf8_can_carry_reaches_the_model_as_replacement_characters(home: Path, llm_server) -> None:
    make_folder_plugin(home / "plugins", "gloss", GLOSS, "name: gloss\n")
    llm_config(home, llm_server.url, "plugins:\n  enabled: [gloss]\n")
    llm_server.reply("Understood.")
    result = subprocess.run([str(HERMES), "run", b"caf\xe9 au lait"], capture_output=True, text=True, timeout=120)
    assert (result.returncode, result.stdout.strip()) == (0, "Understood."), result.stderr  # a Latin-1 argument
    asked = llm_server.requests[0].body["messages"][-1]["content"]
    assert asked == "caf\ufffd au lait\n\na gloss with half \ufffd a pair"


def test_chat_runs_plugin_commands_and_resumes(home: Path, llm_server) -> None:
    llm_config(home, llm_server.url, "plugins:\n  enabled: [textstats]\n")
    llm_server.reply("Hi!")
    chat = hermes("chat", input="/wc one two three\nhello\n/exit\n")
    assert "3 words" in chat.stdout and "Hi!" in chat.stdout
    (stored,) = sessions(home)
    assert json.loads(hermes("sessions", "search", "hello", "--json").stdout)[0]["session_id"] == stored["id"]
    assert "[user] hello" in hermes("sessions", "show", stored["id"]).stdout


def test_without_a_model_run_says_how_to_configure_one(home: Path) -> None:
    result = hermes("run", "hello", check=1)
    assert result.stderr.startswith("hermes: error: no model is configured: add `model:")
    assert len(result.stderr.strip().splitlines()) == 1


def test_resuming_an_unknown_session_names_the_known_ones(home: Path, llm_server) -> None:
    llm_config(home, llm_server.url)
    with pytest.raises(SessionNotFoundError, match="no session 'nope'"):
        Agent(PluginManager(), session_id="nope", resume=True)
    assert "no session 'nope'" in hermes("chat", "--resume", "nope", check=1).stderr


def test_tool_rounds_are_bounded(home: Path, llm_server) -> None:
    llm_config(home, llm_server.url)
    for n in range(3):
        llm_server.reply(None, tool_calls=[tool_call("current_time", {}, call_id=f"c{n}")])
    with Agent(PluginManager(), max_iterations=3) as agent:
        result = agent.ask("loop forever")
    assert "stopped after 3 rounds" in result.text and result.tool_calls == 3
    assert result.stopped == "max_iterations"
    assert message_problems(agent.messages) == []


def test_run_without_an_answer_within_the_iteration_limit_exits_non_zero(home: Path, llm_server) -> None:
    llm_config(home, llm_server.url)
    llm_server.always(Reply(None, tool_calls=[tool_call("current_time", {})]))
    result = hermes("run", "--max-iterations", "2", "loop forever", check=1)
    (line,) = [line for line in result.stderr.splitlines() if "error" in line]
    assert line.startswith("hermes: error: no answer: stopped after 2 rounds of tool calls")
    assert "agent.max_iterations" in line and result.stdout == ""
    assert len(llm_server.requests) == 2


def wait_for(predicate, timeout: float = 30.0) -> None:
    import time

    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_ctrl_c_stops_the_current_answer_and_keeps_the_session(home: Path, llm_server) -> None:
    import signal
    import subprocess

    from tests.helpers import HERMES

    llm_config(home, llm_server.url)
    llm_server.reply("too late", delay=30).reply("Here now.")
    chat = subprocess.Popen([str(HERMES), "chat"], preexec_fn=sigint_default, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    assert chat.stdin is not None
    chat.stdin.write("a slow question\n")
    chat.stdin.flush()
    wait_for(lambda: len(llm_server.requests) == 1)
    chat.send_signal(signal.SIGINT)
    out, err = chat.communicate("again\n/exit\n", timeout=60)
    assert chat.returncode == 0, err
    assert "(interrupted; the session is kept)" in err and "Here now." in out and "too late" not in out
    assert [m["content"] for m in llm_server.requests[-1].body["messages"][1:]] == ["a slow question", "again"]


def test_a_crash_mid_turn_loses_nothing_already_written(home: Path, llm_server) -> None:
    import subprocess

    from tests.helpers import HERMES

    llm_config(home, llm_server.url)
    llm_server.reply(None, tool_calls=[tool_call("current_time", {}, call_id="c1")]).reply("never", delay=30)
    run = subprocess.Popen([str(HERMES), "run", "what time is it"], preexec_fn=sigint_default, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    wait_for(lambda: len(llm_server.requests) == 2)
    run.kill()  # SIGKILL: no cleanup at all
    run.communicate(timeout=30)
    (kept,) = sessions(home)
    shown = json.loads(hermes("sessions", "show", kept["id"], "--json").stdout)
    assert [m["role"] for m in shown["messages"]] == ["user", "assistant", "tool"]
    assert shown["tool_calls"][0]["call_id"] == "c1"


HOOKS = """
from hermes_core import hookimpl

seen = []

@hookimpl
def pre_llm_call(user_message):
    return "Context: the user is in Lisbon."

@hookimpl
def post_llm_call(assistant_response, model):
    seen.append((assistant_response, model))

@hookimpl
def transform_llm_output(response_text):
    return response_text.upper()
"""


@pytest.mark.fires("pre_llm_call", "transform_llm_output", "post_llm_call")
def test_the_llm_hooks_wrap_every_turn(home: Path, llm_server) -> None:
    make_folder_plugin(home / "plugins", "hooks", HOOKS, "name: hooks\n")
    llm_config(home, llm_server.url, "plugins:\n  enabled: [hooks]\n")
    llm_server.reply("it is sunny", model="weather-model")
    manager = PluginManager()
    with Agent(manager) as agent:
        result = agent.ask("Remember that I prefer Celsius. What's the weather?")
        assert result.text == "IT IS SUNNY"  # transform_llm_output
        sent = llm_server.requests[0].body["messages"]
        assert sent[-1]["content"].endswith("Context: the user is in Lisbon.")  # pre_llm_call, this turn only
        assert "Lisbon" not in sent[0]["content"]  # ...never the system prompt
        assert "Lisbon" not in json.dumps(agent.messages)  # ...and never stored
        assert agent.messages[-1]["content"] == "IT IS SUNNY"  # what is stored is the transformed answer
        found = json.loads(agent.session.dispatch_tool("memory_search", {"query": "celsius"}))
    module = manager.record("hooks").module
    assert module.seen == [("IT IS SUNNY", "scripted-model")]  # post_llm_call: the final answer, the host's model
    assert found["results"][0]["content"] == "I prefer Celsius. What's the weather?"  # sync_turn kept it


def test_progress_is_a_spinner_on_a_terminal_and_plain_lines_otherwise() -> None:
    import io
    import time

    from hermes_core.agent import Display

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    screen = Terminal()
    display = Display(screen)
    display.working("thinking")
    time.sleep(0.25)
    display.tool("current_time", '{"timezone": "UTC"}')
    display.usage(1200, 30, 0.0012)
    shown = screen.getvalue()
    assert "\r⠋ thinking" in shown and "\r\033[K" in shown  # drawn, then cleared before the next line
    assert '→ current_time {"timezone": "UTC"}\n' in shown and "· tokens: 1,200 in, 30 out, $0.0012\n" in shown
    plain = io.StringIO()
    Display(plain).working("thinking")
    assert plain.getvalue() == "… thinking\n"


def test_the_agents_requests_use_model_timeout(home: Path, llm_server) -> None:
    llm_config(home, llm_server.url, "  timeout: 0.5\n")
    llm_server.reply("too slow", delay=3)
    result = hermes("run", "hello", check=1)
    assert "every provider failed" in result.stderr and "timed out" in result.stderr.lower()


def test_reset_clears_the_window_for_resume_too(home: Path, llm_server) -> None:
    llm_config(home, llm_server.url)
    llm_server.always("ok")
    chat = hermes("chat", input="first question\n/reset\nsecond question\n/exit\n")
    assert "conversation cleared" in chat.stdout
    assert [m["content"] for m in llm_server.requests[-1].body["messages"][1:]] == ["second question"]
    (stored,) = sessions(home)
    hermes("chat", "--resume", stored["id"], input="third\n/exit\n")
    assert [m["content"] for m in llm_server.requests[-1].body["messages"][1:]] == ["second question", "ok", "third"]
    assert stored["messages"] == 4  # the transcript keeps the cleared turn


DEEP = '''
import logging

def register(ctx):
    def deep(args, **kwargs):  # JSON nested past the parser, shaped like an error and a multimodal result
        return '{"error": ' + "[" * 100_000 if args.get("as") == "error" else \\
            '{"_multimodal": true, "content": ' + "[" * 100_000
    ctx.register_tool("deep", "deep", {"name": "deep", "parameters": {"type": "object"}}, deep)
    ctx.register_hook("post_tool_call", lambda **kwargs: logging.getLogger("deep").info(kwargs["status"]))
'''


def test_a_tool_result_nested_past_the_parser_reaches_the_model_as_it_is(home: Path, llm_server) -> None:
    make_folder_plugin(home / "plugins", "deep", DEEP, "name: deep\n")
    llm_config(home, llm_server.url, "plugins:\n  enabled: [deep]\n")
    llm_server.push(Reply(None, tool_calls=[tool_call("deep", {"as": "error"}, call_id="a"),
                                            tool_call("deep", {"as": "multimodal"}, call_id="b")]),
                    Reply(None, tool_calls=[tool_call("deep", "[" * 100_000, call_id="c")]), Reply("Survived."))
    assert hermes("run", "go deep").stdout.strip() == "Survived."
    tool_messages = [m for m in llm_server.requests[-1].body["messages"] if m["role"] == "tool"]
    assert [len(m["content"]) > 100_000 for m in tool_messages[:2]] == [True, True]  # as the tool said it
    assert "nested too deeply" in tool_messages[2]["content"]  # the model's own arguments, refused in words
