"""Opt-in process isolation (`plugins.entries.<id>.isolation: process`): a plugin that ends or
ruins its own process is a failed call, not a dead host. Each way of dying, during a tool, a
command and a hook, is followed by a working call; the time limit kills a child stuck in C; the
memory limit holds; the child has no provider key and does not outlive the host."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hermes_core import CommandFailedError, PluginManager
from tests.helpers import HERMES, ROOT, backdate, hermes, hermes_json, make_folder_plugin, make_venv, pip_install, write_config

FRAGILE = '''
import ctypes, json, os, signal

def _end(how):
    if how == "exit":
        os._exit(3)
    if how == "segv":
        ctypes.string_at(0)  # a segfault in C
    if how == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    if how == "hang":
        ctypes.CDLL(None).sleep(60)  # stuck in C: no Python time limit can abandon it
    if how == "spawn-hang":  # a grandchild that holds the host's stdout and stderr, then stuck
        import subprocess, sys
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
        open(os.path.join(os.environ["HERMES_HOME"], "grandchild.pid"), "w").write(str(child.pid))
        ctypes.CDLL(None).sleep(60)
    if how == "bomb":
        return len(bytearray(1 << 30))  # a gigabyte
    return None

def work(args, **kwargs):
    grown = _end(args.get("how", ""))
    return json.dumps({"pid": os.getpid(), "grown": grown,
                       "env": sorted(k for k in os.environ if k.endswith(("API_KEY", "TOKEN")) or k == "MY_LLM_KEY")})

def gate(tool_name, args, **kwargs):
    if tool_name == "work" and args.get("hook"):
        _end(args["hook"])

def register(ctx):
    ctx.register_tool("work", "fragile", {"name": "work", "parameters": {"type": "object",
                      "properties": {"how": {"type": "string"}, "hook": {"type": "string"}}}}, work)
    ctx.register_command("end", lambda raw: _end(raw) or f"still here in {os.getpid()}")
    ctx.register_hook("pre_tool_call", gate)
'''


@pytest.fixture
def isolated(home: Path) -> Path:
    make_folder_plugin(home / "plugins", "fragile", FRAGILE, "name: fragile\n")
    write_config(home, """\
        model: {provider: custom, model: m, base_url: http://127.0.0.1:9/v1, api_key_env: MY_LLM_KEY}
        plugins:
          enabled: [fragile]
          entries:
            fragile: {isolation: process, memory_mb: 400}
        tools:
          timeouts: {work: 3}
        commands:
          timeout: 3
        """)
    (home / "config.yaml").write_text((home / "config.yaml").read_text().replace(
        "  enabled: [fragile]\n", "  enabled: [fragile]\n  hook_callback_timeout: 3\n"))
    return home


def work(manager: PluginManager, **args: str) -> dict:
    return json.loads(manager.dispatch_tool("work", args))


@pytest.mark.parametrize("how, said", [("exit", "exited with code 3"), ("segv", "was killed by SIGSEGV"),
                                        ("kill", "was killed by SIGKILL"), ("hang", "did not finish within 3 s")])
def test_a_tool_that_ends_its_process_is_a_failed_call_and_the_next_call_works(isolated: Path, how: str,
                                                                              said: str) -> None:
    manager = PluginManager(home=isolated).load()
    first = work(manager)
    assert first["pid"] != os.getpid()
    started = time.monotonic()
    failed = work(manager, how=how)["error"]
    assert failed.startswith("Tool execution failed: PluginProcessError: plugin 'fragile': ") and said in failed
    assert time.monotonic() - started < 30
    again = work(manager)
    assert again["pid"] not in (first["pid"], os.getpid())  # restarted
    with pytest.raises(ProcessLookupError):
        os.kill(first["pid"], 0)  # the dead child was reaped: no zombie left
    manager.remove_plugin("fragile")


@pytest.mark.parametrize("how", ["exit", "segv", "kill", "hang"])
def test_a_command_or_a_hook_that_ends_its_process_is_a_failure_and_the_next_call_works(isolated: Path,
                                                                                       how: str) -> None:
    manager = PluginManager(home=isolated).load()
    with pytest.raises(CommandFailedError, match="plugin 'fragile'"):
        manager.run_command("end", how)
    assert manager.run_command("end").startswith("still here in ")
    gate = manager.dispatch_tool("work", {"hook": how})  # a pre_tool_call gate that fails blocks its call
    assert "pre_tool_call#1 (in its process)" in gate and "plugin 'fragile'" in gate
    if how == "hang":  # the hook runner waits for it: it says how its process was stopped, not that it gave up
        assert "did not finish within 3 s; its process was killed" in gate
    assert "pid" in work(manager)  # in a new process
    manager.remove_plugin("fragile")


def test_the_memory_limit_holds_and_the_child_has_no_provider_key(isolated: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "OPENROUTER_API_KEY", "SOME_API_KEY", "MY_LLM_KEY", "GITHUB_TOKEN"):
        monkeypatch.setenv(name, "secret")
    manager = PluginManager(home=isolated).load()
    assert work(manager)["env"] == ["GITHUB_TOKEN"]  # the plugin's own token stays; LLM keys do not cross
    bomb = work(manager, how="bomb")
    assert bomb["error"] == ("Tool execution failed: MemoryError: plugin 'fragile' ran out of the memory its process "
                             "may use (400 MB: plugins.entries.fragile.memory_mb; raise it or leave it out)")
    assert "pid" in work(manager)
    manager.remove_plugin("fragile")


def test_a_plugin_that_keeps_dying_is_failed_until_reload(isolated: Path) -> None:
    manager = PluginManager(home=isolated).load()
    answers = [manager.dispatch_tool("work", {"how": "exit"}) for _ in range(5)]  # the last one blocked by its gate
    assert "died 4 times within a minute; it is failed until the plugins are reloaded" in answers[-1]
    record = manager.record("fragile")
    assert record.status == "failed" and record.failure.type == "PluginProcessError"
    assert [row["isolated"] for row in manager.doctor().plugins if row["id"] == "fragile"] == [True]
    manager.reload()
    assert "pid" in work(manager)
    manager.remove_plugin("fragile")


HOST = """
import sys
from hermes_core import PluginManager
manager = PluginManager().load()
print(manager.record("fragile").process.pid, flush=True)
sys.stdin.read()
"""


def test_no_child_outlives_the_host_even_after_kill_9(isolated: Path) -> None:
    host = subprocess.Popen([sys.executable, "-c", HOST], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert host.stdout is not None
    child = int(host.stdout.readline())
    os.kill(child, 0)  # alive
    host.kill()
    host.communicate()  # reaped, its pipes closed
    deadline = time.monotonic() + 10
    while True:
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            break
        assert time.monotonic() < deadline, "the isolated plugin's process outlived its host"
        time.sleep(0.1)


def test_a_memory_provider_is_refused_isolation_with_one_line(home: Path) -> None:
    make_folder_plugin(home / "plugins", "notes", '''
from hermes_core import MemoryProvider

class Notes(MemoryProvider):
    name = "notes"
    def is_available(self): return True
    def initialize(self, session_id, **kwargs): pass
    def get_tool_schemas(self): return []

def register(ctx):
    ctx.register_memory_provider(Notes())
''', "name: notes\nkind: memory\n")  # declared, as hermes-core's plugins do (no kind would be Hermes' exclusive)
    write_config(home, "plugins:\n  enabled: [notes]\n  entries:\n    notes: {isolation: process}\n")
    record = PluginManager(home=home).load().record("notes")
    assert record.status == "failed"
    assert "registers providers, which cannot run in a process of its own yet; remove " \
           "plugins.entries.notes.isolation" in str(record.failure)


SHOWS_VERSION = '''
import json, confl

def register(ctx):
    ctx.register_tool("{name}_version", "deps", {{"name": "{name}_version", "parameters": {{"type": "object"}}}},
                      lambda args, **kw: json.dumps({{"confl": confl.VERSION, "from": confl.__file__}}))
'''


def confl_project(root: Path, version: str) -> Path:
    """A local project `confl` of `version` (pip builds its wheel)."""
    folder = root / f"confl-{version}"
    (folder / "confl").mkdir(parents=True)
    (folder / "confl" / "__init__.py").write_text(f"VERSION = {version!r}\n")
    (folder / "pyproject.toml").write_text(
        f'[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n\n'
        f'[project]\nname = "confl"\nversion = "{version}"\n\n[tool.setuptools]\npackages = ["confl"]\n')
    return folder


@pytest.mark.slow
def test_two_plugins_needing_two_versions_of_one_package_each_run_on_their_own_interpreter(
        home: Path, tmp_path: Path) -> None:
    pythons = {}
    for name, version in (("old", "1.0"), ("new", "2.0")):
        python = make_venv(tmp_path / f"venv-{name}")
        pip_install(python, confl_project(tmp_path, version))
        site = next((tmp_path / f"venv-{name}" / "lib").glob("python3*/site-packages"))
        (site / "hermes_core_checkout.pth").write_text(f"{ROOT}\n")  # hermes-core installed there too
        pythons[name] = python
        make_folder_plugin(home / "plugins", name, SHOWS_VERSION.format(name=name), f"name: {name}\n")
    write_config(home, f"""\
        plugins:
          enabled: [old, new]
          entries:
            old: {{isolation: process, python: {pythons['old']}}}
            new: {{isolation: process, python: {pythons['new']}}}
        """)
    manager = PluginManager(home=home).load()
    old, new = (json.loads(manager.dispatch_tool(f"{name}_version", {})) for name in ("old", "new"))
    assert (old["confl"], new["confl"]) == ("1.0", "2.0")
    assert str(tmp_path / "venv-old") in old["from"] and str(tmp_path / "venv-new") in new["from"]
    manager.remove_plugin("old")
    manager.remove_plugin("new")


def test_a_manifest_hint_isolates_unless_the_operator_says_otherwise_and_listings_say_so(home: Path) -> None:
    make_folder_plugin(home / "plugins", "fragile", FRAGILE, "name: fragile\nisolation: process\n")
    write_config(home, "plugins:\n  enabled: [fragile]\n")
    manager = PluginManager(home=home).load()
    assert manager.record("fragile").process is not None and work(manager)["pid"] != os.getpid()
    manager.remove_plugin("fragile")
    (listed,) = [row for row in hermes_json("plugins", "list") if row["id"] == "fragile"]
    assert listed["isolated"] is True
    assert "yes, isolated" in hermes("plugins", "list").stdout
    assert "in a process of their own: fragile" in hermes("plugins", "doctor").stdout
    write_config(home, "plugins:\n  enabled: [fragile]\n  entries:\n    fragile: {isolation: none}\n")
    manager = PluginManager(home=home).load()
    assert manager.record("fragile").process is None and work(manager)["pid"] == os.getpid()
    manager.remove_plugin("fragile")


ASKS_THE_MODEL = '''
import json, os

def ask(args, **kwargs):
    result = ctx_holder[0].llm.complete([{"role": "user", "content": args["question"]}], purpose="answer",
                                        model=args.get("model"))
    return json.dumps({"text": result.text, "model": result.model, "pid": os.getpid(),
                       "tokens": result.usage.total_tokens, "key": os.environ.get("OPENAI_API_KEY")})

ctx_holder = []

def register(ctx):
    ctx_holder.append(ctx)
    ctx.register_tool("ask", "llm", {"name": "ask", "parameters": {"type": "object",
                      "properties": {"question": {"type": "string"}}}}, ask)
'''


def test_ctx_llm_in_an_isolated_plugin_is_made_by_the_host_with_the_hosts_key(
        home: Path, llm_server, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-host-only")
    make_folder_plugin(home / "plugins", "asker", ASKS_THE_MODEL, "name: asker\n")
    write_config(home, f"""\
        model: {{provider: custom, model: scripted-model, base_url: {llm_server.url}}}
        plugins:
          enabled: [asker]
          entries:
            asker: {{isolation: process, llm: {{allowed_providers: [custom]}}}}
        """)
    llm_server.reply("Forty-two.")
    manager = PluginManager(home=home).load()
    answer = json.loads(manager.dispatch_tool("ask", {"question": "The answer?"}))
    assert (answer["text"], answer["model"], answer["key"]) == ("Forty-two.", "scripted-model", None)
    assert answer["pid"] != os.getpid() and answer["tokens"] > 0
    (request,) = llm_server.requests
    assert request.headers["authorization"] == "Bearer sk-host-only"  # the host's credentials, on the host's side
    assert request.body["messages"][-1] == {"role": "user", "content": "The answer?"}
    refused = json.loads(manager.dispatch_tool("ask", {"question": "?", "model": "gpt-huge"}))["error"]
    assert refused.startswith("Tool execution failed: PluginLlmTrustError: ")  # the host's error, the same class
    assert len(llm_server.requests) == 1
    manager.remove_plugin("asker")


def test_what_cannot_cross_as_json_is_an_error_naming_the_call(isolated: Path) -> None:
    manager = PluginManager(home=isolated).load()
    result = json.loads(manager.dispatch_tool("work", {}, handle=object()))["error"]
    assert "tool 'work': its arguments cannot cross to plugin 'fragile''s process as JSON" in result
    assert "pid" in work(manager)  # and the process is fine
    manager.remove_plugin("fragile")


def test_an_isolated_tool_only_plugin_is_started_when_first_needed_with_lazy_activation(isolated: Path) -> None:
    backdate(isolated / "plugins" / "fragile")
    make_folder_plugin(isolated / "plugins", "calm", '''
import json, os

def register(ctx):
    ctx.register_tool("calm", "calm", {"name": "calm", "parameters": {"type": "object"}},
                      lambda args, **kw: json.dumps({"pid": os.getpid()}))
''', "name: calm\nisolation: process\n")
    backdate(isolated / "plugins" / "calm")
    (isolated / "config.yaml").write_text((isolated / "config.yaml").read_text().replace("[fragile]", "[fragile, calm]"))
    first = PluginManager(home=isolated, lazy=True).load()  # its registrations remembered
    first.remove_plugin("calm")
    first.remove_plugin("fragile")
    manager = PluginManager(home=isolated, lazy=True).load()
    record = manager.record("calm")
    assert record.lazy and record.process is None  # no process until a tool of it is called
    pid = json.loads(manager.dispatch_tool("calm", {}))["pid"]
    assert pid != os.getpid() and manager.record("calm").process.pid == pid
    manager.remove_plugin("calm")
    manager.remove_plugin("fragile")


CALLS_MCP = '''
import json

def register(ctx):
    ctx.register_tool("ask_mcp", "mcp", {"name": "ask_mcp", "parameters": {"type": "object"}},
                      lambda args, **kw: json.dumps(ctx.call_mcp("files", "read", {"path": "a"})))
'''


class Recorder:
    """A host's MCP capability that notes who asked, in which process."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, str, dict, int]] = []

    def call_mcp(self, plugin_id: str, server: str, tool: str, arguments: dict, timeout: float = 30) -> dict:
        self.calls.append((plugin_id, server, tool, arguments, os.getpid()))
        return {"ok": True, "result": {"served_by": os.getpid()}}


def test_ctx_call_mcp_in_an_isolated_plugin_is_served_by_the_host(home: Path) -> None:
    make_folder_plugin(home / "plugins", "mcpuser", CALLS_MCP, "name: mcpuser\n")
    write_config(home, "plugins:\n  enabled: [mcpuser]\n  entries:\n    mcpuser: {isolation: process}\n")
    manager = PluginManager(home=home)
    recorder = Recorder()
    manager.serve("mcp", recorder)
    answer = json.loads(manager.load().dispatch_tool("ask_mcp", {}))
    assert answer == {"ok": True, "result": {"served_by": os.getpid()}}
    assert recorder.calls == [("mcpuser", "files", "read", {"path": "a"}, os.getpid())]
    manager.remove_plugin("mcpuser")


SETTLES = '''
import asyncio, json, os
from pathlib import Path

async def _note(path):
    Path(path).write_text(str(os.getpid()))

def register(ctx):
    ctx.spawn_task(_note(os.path.join(os.environ["HERMES_HOME"], "task.txt")))

    def remember(args, **kwargs):
        ctx.set_config("colour", args["colour"])
        ctx.logger.warning("remembered %s", args["colour"])
        return json.dumps({"colour": ctx.get_config("colour"), "pid": os.getpid()})

    ctx.register_tool("remember", "prefs", {"name": "remember", "parameters": {"type": "object",
                      "properties": {"colour": {"type": "string"}}}}, remember)
'''


def test_the_whole_ctx_works_in_the_child_settings_logger_and_tasks(home: Path) -> None:
    make_folder_plugin(home / "plugins", "prefs", SETTLES, "name: prefs\nisolation: process\n")
    write_config(home, "plugins:\n  enabled: [prefs]\n")
    manager = PluginManager(home=home).load()
    answer = json.loads(manager.dispatch_tool("remember", {"colour": "teal"}))
    assert answer["colour"] == "teal" and answer["pid"] != os.getpid()
    assert "colour: teal" in (home / "config.yaml").read_text()  # the same config.yaml, written by the child
    deadline = time.monotonic() + 10
    while not (home / "task.txt").exists():
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert (home / "task.txt").read_text() == str(answer["pid"])  # its spawn_task ran in its process
    manager.remove_plugin("prefs")


def test_a_wrong_isolation_value_is_one_line_naming_the_field(home: Path) -> None:
    make_folder_plugin(home / "plugins", "fragile", FRAGILE, "name: fragile\nisolation: thread\n")
    write_config(home, "plugins:\n  enabled: [fragile]\n")
    record = PluginManager(home=home).load().record("fragile")
    assert record.status == "failed" and "`isolation` is process or none, not 'thread'" in str(record.failure)
    (home / "plugins" / "fragile" / "plugin.yaml").write_text("name: fragile\n")
    write_config(home, "plugins:\n  enabled: [fragile]\n  entries:\n    fragile: {isolation: thread}\n")
    result = hermes("tools", "list", check=1)
    assert result.stderr.strip().splitlines()[-1].startswith(
        "hermes: error: plugins.entries.fragile.isolation in ") and "must be process or none" in result.stderr


def test_a_killed_child_takes_what_it_started_with_it(isolated: Path) -> None:
    """A plugin that started a process and then hung past its time limit: the grandchild dies with
    the child, so a caller reading the command's output is not held for minutes."""
    started = time.monotonic()
    done = subprocess.run([str(HERMES), "tools", "call", "work", '{"how": "spawn-hang"}'], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 1 and "did not finish within 3 s" in done.stdout + done.stderr
    assert time.monotonic() - started < 30
    grandchild = int((isolated / "grandchild.pid").read_text())
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(grandchild, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    raise AssertionError(f"the grandchild {grandchild} outlived the killed child")


UNSENDABLE = '''
def half(args, **kwargs):
    return "half \\ud800 a pair"  # a lone surrogate: UTF-8 cannot encode it as it is

def check(tool_name, args, **kwargs):
    if args.get("block"):
        return {"action": "block", "message": "blocked \\udc80 here"}
    return None

def register(ctx):
    ctx.register_tool("half", "unsendable", {"name": "half", "parameters": {"type": "object",
                      "properties": {"block": {"type": "boolean"}}}}, half)
    ctx.register_hook("pre_tool_call", check)
'''


def test_an_isolated_plugins_answer_that_utf8_cannot_encode_crosses_at_once(home: Path) -> None:
    make_folder_plugin(home / "plugins", "unsendable", UNSENDABLE, "name: unsendable\n")
    write_config(home, """\
        plugins:
          enabled: [unsendable]
          entries:
            unsendable: {isolation: process}
          hook_callback_timeout: 20
        tools:
          timeouts: {half: 20}
        """)
    manager = PluginManager(home=home).load()
    try:  # before, each call waited for its time limit: the answer never left the plugin's process
        assert manager.dispatch_tool("half", {}) == "half \ufffd a pair"
        blocked = manager.dispatch_tool("half", {"block": True})  # a hook's answer too
        assert blocked == "blocked \ufffd here"  # said to the model as a tool's result is: encodable
        assert manager.dispatch_tool("half", {}) == "half \ufffd a pair"  # the process goes on
    finally:
        manager.close()
