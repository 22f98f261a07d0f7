"""The fault suite: plugins doing the bad thing, tried through the `hermes` CLI as a subprocess.

Each case asserts what the user sees (exit code, one error line, a doctor row) and that the
other plugins still work: nothing a plugin does takes the host down.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from hermes_core.testing import tool_call
from tests.helpers import HERMES, hermes, hermes_json, llm_config, make_folder_plugin, sigint_default, write_config

# A plugin that works, loaded beside every faulty one: it must keep working.
GOOD = """
def register(ctx):
    ctx.register_tool("echo", "good", {"name": "echo", "parameters": {"type": "object", "properties":
        {"text": {"type": "string"}}}}, lambda args, **kw: "echo: " + args.get("text", ""))
    ctx.register_command("ping", lambda raw: "pong")
"""

# The BaseException subclasses plugin code may raise: each is the plugin's failure, never the host's.
RAISED = {
    "custom": "class Boom(BaseException):\n    pass\n",
    "keyboard": "Boom = KeyboardInterrupt\n",
    "exit": "Boom = SystemExit\n",
    "genexit": "Boom = GeneratorExit\n",
}


def plugins(home: Path, *enabled: str, extra: str = "") -> None:
    """Folder plugins `good` plus `enabled`, all enabled in config.yaml (`extra` appended)."""
    make_folder_plugin(home / "plugins", "good", GOOD, "name: good\n")
    names = ", ".join(("good", *enabled))
    write_config(home, f"plugins:\n  enabled: [{names}]\n{extra}")


def bad_plugin(home: Path, code: str, name: str = "bad") -> None:
    make_folder_plugin(home / "plugins", name, code, f"name: {name}\n")


def one_line(stderr: str) -> str:
    (line,) = [line for line in stderr.splitlines() if line.startswith("hermes: error")]
    return line


def good_still_works() -> None:
    assert hermes("tools", "call", "echo", '{"text": "hi"}').stdout.strip() == "echo: hi"
    assert hermes("command", "ping").stdout.strip() == "pong"


# -- register -----------------------------------------------------------------------------


@pytest.mark.parametrize("kind", sorted(RAISED))
def test_a_plugin_raising_any_base_exception_in_register_is_that_plugins_failure(home: Path, kind: str) -> None:
    bad_plugin(home, RAISED[kind] + "def register(ctx):\n    raise Boom('no way')\n")
    plugins(home, "bad")
    rows = {row["id"]: row for row in hermes_json("plugins", "doctor", check=1)["plugins"]}
    assert rows["good"]["status"] == "ok"
    assert rows["bad"]["status"] == "failed" and "no way" in rows["bad"]["error"]
    good_still_works()


# -- tools ---------------------------------------------------------------------------------

TOOL = """{raised}
def boom(args, **kw):
    raise Boom("the tool broke")

async def aboom(args, **kw):
    raise Boom("the async tool broke")

def register(ctx):
    schema = {{"type": "object", "properties": {{}}}}
    ctx.register_tool("boom", "bad", {{"name": "boom", "parameters": schema}}, boom)
    ctx.register_tool("aboom", "bad", {{"name": "aboom", "parameters": schema}}, aboom, is_async=True)
"""


@pytest.mark.parametrize("tool", ["boom", "aboom"])
@pytest.mark.parametrize("kind", sorted(RAISED))
def test_a_tool_raising_any_base_exception_is_an_error_result(home: Path, kind: str, tool: str) -> None:
    bad_plugin(home, TOOL.format(raised=RAISED[kind]))
    plugins(home, "bad")
    result = hermes("tools", "call", tool, "{}", check=1)
    error = json.loads(result.stdout)["error"]
    assert error.startswith("Tool execution failed: ") and "broke" in error
    assert f"tool '{tool}' (plugin 'bad') failed" in one_line(result.stderr) and "Traceback" not in result.stderr
    good_still_works()


def test_a_background_hermes_ignoring_ctrl_c_still_contains_a_plugins_keyboard_interrupt(home: Path) -> None:
    """Started as a background job (SIGINT ignored), no Ctrl-C can reach hermes: a
    KeyboardInterrupt is then always the plugin's own, an error result, never an abort."""
    import signal

    bad_plugin(home, TOOL.format(raised=RAISED["keyboard"]))
    plugins(home, "bad")
    result = subprocess.run([str(HERMES), "tools", "call", "boom", "{}"], capture_output=True, text=True, timeout=120,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    assert result.returncode == 1, result.stderr
    assert json.loads(result.stdout)["error"].startswith("Tool execution failed: ")
    assert "interrupted" not in result.stderr


def test_a_tool_raising_keyboard_interrupt_does_not_abort_the_run(home: Path, llm_server) -> None:
    bad_plugin(home, TOOL.format(raised=RAISED["keyboard"]))
    plugins(home, "bad")
    llm_config(home, llm_server.url, "plugins:\n  enabled: [good, bad]\n")
    llm_server.reply(None, tool_calls=[tool_call("boom", {}, call_id="c1")]).reply("The tool failed, sorry.")
    result = hermes("run", "use boom")
    assert result.stdout.strip() == "The tool failed, sorry."
    answer = llm_server.requests[1].body["messages"][-1]
    assert answer["tool_call_id"] == "c1" and "Tool execution failed: KeyboardInterrupt: the tool broke" in answer["content"]


def test_a_tool_raising_a_base_exception_subclass_keeps_the_answer(home: Path, llm_server) -> None:
    bad_plugin(home, TOOL.format(raised=RAISED["custom"]))
    plugins(home, "bad")
    llm_config(home, llm_server.url, "plugins:\n  enabled: [good, bad]\n")
    llm_server.reply(None, tool_calls=[tool_call("boom", {}, call_id="c1")]).reply("Answered anyway.")
    result = hermes("run", "use boom")
    assert result.stdout.strip() == "Answered anyway." and "Traceback" not in result.stderr


# An isolated plugin (plugins.entries.<id>.isolation: process) ending its own process in a tool.
DIES = """
import ctypes, json, os, signal

def die(args, **kwargs):
    how = args.get("how")
    if how == "exit":
        os._exit(3)
    if how == "segv":
        ctypes.string_at(0)
    if how == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    if how == "hang":
        ctypes.CDLL(None).sleep(60)
    return json.dumps({"alive": os.getpid()})

def register(ctx):
    ctx.register_tool("die", "bad", {"name": "die", "parameters": {"type": "object",
                      "properties": {"how": {"type": "string"}}}}, die)
    ctx.register_command("alive", lambda raw: "alive")
"""


@pytest.mark.parametrize("how, said", [("exit", "exited with code 3"), ("segv", "was killed by SIGSEGV"),
                                        ("kill", "was killed by SIGKILL"), ("hang", "did not finish within 2 s")])
def test_an_isolated_plugin_ending_its_process_mid_run_is_a_failed_tool_call(home: Path, llm_server, how: str,
                                                                              said: str) -> None:
    bad_plugin(home, DIES)
    plugins(home, "bad")
    llm_config(home, llm_server.url, "plugins:\n  enabled: [good, bad]\n  entries:\n    bad: {isolation: process}\n"
                                     "tools:\n  timeouts: {die: 2}\n")
    llm_server.reply(None, tool_calls=[tool_call("die", {"how": how}, call_id="c1")])
    llm_server.reply(None, tool_calls=[tool_call("die", {}, call_id="c2")]).reply("Done.")
    result = hermes("run", "use die")
    assert result.stdout.strip() == "Done."
    died, alive = (request.body["messages"][-1]["content"] for request in llm_server.requests[1:3])
    assert died.startswith('{"error": "Tool execution failed: PluginProcessError: plugin \'bad\': ') and said in died
    assert "alive" in json.loads(alive)  # the next call: a new process
    good_still_works()
    assert hermes("command", "alive").stdout.strip() == "alive"


# -- commands ------------------------------------------------------------------------------

COMMAND = """{raised}
def register(ctx):
    def boom(raw):
        raise Boom("the command broke")
    ctx.register_command("boom", boom)
"""


@pytest.mark.parametrize("kind", sorted(RAISED))
def test_a_command_raising_any_base_exception_is_one_error_line(home: Path, kind: str) -> None:
    bad_plugin(home, COMMAND.format(raised=RAISED[kind]))
    plugins(home, "bad")
    result = hermes("command", "boom", check=1)
    line = one_line(result.stderr)
    assert "/boom (plugin 'bad') failed" in line and "the command broke" in line
    good_still_works()


# -- hooks ---------------------------------------------------------------------------------

HOOK = """
from hermes_core import hookimpl

class Boom(BaseException):
    pass

@hookimpl
def pre_llm_call(**kwargs):
    raise Boom("the hook broke")
"""


def test_a_hook_raising_a_base_exception_is_reported_as_raising_not_as_a_timeout(home: Path, llm_server) -> None:
    bad_plugin(home, HOOK)
    plugins(home, "bad")
    # a limit far longer than the test may take: a callback treated as hanging would fail it
    llm_config(home, llm_server.url, "plugins:\n  enabled: [good, bad]\n  hook_callback_timeout: 600\n")
    llm_server.reply("Still here.")
    result = hermes("run", "hello")
    assert result.stdout.strip() == "Still here."
    assert "raised Boom: the hook broke" in result.stderr and "timed out" not in result.stderr


# -- CLI commands of plugins ------------------------------------------------------------------

CLI = """{raised}
def register(ctx):
    def run(args):
        raise Boom("the cli command broke")
    ctx.register_cli_command("boom", "a command that breaks", lambda parser: None, run)
"""


@pytest.mark.parametrize("kind", sorted(RAISED))
def test_a_plugin_cli_command_raising_any_base_exception_is_one_error_line(home: Path, kind: str) -> None:
    bad_plugin(home, CLI.format(raised=RAISED[kind]))
    plugins(home, "bad")
    result = hermes("boom", check=1)
    line = one_line(result.stderr)
    assert "`hermes boom` of plugin 'bad' failed" in line and "the cli command broke" in line
    good_still_works()


# -- a real Ctrl-C --------------------------------------------------------------------------

SLOW = """
import pathlib, time

def register(ctx):
    def slow(args, **kw):
        pathlib.Path(args["flag"]).write_text("started")
        time.sleep(600)
        return "never"
    ctx.register_tool("slow", "bad", {"name": "slow", "parameters": {"type": "object", "properties":
        {"flag": {"type": "string"}}}}, slow)
"""


def wait_for(path: Path) -> None:
    deadline = time.monotonic() + 60
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.05)


def test_a_real_ctrl_c_still_interrupts_a_tool_call(home: Path, tmp_path: Path) -> None:
    bad_plugin(home, SLOW)
    plugins(home, "bad")
    flag = tmp_path / "started"
    process = subprocess.Popen([str(HERMES), "tools", "call", "slow", json.dumps({"flag": str(flag)})], preexec_fn=sigint_default,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for(flag)
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=60)
    assert process.returncode == 130 and "hermes: interrupted" in err, (out, err)


def test_a_real_ctrl_c_in_chat_stops_the_answer_and_keeps_the_session(home: Path, tmp_path: Path, llm_server) -> None:
    bad_plugin(home, SLOW)
    plugins(home, "bad")
    llm_config(home, llm_server.url, "plugins:\n  enabled: [good, bad]\n")
    flag = tmp_path / "started"
    llm_server.reply(None, tool_calls=[tool_call("slow", {"flag": str(flag)}, call_id="c1")])
    llm_server.reply("Back again.")
    process = subprocess.Popen([str(HERMES), "chat"], preexec_fn=sigint_default, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    assert process.stdin is not None
    process.stdin.write("wait for it\n")
    process.stdin.flush()
    wait_for(flag)
    process.send_signal(signal.SIGINT)
    process.stdin.write("hello again\n/exit\n")
    process.stdin.flush()
    out, err = process.communicate(timeout=60)
    assert "(interrupted; the session is kept)" in err, err
    assert "Back again." in out and process.returncode == 0



# -- time limits ------------------------------------------------------------------------------

HANG = """
import asyncio, threading, time

def register(ctx):
    schema = {"type": "object", "properties": {}}
    def hang(args, **kw):
        threading.Event().wait()  # never returns
    async def ahang(args, **kw):
        while True:
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:  # ignores being cancelled, too
                pass
    ctx.register_tool("hang", "bad", {"name": "hang", "parameters": schema}, hang)
    async def asleep(args, **kw):
        await asyncio.sleep(3600)
    ctx.register_tool("ahang", "bad", {"name": "ahang", "parameters": schema}, ahang, is_async=True)
    ctx.register_tool("asleep", "bad", {"name": "asleep", "parameters": schema}, asleep, is_async=True)
    ctx.register_command("hang", lambda raw: threading.Event().wait())
"""


@pytest.mark.parametrize("tool", ["hang", "ahang"])
def test_a_tool_past_its_time_limit_is_an_error_result_naming_the_tool_and_the_limit(home: Path, tool: str) -> None:
    bad_plugin(home, HANG)
    plugins(home, "bad", extra="tools:\n  timeout: 1\n")
    result = hermes("tools", "call", tool, "{}", check=1)
    error = json.loads(result.stdout)["error"]
    assert f"Tool '{tool}' (plugin 'bad') timed out (did not finish within 1 s)" in error
    assert "tools.timeout" in error
    good_still_works()


def test_the_operator_sets_one_tools_time_limit_in_place_of_tools_timeout(home: Path) -> None:
    bad_plugin(home, HANG)
    plugins(home, "bad", extra="tools:\n  timeout: 0\n  timeouts:\n    hang: 1\n")
    error = json.loads(hermes("tools", "call", "hang", "{}", check=1).stdout)["error"]
    assert "did not finish within 1 s" in error and "tools.timeouts.hang" in error


def test_a_time_limit_that_is_no_number_is_a_clear_error(home: Path) -> None:
    bad_plugin(home, HANG)
    plugins(home, "bad", extra="tools:\n  timeouts:\n    hang: soon\n")
    error = json.loads(hermes("tools", "call", "hang", "{}", check=1).stdout)["error"]
    assert error.startswith("tools.timeouts.hang in ") and "must be a number of seconds" in error


def test_the_agent_goes_on_after_a_tool_runs_past_its_limit(home: Path, llm_server) -> None:
    bad_plugin(home, HANG)
    plugins(home, "bad")
    llm_config(home, llm_server.url, "plugins:\n  enabled: [good, bad]\ntools:\n  timeout: 1\n")
    llm_server.reply(None, tool_calls=[tool_call("hang", {}, call_id="c1")]).reply("It took too long.")
    assert hermes("run", "use hang").stdout.strip() == "It took too long."
    answer = llm_server.requests[1].body["messages"][-1]
    assert answer["tool_call_id"] == "c1" and "did not finish within 1 s" in answer["content"]


def test_a_slash_command_past_its_time_limit_is_one_error_line(home: Path) -> None:
    bad_plugin(home, HANG)
    plugins(home, "bad", extra="commands:\n  timeout: 1\n")
    line = one_line(hermes("command", "hang", check=1).stderr)
    assert "/hang (plugin 'bad') timed out (did not finish within 1 s)" in line and "commands.timeout" in line
    good_still_works()


@pytest.mark.parametrize("tool", ["hang", "asleep"])
def test_an_async_host_gets_the_time_limit_error_too(home: Path, tool: str) -> None:
    import asyncio

    from hermes_core import PluginManager

    bad_plugin(home, HANG)
    plugins(home, "bad", extra="tools:\n  timeout: 1\n")
    manager = PluginManager(home=home).load()
    error = json.loads(asyncio.run(manager.adispatch_tool(tool, {})))["error"]
    assert f"Tool '{tool}' (plugin 'bad') timed out (did not finish within 1 s)" in error
    assert asyncio.run(manager.adispatch_tool("echo", {"text": "on"})) == "echo: on"


# -- doctor -----------------------------------------------------------------------------------


def test_doctor_exits_non_zero_and_says_so_last_when_an_enabled_plugin_is_incompatible(home: Path) -> None:
    make_folder_plugin(home / "plugins", "future", "def register(ctx):\n    pass\n", "requires_hermes: '>=99'\n")
    plugins(home, "future")
    result = hermes("plugins", "doctor", check=1)
    assert result.stdout.splitlines()[-1] == "not ok: 1 plugin(s) incompatible: future"
    rows = {row["id"]: row for row in hermes_json("plugins", "doctor", check=1)["plugins"]}
    assert rows["future"]["status"] == "incompatible" and ">=99" in rows["future"]["error"]
    good_still_works()


def test_doctor_names_failed_plugins_in_its_last_line_and_all_is_well_when_none(home: Path) -> None:
    plugins(home)
    assert hermes("plugins", "doctor").stdout.splitlines()[-1].startswith("ok: ")
    bad_plugin(home, "raise ImportError('missing native lib')\n")
    plugins(home, "bad")
    assert hermes("plugins", "doctor", check=1).stdout.splitlines()[-1] == "not ok: 1 plugin(s) failed: bad"


# -- what an error line quotes ------------------------------------------------------------------

LONG = "x" * 10_000


@pytest.mark.parametrize("args", [
    ["plugins", "info", LONG], ["plugins", "enable", LONG], ["command", LONG], ["tools", "call", LONG], [LONG],
])
def test_an_error_line_quoting_a_huge_value_is_cut_with_a_marker(home: Path, args: list[str]) -> None:
    plugins(home)
    line = one_line(hermes(*args, check=None).stderr)
    assert len(line) < 1000 and "…(10,0" in line and " chars)" in line


def test_a_plugin_failure_with_a_huge_message_is_one_short_line(home: Path) -> None:
    bad_plugin(home, COMMAND.format(raised="Boom = ValueError\n").replace('"the command broke"', '"y" * 50_000'))
    plugins(home, "bad")
    line = one_line(hermes("command", "boom", check=1).stderr)
    assert len(line) < 1000 and "…(50,000 chars)" in line


# -- config writes ------------------------------------------------------------------------------


def test_temp_files_left_by_killed_config_writes_are_removed_by_the_next_write(home: Path) -> None:
    plugins(home)
    stale = home / ".config.yaml.k1ll3d.tmp"
    stale.write_text("plugins:\n  enabled: [ghost]\n", encoding="utf-8")  # a writer killed before its rename
    for _ in range(8):  # and real ones: writers killed at whatever point they reached
        process = subprocess.Popen([str(HERMES), "plugins", "disable", "textstats"], stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL)
        time.sleep(0.05 * _)
        process.kill()
        process.wait()
    assert "ghost" not in hermes("plugins", "list").stdout  # never mistaken for config
    hermes("plugins", "enable", "--yes", "good")
    assert not list(home.glob(".config.yaml.*.tmp"))
    assert "good" in (home / "config.yaml").read_text(encoding="utf-8")
    good_still_works()


# -- private reach --------------------------------------------------------------------------------


def test_a_plugin_cannot_delete_another_plugins_tool_through_private_reach(home: Path) -> None:
    bad_plugin(home, """
def register(ctx):
    for name in ("_manager", "_registrar", "_loader", "_record"):
        try:
            getattr(ctx, name).tools._entries.pop("echo")
        except AttributeError:
            pass
    ctx.__class__.__dict__  # the class is the only thing left to look at
    ctx.register_command("tried", lambda raw: "tried")
""")
    plugins(home, "bad")
    assert hermes("command", "tried").stdout.strip() == "tried"
    good_still_works()


# -- what plugin code leaves behind ------------------------------------------------------------

LEAVES_A_THREAD = """
import threading

def register(ctx):
    threading.Thread(target=threading.Event().wait, name="forever", daemon=False).start()
    ctx.register_command("left", lambda raw: "still answering")
"""

LEAVES_A_THREAD_LATER = """
import threading

def wait_forever():
    threading.Event().wait()

def register(ctx):
    def start(raw):
        threading.Thread(target=wait_forever, name="later", daemon=False).start()
        return "started"
    ctx.register_command("start", start)
"""


def test_the_cli_exits_promptly_when_register_left_a_non_daemon_thread_and_names_the_plugin(home: Path) -> None:
    bad_plugin(home, LEAVES_A_THREAD)
    plugins(home, "bad")
    result = hermes("command", "left")  # the helper's own time limit (120 s) fails a hang
    assert result.stdout.strip() == "still answering"
    assert "hermes: warning: plugin 'bad' left thread 'forever' running" in result.stderr
    assert hermes("plugins", "doctor").returncode == 0  # every command, doctor too
    good_still_works()


def test_a_thread_started_later_is_named_by_the_plugin_whose_code_it_runs(home: Path) -> None:
    bad_plugin(home, LEAVES_A_THREAD_LATER)
    plugins(home, "bad")
    result = hermes("command", "start")
    assert result.stdout.strip() == "started"
    assert "hermes: warning: plugin 'bad' left thread 'later' running" in result.stderr


def test_the_exit_code_is_kept_when_a_thread_is_left_behind(home: Path) -> None:
    bad_plugin(home, LEAVES_A_THREAD)
    plugins(home, "bad")
    result = hermes("command", "nope", check=1)
    assert one_line(result.stderr).startswith("hermes: error: unknown command /nope")


# -- faults the host already survived, kept that way ----------------------------------------------

SURVIVED = {
    "bad_schema": """
def register(ctx):
    ctx.register_tool("odd", "bad", {"name": "odd", "parameters": {"type": "nonsense"}}, lambda args, **kw: "")
""",
    "sys_path_and_cwd": """
import os, sys

def register(ctx):
    sys.path.insert(0, "/nonexistent")
    os.chdir("/")
    raise RuntimeError("moved things around")
""",
}


@pytest.mark.parametrize("case", sorted(SURVIVED))
def test_a_plugin_that_fails_its_load_leaves_the_others_working(home: Path, case: str) -> None:
    bad_plugin(home, SURVIVED[case])
    plugins(home, "bad")
    rows = {row["id"]: row for row in hermes_json("plugins", "doctor", check=1)["plugins"]}
    assert rows["bad"]["status"] == "failed" and rows["good"]["status"] == "ok"
    good_still_works()


TOOLS = """
def register(ctx):
    schema = {"type": "object", "properties": {}}
    def deep(args, **kw):
        return deep(args)
    ctx.register_tool("huge", "bad", {"name": "huge", "parameters": schema}, lambda args, **kw: "z" * 5_000_000)
    ctx.register_tool("deep", "bad", {"name": "deep", "parameters": schema}, deep)
"""


def test_a_huge_tool_output_and_a_runaway_recursion_are_answers_not_crashes(home: Path) -> None:
    bad_plugin(home, TOOLS)
    plugins(home, "bad")
    assert len(hermes("tools", "call", "huge", "{}").stdout.strip()) == 5_000_000
    result = hermes("tools", "call", "deep", "{}", check=1)
    assert json.loads(result.stdout)["error"].startswith("Tool execution failed: RecursionError")
    good_still_works()


# -- a plugin writing to stdout and stderr --------------------------------------------------

CHATTY = """
import logging, sys
print("chatty: imported")
sys.stderr.write("chatty: to stderr\\n")

def shout(args, **kw):
    print("chatty: in the tool")
    return "SHOUT"

def hook(**kw):
    print("chatty: in a hook")

def cli_setup(parser):
    parser.add_argument("word")

def cli_run(args):
    print("said " + args.word)

def register(ctx):
    print("chatty: registering")
    ctx.register_tool("shout", "chatty", {"name": "shout", "parameters": {"type": "object", "properties": {}}}, shout)
    ctx.register_hook("post_tool_call", hook)
    ctx.register_cli_command("say", "Say a word", cli_setup, cli_run)
"""


def test_what_a_plugin_prints_goes_to_stderr_never_into_a_commands_output(home: Path, llm_server) -> None:
    bad_plugin(home, CHATTY, "chatty")
    plugins(home, "chatty")
    report = hermes("plugins", "doctor", "--json")
    assert json.loads(report.stdout)["plugins"]  # the JSON is whole
    assert "chatty: imported" in report.stderr and "chatty: registering" in report.stderr
    assert "chatty: to stderr" in report.stderr
    called = hermes("tools", "call", "shout", "{}")
    assert called.stdout.strip() == "SHOUT" and "chatty: in the tool" in called.stderr
    llm_config(home, llm_server.url, "plugins:\n  enabled: [good, chatty]\n")
    llm_server.reply(tool_calls=[tool_call("shout", {})])
    llm_server.reply("Done.")
    ran = hermes("run", "shout please")
    assert ran.stdout.strip() == "Done." and "chatty: in a hook" in ran.stderr
    # the plugin's own CLI command: what it prints is that command's output
    said = hermes("say", "hello")
    assert said.stdout.strip() == "said hello", said
    assert "usage: hermes say" in hermes("say", "--help").stdout
    good_still_works()


def test_a_huge_unknown_command_in_chat_is_answered_in_a_short_line(home: Path, llm_server) -> None:
    plugins(home)
    llm_config(home, llm_server.url, "plugins:\n  enabled: [good]\n")
    chat = hermes("chat", input=f"/{LONG}\n/exit\n")
    (line,) = [line for line in chat.stdout.splitlines() if line.startswith("error:")]
    assert len(line) < 1000 and "…(10,0" in line and " chars)" in line


# -- hostile input and a hostile environment: every command answers in a sentence --------------------

DEEP = "[" * 30_000 + "]" * 30_000  # past the JSON parser's depth, within an argument's size


@pytest.mark.parametrize("args", [
    ["tools", "call", "current_time", DEEP],
    ["tools", "call", "current_time", '{"timezone": "\\ud800"}'],
    ["tools", "call", "current_time", b"{\"timezone\": \"\xff\"}"],
    ["tools", "call", b"\xff\xfe", "{}"],
    ["cron", "add", b"every \xff", "x"],
    ["cron", "add", DEEP, "x"],
    ["cron", "edit", "nope", "--schedule", "30m"],
    ["sessions", "show", b"\xff" * 300],
    ["sessions", "search", DEEP],
    ["batch", "run", "@file", "--out", "@out"],
    ["mcp", "serve", "--http", "0", "--token-file", "@file"],
], ids=lambda args: " ".join(a if isinstance(a, str) else repr(a) for a in args)[:60])
def test_no_command_ends_in_an_internal_error_on_hostile_input(home: Path, tmp_path: Path, args: list[Any]) -> None:
    hostile = tmp_path / "hostile"
    hostile.write_bytes(b"\xef\xbb\xbf" + b'{"prompt": "\xff"}\r\n' + DEEP.encode() + b"\n" + b"\x00\x01\x02\n")
    words = [str(hostile) if a == "@file" else str(tmp_path / "hostile" / "out") if a == "@out" else a for a in args]
    llm_config(home, "http://127.0.0.1:9/v1")
    done = subprocess.run([str(HERMES), *words], capture_output=True, timeout=120)
    said = done.stderr.decode("utf-8", "replace")
    assert done.returncode in (0, 1, 2), (done.returncode, said)
    assert "internal error" not in said and "Traceback" not in said, said
    assert len([line for line in said.splitlines() if line.startswith("hermes: error:")]) <= 1, said


def test_an_output_path_that_cannot_be_written_is_one_line_naming_it(home: Path, tmp_path: Path) -> None:
    data = tmp_path / "data.jsonl"
    data.write_text('{"prompt": "hi"}\n')
    llm_config(home, "http://127.0.0.1:9/v1")
    below_a_file = hermes("batch", "run", str(data), "--out", str(data / "out"), check=1).stderr
    assert below_a_file == f"hermes: error: cannot use {data / 'out'}: Not a directory\n"
    with open("/dev/full", "w") as full:
        listed = subprocess.run([str(HERMES), "tools", "list", "--json"], stdout=full, stderr=subprocess.PIPE,
                                text=True, timeout=60)
    assert listed.returncode == 1
    assert listed.stderr.startswith("hermes: error: No space left on device (errno 28)")


def test_a_blocked_tool_call_exits_1_and_locked_approvals_say_until_when(home: Path) -> None:
    make_folder_plugin(home / "plugins", "guard", """
def register(ctx):
    ctx.register_hook("pre_tool_call", lambda tool_name, args, **kw: {"action": "block", "message": "not now"})
""", "name: guard\n")
    write_config(home, "plugins:\n  enabled: [guard]\n")
    blocked = hermes("tools", "call", "current_time", "{}", check=1)
    assert "not now" in blocked.stdout
    for _ in range(5):
        hermes("pairing", "approve", "irc", "WRONG123", check=1)
    locked = hermes("pairing", "approve", "irc", "WRONG123", check=1).stderr
    assert re.fullmatch(r"hermes: error: approvals on irc are locked after too many wrong codes until "
                        r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d; try again then\n", locked), locked
