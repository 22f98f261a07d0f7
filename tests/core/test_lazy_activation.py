"""Lazy activation: a plugin whose registrations at its last import were only tools and commands is
imported when one of them is first needed, and behaves as if it had loaded at start.

Every plugin here appends its name to `$HERMES_HOME/imports.txt` when it is imported, so each test
counts the imports of a process (`hermes` subprocesses against the scripted model, or a lazy
`PluginManager`). Plugin files are back-dated: files modified in the last two seconds are not
remembered (their times cannot show the next edit).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hermes_core import CommandFailedError, PluginLoadError, PluginManager
from hermes_core.testing import tool_call
from tests.helpers import backdate, hermes, hermes_json, llm_config, make_folder_plugin

TOOLS = '''
import json, os
from pathlib import Path

with (Path(os.environ["HERMES_HOME"]) / "imports.txt").open("a") as _marker:
    _marker.write("{name}\\n")
WORD = "{word}"

def register(ctx):
    ctx.register_tool("{name}_echo", "{name}", {{"name": "{name}_echo", "description": "Echo with a word",
                      "parameters": {{"type": "object", "properties": {{"text": {{"type": "string"}}}},
                                     "required": ["text"]}}}},
                      lambda args, **kw: json.dumps({{"echo": args["text"], "word": WORD}}))
    ctx.register_command("{name}-hi", lambda raw: f"hi {{raw}} from {name}", description="Say hi")
'''

HOOKS = '''
import json, os
from pathlib import Path

HOME = Path(os.environ["HERMES_HOME"])
with (HOME / "imports.txt").open("a") as _marker:
    _marker.write("hooks\\n")

def _note(name):
    def note(**kwargs):
        with (HOME / "hooks.txt").open("a") as out:
            out.write(name + " " + str(kwargs.get("tool_name", "")) + "\\n")
    return note

def register(ctx):
    ctx.register_hook("pre_llm_call", _note("pre_llm_call"))
    ctx.register_hook("pre_tool_call", _note("pre_tool_call"))
    ctx.register_tool("hooks_tool", "hooks", {"name": "hooks_tool", "parameters": {"type": "object"}},
                      lambda args, **kw: "{}")
'''


def tool_plugin(home: Path, name: str, word: str = "one") -> Path:
    folder = make_folder_plugin(home / "plugins", name, TOOLS.format(name=name, word=word), f"name: {name}\n")
    backdate(folder)
    return folder


def hook_plugin(home: Path) -> None:
    backdate(make_folder_plugin(home / "plugins", "hooks", HOOKS, "name: hooks\n"))


def imports(home: Path) -> list[str]:
    """The plugins imported since the last call (the marker file is emptied)."""
    path = home / "imports.txt"
    names = path.read_text().split() if path.exists() else []
    path.write_text("")
    return names


def enable(home: Path, *ids: str, extra: str = "") -> None:
    (home / "config.yaml").write_text(f"plugins:\n  enabled: [{', '.join(ids)}]\n{extra}", encoding="utf-8")


def lazy_manager(home: Path) -> PluginManager:
    return PluginManager(home=home, lazy=True).load()


# -- through the reference host ---------------------------------------------------------------


def test_a_run_without_tool_calls_imports_no_tool_only_plugin_and_still_offers_its_tools(home: Path, llm_server) -> None:
    tool_plugin(home, "alpha")
    tool_plugin(home, "beta")
    hook_plugin(home)
    llm_config(home, llm_server.url, "plugins:\n  enabled: [alpha, beta, hooks]\n")
    llm_server.default = None
    for _ in range(2):
        llm_server.reply("Hello.")
    assert hermes("run", "hello").stdout.strip() == "Hello."
    assert sorted(imports(home)) == ["alpha", "beta", "hooks"]  # no memory yet: all imported, then remembered
    assert hermes("run", "hello").stdout.strip() == "Hello."
    assert imports(home) == ["hooks"]  # the hook plugin at start, the tool-only ones not at all
    first, second = (request.body for request in llm_server.requests)
    assert first["tools"] == second["tools"]  # the model is offered the same tools, from the memory
    assert {"alpha_echo", "beta_echo", "hooks_tool"} <= {t["function"]["name"] for t in second["tools"]}
    assert (home / "hooks.txt").read_text().split("\n").count("pre_llm_call ") == 2  # hooks fired from the start


def test_a_tool_call_imports_exactly_its_plugin_inside_the_hooks(home: Path, llm_server) -> None:
    tool_plugin(home, "alpha")
    tool_plugin(home, "beta")
    hook_plugin(home)
    llm_config(home, llm_server.url, "plugins:\n  enabled: [alpha, beta, hooks]\n")
    hermes("tools", "list")  # remembered
    imports(home)
    llm_server.reply("", tool_calls=[tool_call("beta_echo", {"text": "ping"})])
    llm_server.reply("Done.")
    assert hermes("run", "echo ping").stdout.strip() == "Done."
    assert imports(home) == ["hooks", "beta"]
    tool_message = llm_server.requests[-1].body["messages"][-1]
    assert json.loads(tool_message["content"]) == {"echo": "ping", "word": "one"}
    assert "pre_tool_call beta_echo" in (home / "hooks.txt").read_text()  # the gate ran before the import
    result = hermes("tools", "call", "alpha_echo", '{"text": "x"}')
    assert json.loads(result.stdout) == {"echo": "x", "word": "one"}
    assert imports(home) == ["hooks", "alpha"]


def test_plugins_lazy_false_and_a_plugins_own_lazy_false_import_at_start(home: Path) -> None:
    tool_plugin(home, "alpha")
    tool_plugin(home, "beta")
    enable(home, "alpha", "beta", extra="  entries:\n    beta: {lazy: false}\n")
    hermes("tools", "list")
    imports(home)
    hermes("tools", "list")
    assert imports(home) == ["beta"]
    enable(home, "alpha", "beta", extra="  lazy: false\n")
    hermes("tools", "list")
    assert sorted(imports(home)) == ["alpha", "beta"]


def test_doctor_imports_everything_and_says_which_plugins_are_imported_when_first_needed(home: Path) -> None:
    tool_plugin(home, "alpha")
    hook_plugin(home)
    enable(home, "alpha", "hooks")
    hermes("tools", "list")
    imports(home)
    report = hermes_json("plugins", "doctor")
    assert sorted(imports(home)) == ["alpha", "hooks"]
    rows = {row["id"]: row["lazy"] for row in report["plugins"]}
    assert (rows["alpha"], rows["hooks"]) == (True, False)
    lines = hermes("plugins", "doctor").stdout.splitlines()
    (said,) = [line for line in lines if line.startswith("imported when first needed")]
    assert "alpha" in said.split(": ")[1].split(", ") and "hooks" not in said


def test_a_plugins_cli_command_imports_it_when_run(home: Path) -> None:
    folder = tool_plugin(home, "alpha")
    code = (folder / "__init__.py").read_text() + '''
def _setup(parser):
    parser.add_argument("who")

def _greet(args):
    print(f"greetings, {args.who}")
    return 0

_register = register
def register(ctx):
    _register(ctx)
    ctx.register_cli_command("greet", "Greet someone", _setup, _greet)
'''
    (folder / "__init__.py").write_text(code)
    backdate(folder)
    enable(home, "alpha")
    hermes("tools", "list")
    imports(home)
    assert hermes("greet", "world").stdout.strip() == "greetings, world"
    assert imports(home) == ["alpha"]


# -- a changed, removed or failing plugin ----------------------------------------------------------


def test_an_edit_within_the_same_second_is_imported_again_never_served_stale(home: Path) -> None:
    folder = tool_plugin(home, "alpha", word="one")
    enable(home, "alpha")
    hermes("tools", "list")
    assert imports(home) == ["alpha"]
    hermes("tools", "list")
    assert imports(home) == []
    init = folder / "__init__.py"
    before = init.stat().st_mtime_ns
    init.write_text(init.read_text().replace('"Echo with a word"', '"Echo with a verb"'))  # the same size
    os.utime(init, ns=(before + 1000, before + 1000))  # and the same second
    listed = hermes_json("tools", "list")
    assert imports(home) == ["alpha"]
    assert any("verb" in json.dumps(row) for row in listed)
    hermes("tools", "list")
    assert imports(home) == []


def test_a_removed_plugin_is_gone_and_an_added_one_is_imported(home: Path) -> None:
    alpha = tool_plugin(home, "alpha")
    enable(home, "alpha", "beta")
    hermes("tools", "list")
    imports(home)
    for path in sorted(alpha.rglob("*"), reverse=True):
        path.unlink() if path.is_file() else path.rmdir()
    alpha.rmdir()
    tool_plugin(home, "beta")
    names = {row["name"] for row in hermes_json("tools", "list")}
    assert "alpha_echo" not in names and "beta_echo" in names
    assert imports(home) == ["beta"]


BREAKS = '''
import os
from pathlib import Path
if (Path(os.environ["HERMES_HOME"]) / "broken").exists():
    raise RuntimeError("the SDK is gone")
'''


def test_a_plugin_that_fails_when_first_needed_says_so_and_is_imported_at_the_next_start(home: Path) -> None:
    folder = tool_plugin(home, "alpha")
    (folder / "__init__.py").write_text(BREAKS + (folder / "__init__.py").read_text())
    backdate(folder)
    enable(home, "alpha")
    hermes("tools", "list")
    imports(home)
    (home / "broken").write_text("")
    probe = """
import json
from hermes_core import PluginManager
manager = PluginManager(lazy=True).load()
print(json.dumps([manager.record("alpha").lazy, manager.dispatch_tool("alpha_echo", {"text": "x"}),
                  [row["error"] for row in manager.doctor().plugins if row["id"] == "alpha"][0]]))
"""
    lazy, result, error = json.loads(subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                                                    check=True).stdout)
    line = "plugin 'alpha' failed to load: RuntimeError: the SDK is gone (in import"
    assert lazy and line in json.loads(result)["error"] and error.startswith("RuntimeError: the SDK is gone")
    assert imports(home) == []  # it raised before its marker
    (home / "broken").unlink()
    hermes("tools", "list")
    assert imports(home) == ["alpha"]  # forgotten: imported at start (and remembered again)
    hermes("tools", "list")
    assert imports(home) == []


CHANGING = '''
import json, os
from pathlib import Path
HOME = Path(os.environ["HERMES_HOME"])

def register(ctx):
    names = (HOME / "names.txt").read_text().split()  # a file outside the plugin: not in its key
    for name in names:
        ctx.register_tool(name, "changing", {"name": name, "parameters": {"type": "object"}}, lambda args, **kw: "{}")
'''


def test_a_plugin_registering_other_than_remembered_fails_that_call_and_is_imported_at_start_next(home: Path) -> None:
    backdate(make_folder_plugin(home / "plugins", "changing", CHANGING, "name: changing\n"))
    (home / "names.txt").write_text("one two")
    enable(home, "changing")
    lazy_manager(home)
    (home / "names.txt").write_text("one three")
    manager = lazy_manager(home)
    assert manager.record("changing").lazy
    stand_in = manager.tools.get("two").handler  # what a host calling a handler directly holds
    result = json.loads(manager.dispatch_tool("one", {}))
    assert "registered one, three where its last import registered one, two" in result["error"]
    record = manager.record("changing")
    assert record.status == "failed" and record.failure.type == "RegistrationChanged"
    assert {tool.name for tool in manager.tools} & {"one", "two", "three"} == set()  # rolled back like any failed load
    with pytest.raises(PluginLoadError, match="plugin 'changing' failed to load: RegistrationChanged"):
        stand_in({})
    assert not lazy_manager(home).record("changing").lazy  # imported at start: not deferred


# -- the public API -------------------------------------------------------------------------------


def test_a_lazy_command_imports_its_plugin_and_runs_sync_and_async(home: Path) -> None:
    tool_plugin(home, "alpha")
    enable(home, "alpha")
    lazy_manager(home)
    imports(home)
    manager = lazy_manager(home)
    assert manager.record("alpha").lazy and imports(home) == []
    assert [c.name for c in manager.commands] == ["alpha-hi"] and manager.commands.get("alpha-hi").description == "Say hi"
    assert manager.run_command("alpha-hi", "bob") == "hi bob from alpha"
    assert imports(home) == ["alpha"] and not manager.record("alpha").lazy
    again = lazy_manager(home)
    import asyncio

    assert asyncio.run(again.arun_command("alpha-hi", "ann")) == "hi ann from alpha"
    assert asyncio.run(again.adispatch_tool("alpha_echo", {"text": "y"})) == '{"echo": "y", "word": "one"}'
    assert imports(home) == ["alpha"]  # once for both


def test_a_failing_lazy_command_is_a_command_failure(home: Path) -> None:
    folder = tool_plugin(home, "alpha")
    (folder / "__init__.py").write_text(BREAKS + (folder / "__init__.py").read_text())
    backdate(folder)
    enable(home, "alpha")
    lazy_manager(home)
    (home / "broken").write_text("")
    with pytest.raises(CommandFailedError, match="failed to load: RuntimeError: the SDK is gone"):
        lazy_manager(home).run_command("alpha-hi")


def test_plugins_with_hooks_tasks_or_check_fns_are_imported_at_start(home: Path) -> None:
    hook_plugin(home)
    backdate(make_folder_plugin(home / "plugins", "checked", '''
def register(ctx):
    ctx.register_tool("checked", "c", {"name": "checked", "parameters": {"type": "object"}}, lambda a, **k: "{}",
                      check_fn=lambda: True)
''', "name: checked\n"))
    backdate(make_folder_plugin(home / "plugins", "tasks", '''
import asyncio
async def _forever():
    await asyncio.sleep(3600)

def register(ctx):
    ctx.register_tool("tasks", "t", {"name": "tasks", "parameters": {"type": "object"}}, lambda a, **k: "{}")
    ctx.spawn_task(_forever())
''', "name: tasks\n"))
    enable(home, "hooks", "checked", "tasks")
    lazy_manager(home)
    manager = lazy_manager(home)
    mine = ("hooks", "checked", "tasks")
    assert [manager.record(plugin_id).lazy for plugin_id in mine] == [False, False, False]
    assert [row["lazy"] for row in manager.doctor().plugins if row["id"] in mine] == [False, False, False]


def test_a_host_that_does_not_opt_in_imports_everything_and_writes_no_memory(home: Path) -> None:
    tool_plugin(home, "alpha")
    enable(home, "alpha")
    for _ in range(2):
        assert not PluginManager(home=home).load().record("alpha").lazy
    assert imports(home) == ["alpha", "alpha"]
    assert not (home / ".cache" / "registrations.json").exists()


OVERRIDES = '''
def register(ctx):
    ctx.register_tool("sundial", "sun", {"name": "sundial", "parameters": {"type": "object"}},
                      lambda args, **kw: "{\\"time\\": \\"always noon\\"}", override=True)
'''
SUNDIAL = '''
def register(ctx):
    ctx.register_tool("sundial", "sun", {"name": "sundial", "parameters": {"type": "object"}},
                      lambda args, **kw: "{\\"time\\": \\"by the sun\\"}")
'''


def test_the_override_gate_and_provenance_hold_as_if_it_had_loaded_at_start(home: Path) -> None:
    backdate(make_folder_plugin(home / "plugins", "anchor", SUNDIAL, "name: anchor\n"))
    backdate(make_folder_plugin(home / "plugins", "noon", OVERRIDES, "name: noon\n"))
    granted = "  entries:\n    noon: {allow_tool_override: true}\n"
    enable(home, "anchor", "noon", extra=granted)
    lazy_manager(home)
    manager = lazy_manager(home)
    assert manager.record("noon").lazy and manager.tools.get("sundial").plugin_id == "noon"
    assert manager.dispatch_tool("sundial", {}) == '{"time": "always noon"}'
    enable(home, "anchor", "noon")  # the grant withdrawn: refused, as at an eager start
    eager = PluginManager(home=home).load().record("noon")
    lazy = lazy_manager(home).record("noon")
    assert lazy.status == eager.status == "failed" and str(lazy.failure) == str(eager.failure)
    assert "allow_tool_override" in str(lazy.failure)


# -- the memory file --------------------------------------------------------------------------------


def test_concurrent_processes_keep_every_plugin_and_a_damaged_file_is_rewritten(home: Path) -> None:
    names = [f"p{i}" for i in range(6)]
    for name in names:
        tool_plugin(home, name)
    code = "import sys\nfrom hermes_core import Config, PluginManager\n" \
        "PluginManager(lazy=True, config=Config({'plugins': {'enabled': [sys.argv[1]]}})).load()"
    # each process enables another plugin, so each writes its own entry, all at once
    procs = [subprocess.Popen([sys.executable, "-c", code, name]) for name in names]
    assert all(proc.wait(timeout=120) == 0 for proc in procs)
    cache = home / ".cache" / "registrations.json"
    assert set(json.loads(cache.read_text())["plugins"]) >= set(names)
    cache.write_text('{"format": 1, "plugins": {"p0": {"key": "x"')  # torn by hand
    enable(home, *names)
    imports(home)
    manager = lazy_manager(home)
    assert not any(manager.record(name).lazy for name in names)  # no memory: imported, and written whole again
    assert sorted(imports(home)) == sorted(names)
    manager = lazy_manager(home)
    assert all(manager.record(name).lazy for name in names)
    assert imports(home) == []
    for damaged in (b"[" * 100_000 + b"]" * 100_000, b'\xef\xbb\xbf{"format": 1, "plugins": {"\xff": 1}}'):
        cache.write_bytes(damaged)  # nested past the parser; a BOM and a byte that is not UTF-8
        manager = lazy_manager(home)
        assert all(manager.record(name).status == "ok" and not manager.record(name).lazy for name in names)
        assert sorted(imports(home)) == sorted(names) and json.loads(cache.read_text())["format"] == 1
