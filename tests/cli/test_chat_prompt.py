"""What a person sees in `hermes chat` and `hermes run`: a prompt with line editing, history and
completion (checked on a pseudo-terminal, as the screen shows it), /help, progress lines for tool
calls with their results and failures, the usage line after the answer, and costs that read."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from hermes_core.agent.display import format_cost
from hermes_core.testing import tool_call
from tests.helpers import HERMES, Screen, hermes, llm_config, make_folder_plugin

UP, LEFT, TAB = "\x1b[A", "\x1b[D", "\t"


@pytest.fixture
def screen_of() -> Iterator:
    opened: list[Screen] = []

    def start(*args: str) -> Screen:
        opened.append(Screen("chat", *args))
        return opened[-1]

    yield start
    for screen in opened:
        screen.close()


def asked(llm_server) -> list[str]:
    """The user messages the model was sent, in the order asked (the last request of each turn)."""
    return [r.body["messages"][-1]["content"] for r in llm_server.requests]


def test_the_arrow_keys_edit_the_line_and_recall_history_across_chats(home: Path, llm_server, screen_of) -> None:
    llm_config(home, llm_server.url)
    llm_server.always("ok")
    chat = screen_of()
    chat.expect("you> ")
    chat.type(f"hello wrld{LEFT * 3}o\r")  # the cursor moves back three places, the o goes in there
    chat.expect("you> ")
    chat.type("/exit\r")
    assert "session" in chat.finish() and "saved" in chat.shown
    assert asked(llm_server) == ["hello world"]
    assert "^[[" not in chat.shown  # no arrow key printed as text
    history = (home / "chat_history").read_text(encoding="utf-8").splitlines()
    assert history[-2:] == ["hello world", "/exit"]

    again = screen_of()
    again.expect("you> ")
    again.type(f"{UP}{UP}\r")  # /exit, then the line before it
    again.expect("you> ")
    again.type("/exit\r")
    again.finish()
    assert asked(llm_server) == ["hello world", "hello world"]


HISTORY_LENGTH = 1000  # lines, as the README says


def test_the_history_file_is_bounded(home: Path, llm_server, screen_of) -> None:
    llm_config(home, llm_server.url)
    (home / "chat_history").write_text("".join(f"old {n}\n" for n in range(HISTORY_LENGTH + 50)), encoding="utf-8")
    chat = screen_of()
    chat.expect("you> ")
    chat.type("/exit\r")
    chat.finish()
    history = (home / "chat_history").read_text(encoding="utf-8").splitlines()
    assert len(history) == HISTORY_LENGTH and history[-1] == "/exit" and history[0] == "old 51"  # 1,050 old lines and /exit


def test_tab_completes_builtin_and_plugin_commands(home: Path, llm_server, screen_of) -> None:
    llm_config(home, llm_server.url, "plugins:\n  enabled: [textstats]\n")
    chat = screen_of()
    chat.expect("you> ")
    chat.type(f"/w{TAB}one two three\r")  # /wc is the only command starting /w
    chat.expect("3 words")
    chat.expect("you> ")
    chat.type(f"/he{TAB}\r")
    chat.expect("/toolstats")  # /help lists the plugin's commands
    chat.expect("you> ")
    chat.type(f"/ex{TAB}\r")
    chat.finish()
    assert "saved" in chat.shown and llm_server.requests == []


def test_ctrl_c_at_an_empty_prompt_leaves_the_chat_and_keeps_the_session(home: Path, llm_server, screen_of) -> None:
    llm_config(home, llm_server.url)
    llm_server.reply("Hello.")
    chat = screen_of()
    chat.expect("you> ")
    chat.type("hi\r")
    chat.expect("Hello.")
    chat.expect("you> ")
    chat.interrupt()
    chat.expect("saved")
    chat.finish()
    assert "Traceback" not in chat.shown
    assert json_sessions()[0]["messages"] == 2


def json_sessions() -> list[dict]:
    return json.loads(hermes("sessions", "list", "--json").stdout)


SLOW_COMMAND = """
def register(ctx):
    def ask(raw):
        return "model says: " + ctx.llm.complete([{"role": "user", "content": raw}]).text
    ctx.register_command("ask", ask, description="Ask the model directly")
"""


def test_a_plugin_command_that_calls_the_model_shows_a_spinner(home: Path, llm_server, screen_of) -> None:
    make_folder_plugin(home / "plugins", "asker", SLOW_COMMAND, "name: asker\n")
    llm_config(home, llm_server.url, "plugins:\n  enabled: [asker]\n")
    llm_server.reply("forty-two")
    chat = screen_of()
    chat.expect("you> ")
    chat.type("/ask the answer?\r")
    before = chat.expect("model says: forty-two")
    assert "running /ask" in before and "\x1b[K" in before  # drawn, then cleared before the output
    chat.expect("you> ")
    chat.type("/exit\r")
    chat.finish()


def test_help_lists_builtin_and_plugin_commands_with_their_descriptions(home: Path, llm_server) -> None:
    make_folder_plugin(home / "plugins", "asker", SLOW_COMMAND, "name: asker\n")
    llm_config(home, llm_server.url, "plugins:\n  enabled: [asker, textstats]\n")
    shown = hermes("chat", input="/help\n/exit\n").stdout
    lines = {line.split()[0]: line for line in shown.splitlines() if line.strip().startswith("/")}
    assert {"/help", "/compress", "/reset", "/exit", "/ask", "/wc", "/toolstats"} <= set(lines)
    assert "Ask the model directly" in lines["/ask"] and "asker" in lines["/ask"]
    assert "compress" in lines["/compress"].split(None, 1)[1]
    assert llm_server.requests == []


def test_tool_results_and_failures_show_as_they_happen_and_usage_after_the_answer(home: Path, llm_server) -> None:
    llm_config(home, llm_server.url, "  pricing:\n    scripted-model: {input: 0.1, output: 0.4}\n")
    llm_server.reply(None, tool_calls=[tool_call("current_time", {"timezone": "UTC"}, call_id="c1"),
                                       tool_call("no_such_tool", {}, call_id="c2")],
                     usage={"prompt_tokens": 100, "completion_tokens": 0, "total_tokens": 100})
    llm_server.reply("It is Sunday.", usage={"prompt_tokens": 120, "completion_tokens": 4, "total_tokens": 124})
    run = subprocess.run([str(HERMES), "run", "what day is it?"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True, timeout=120)  # one stream: the order the person sees
    lines = [line for line in run.stdout.splitlines() if not line.startswith("…")]
    assert run.returncode == 0, run.stdout
    assert lines[0].startswith('→ current_time {"timezone": "UTC"}')
    assert lines[1].startswith("← current_time: {") and "weekday" in lines[1]
    assert lines[2].startswith("→ no_such_tool")
    assert lines[3] == "✗ no_such_tool failed: Unknown tool: no_such_tool"
    assert lines[4:] == ["It is Sunday.", "· tokens: 220 in, 4 out, $0.000024"]  # 220×0.1 + 4×0.4 per million


def test_a_long_tool_result_is_cut_to_one_line(home: Path, llm_server) -> None:
    make_folder_plugin(home / "plugins", "poet", """
def register(ctx):
    ctx.register_tool("poem", "poet", {"name": "poem", "description": "a poem", "parameters": {"type": "object"}},
                      lambda args, **kw: "line one\\nline two\\n" + "la " * 200)
""", "name: poet\n")
    llm_config(home, llm_server.url, "plugins:\n  enabled: [poet]\n")
    llm_server.reply(None, tool_calls=[tool_call("poem", {})]).reply("Done.")
    result = hermes("run", "a poem please")
    (shown,) = [line for line in result.stderr.splitlines() if line.startswith("← poem")]
    assert shown.startswith("← poem: line one line two la la") and shown.endswith("…") and len(shown) < 120


@pytest.mark.parametrize(("cost", "shown"), [
    (0.000042, "$0.000042"), (0.0012, "$0.0012"), (0.031, "$0.0310"), (1.234, "$1.23"), (0.0, "$0"),
    (4e-9, "<$0.000001"),
])
def test_costs_show_significant_digits_never_zero(cost: float, shown: str) -> None:
    assert format_cost(cost) == shown


def test_a_cheap_turn_never_shows_as_zero_dollars() -> None:
    from hypothesis import given
    from hypothesis import strategies as st

    @given(st.floats(min_value=1e-6, max_value=10.0))
    def check(cost: float) -> None:
        text = format_cost(cost)
        assert text.startswith("$") and any(c in "123456789" for c in text)
        assert abs(float(text[1:].replace(",", "")) - cost) <= cost * 0.06 + 0.005 * (cost >= 0.01)

    check()


def stored_sessions(home: Path, count: int) -> None:
    from hermes_core.agent import SessionStore

    store = SessionStore(home)
    for n in range(count):
        store.start(f"s{n}", "scripted-model")
        store.append(f"s{n}", {"role": "user", "content": f"an apple a day, number {n}"})
    store.close()


def test_sessions_list_takes_a_limit_and_says_when_it_cut(home: Path) -> None:
    stored_sessions(home, 3)
    cut = hermes("sessions", "list", "-n", "2")
    assert len(cut.stdout.strip().splitlines()) == 1 + 2  # the header and two rows
    assert "showing 2 of 3 sessions" in cut.stderr
    whole = hermes("sessions", "list")
    assert len(whole.stdout.strip().splitlines()) == 1 + 3 and "showing" not in whole.stderr
    assert len(json.loads(hermes("sessions", "list", "--json", "--limit", "1").stdout)) == 1
    assert "showing" not in hermes("sessions", "list", "-n", "3").stderr  # exactly all of them


def test_sessions_search_takes_a_limit_and_says_when_it_cut(home: Path) -> None:
    stored_sessions(home, 3)
    cut = hermes("sessions", "search", "apple", "-n", "1")
    assert len(cut.stdout.strip().splitlines()) == 1 + 1 and "showing 1 of 3 matches" in cut.stderr
    assert len(json.loads(hermes("sessions", "search", "apple", "--json").stdout)) == 3
    assert "showing" not in hermes("sessions", "search", "apple").stderr
    assert "--limit" in hermes("sessions", "search", "apple", "-n", "0", check=2).stderr


def test_a_tool_call_put_to_a_human_is_asked_at_the_chat_prompt(home: Path, llm_server, screen_of) -> None:
    from hermes_core.testing import Reply
    from tests.helpers.chat import GUARD

    make_folder_plugin(home / "plugins", "guard", GUARD, "name: guard\n")
    llm_config(home, llm_server.url, "plugins:\n  enabled: [guard]\n")
    llm_server.push(Reply("", tool_calls=[tool_call("wipe", {"path": "/tmp/a"})]), Reply("Wiped it."),
                    Reply("", tool_calls=[tool_call("wipe", {"path": "/tmp/b"})]), Reply("Left it."))
    chat = screen_of()
    chat.expect("you> ")
    chat.type("wipe /tmp/a\r")
    chat.expect("approve? [o]nce, [s]ession, [d]eny")
    assert "approval needed: it deletes files" in chat.shown and 'wipe({"path": "/tmp/a"})' in chat.shown
    chat.type("o\r")
    chat.expect("Wiped it.")
    chat.expect("you> ")
    chat.type("wipe /tmp/b\r")
    chat.expect("approve? [o]nce")
    chat.type("d\r")
    chat.expect("Left it.")
    chat.expect("you> ")
    chat.type("/exit\r")
    chat.finish()
    assert (home / "wiped.txt").read_text().split() == ["/tmp/a"]
    assert "was not approved (deny)" in llm_server.requests[3].body["messages"][-1]["content"]
    # `hermes run` has no one to ask: the call is refused at once.
    llm_server.push(Reply("", tool_calls=[tool_call("wipe", {"path": "/tmp/c"})]), Reply("Refused."))
    assert hermes("run", "wipe /tmp/c").stdout.strip() == "Refused."
    assert "no one here can give it" in llm_server.requests[-1].body["messages"][-1]["content"]
