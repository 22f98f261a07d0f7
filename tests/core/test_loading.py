"""Loading: both plugin styles, opt-in enabling, transactional registration, reload."""

from __future__ import annotations

import json
import sys
import textwrap
import types
from pathlib import Path

import pytest

from hermes_core import Command, PluginManager, hookimpl
from tests.helpers import hermes, hermes_json, install_dist, make_folder_plugin, write_config
from tests.helpers.shims import SHIM  # hermes-local-memory's shim

SCHEMA = '{"name": "%s", "description": "d", "parameters": {"type": "object", "properties": {}}}'


def tool_code(name: str, extra: str = "") -> str:
    return f"""
import json
def register(ctx):
    ctx.register_tool({name!r}, "ts", {SCHEMA % name}, lambda args, **kw: json.dumps({{"from": ctx.plugin_id}}))
{extra}
"""


def enable(home: Path, *ids: str, extra: str = "") -> None:
    write_config(home, f"plugins:\n  enabled: [{', '.join(ids)}]\n{extra}")


def test_hermes_style_register_function(home: Path) -> None:
    make_folder_plugin(home / "plugins", "alpha", tool_code("alpha_tool"))
    enable(home, "alpha")
    manager = PluginManager().load()
    assert manager.record("alpha").status == "ok"
    assert json.loads(manager.dispatch_tool("alpha_tool", {})) == {"from": "alpha"}
    assert manager.tools.get("alpha_tool").plugin_id == "alpha"


def test_pluggy_style_registration_hooks_return_objects(home: Path) -> None:
    make_folder_plugin(home / "plugins", "beta", f"""
from hermes_core import Command, Tool, hookimpl

@hookimpl
def register_tool(ctx):
    return [Tool("b1", "ts", {SCHEMA % "b1"}, lambda args, **kw: "1"),
            Tool("b2", "ts", {SCHEMA % "b2"}, lambda args, **kw: "2")]

@hookimpl
def register_command(ctx):
    return Command("/Beta Cmd", lambda raw: "beta:" + raw)

@hookimpl
def register_memory_provider(ctx):
    return None

@hookimpl
def on_session_start(session_id):
    import builtins
    builtins.BETA_STARTED = session_id
""")
    enable(home, "beta")
    manager = PluginManager().load()
    record = manager.record("beta")
    assert record.status == "ok", record.failure
    assert record.registered == {"tools": ["b1", "b2"], "commands": ["beta-cmd"], "hooks": ["on_session_start"]}
    assert manager.dispatch_tool("b2", {}) == "2"
    assert manager.run_command("/beta-cmd", "x") == "beta:x"
    assert manager.commands.get("beta-cmd").plugin_id == "beta"
    manager.lifecycle.on_session_start(session_id="s-1", model="m", platform="cli").run()
    import builtins

    assert builtins.BETA_STARTED == "s-1"  # type: ignore[attr-defined]


def test_both_styles_mixed_in_one_module(home: Path) -> None:
    make_folder_plugin(home / "plugins", "mixed", tool_code("plain_tool", f"""
from hermes_core import Tool, hookimpl

@hookimpl
def register_tool(ctx):
    return Tool("hooked_tool", "ts", {SCHEMA % "hooked_tool"}, lambda args, **kw: "hooked")
"""))
    enable(home, "mixed")
    manager = PluginManager().load()
    assert sorted(manager.record("mixed").registered["tools"]) == ["hooked_tool", "plain_tool"]


def test_each_registration_hook_gets_its_own_plugins_ctx(home: Path) -> None:
    code = """
from hermes_core import Tool, hookimpl

@hookimpl
def register_tool(ctx):
    name = ctx.plugin_id + "_t"
    return Tool(name, "ts", {"name": name, "parameters": {"type": "object"}}, lambda args, **kw: ctx.plugin_id)
"""
    make_folder_plugin(home / "plugins", "one", code)
    make_folder_plugin(home / "plugins", "two", code)
    enable(home, "one", "two")
    manager = PluginManager().load()
    assert manager.dispatch_tool("one_t", {}) == "one"
    assert manager.dispatch_tool("two_t", {}) == "two"


def test_entry_point_plugin_loads_when_enabled(home: Path, site: Path) -> None:
    install_dist(site, "hermes-gamma", {"gamma": "hermes_gamma"}, {"hermes_gamma": tool_code("gamma_tool")})
    manager = PluginManager().load()
    assert "gamma" not in {r.id for r in manager.records}  # opt-in
    enable(home, "gamma")
    manager.reload()
    assert manager.record("gamma").status == "ok"
    assert json.loads(manager.dispatch_tool("gamma_tool", {})) == {"from": "gamma"}


def test_entry_point_to_a_register_function(home: Path, site: Path) -> None:
    install_dist(site, "hermes-delta", {"delta": "hermes_delta:setup"},
                 {"hermes_delta": tool_code("delta_tool").replace("def register", "def setup")})
    enable(home, "delta")
    assert PluginManager().load().record("delta").registered == {"tools": ["delta_tool"]}


def test_builtins_load_unless_disabled(home: Path) -> None:
    assert PluginManager().load().record("clock").status == "ok"
    write_config(home, "plugins:\n  disabled: [clock]\n")
    manager = PluginManager().load()
    assert "clock" not in {r.id for r in manager.records}
    assert manager.tools.get("current_time") is None


def test_disabled_wins_over_enabled(home: Path) -> None:
    make_folder_plugin(home / "plugins", "alpha", tool_code("alpha_tool"))
    write_config(home, "plugins:\n  enabled: [alpha]\n  disabled: [alpha]\n")
    assert PluginManager().load().tools.get("alpha_tool") is None


def test_ctx_gives_id_logger_readonly_settings_and_home(home: Path) -> None:
    make_folder_plugin(home / "plugins", "cfg", """
import builtins
def register(ctx):
    builtins.CFG_CTX = ctx
""")
    enable(home, "cfg", extra="  entries:\n    cfg:\n      settings:\n        depth: 3\n        names: [a, b]\n")
    PluginManager().load()
    import builtins

    ctx = builtins.CFG_CTX  # type: ignore[attr-defined]
    assert ctx.plugin_id == "cfg"
    assert ctx.logger.name == "hermes.plugins.cfg"
    assert ctx.hermes_home == home
    assert ctx.config["depth"] == 3 and ctx.config["names"] == ("a", "b")
    with pytest.raises(TypeError):
        ctx.config["depth"] = 4


FAILING = {
    "import_error": ("import nonexistent_module_xyz\n" + tool_code("t"), "ModuleNotFoundError", "import "),
    "register_raises": (tool_code("t").replace("def register(ctx):\n",
                        "def register(ctx):\n    ctx.register_hook('on_session_start', print)\n    ctx.register_command('c', print)\n"
                        "    ctx.register_provider('tts', lambda: None, name='half-registered')\n")
                        + "    raise RuntimeError('boom after registering')\n",
                        "RuntimeError", "register(ctx)"),
    "invalid_schema": (tool_code("t") + "    ctx.register_tool('bad', 'ts', {'name': 'bad', 'parameters': {'type': 'object', 'properties': 3}}, print)\n",
                       "ToolSchemaError", "ctx.register_tool('bad')"),
    "override_without_grant": (tool_code("t") + "    ctx.register_tool('anchored', 'mine', {'name': 'anchored'}, print, override=True)\n",
                               "ToolOverrideError", "ctx.register_tool('anchored')"),
    "system_exit": (tool_code("t") + "    raise SystemExit(3)\n", "SystemExit", "register(ctx)"),
}


@pytest.mark.parametrize("case", sorted(FAILING))
def test_a_failing_plugin_rolls_back_everything_and_others_load(home: Path, case: str) -> None:
    code, error_type, call = FAILING[case]
    make_folder_plugin(home / "plugins", "anchor", tool_code("anchored"))  # loads first: its tool is another's
    make_folder_plugin(home / "plugins", "broken", code)
    make_folder_plugin(home / "plugins", "healthy", tool_code("healthy_tool"))
    enable(home, "anchor", "broken", "healthy")
    manager = PluginManager().load()
    record = manager.record("broken")
    assert record.status == "failed"
    assert record.failure.type == error_type
    assert record.failure.call.startswith(call)
    assert record.registered == {}
    assert manager.tools.get("t") is None and manager.tools.get("bad") is None
    assert manager.commands.get("c") is None
    assert "half-registered" not in manager.slots.names("tts")
    assert not [cb for cb in manager.hooks.callbacks("on_session_start") if cb.plugin_id == "broken"]
    assert manager.tools.get("anchored").plugin_id == "anchor"  # the override did not stick
    assert manager.record("healthy").status == "ok"
    assert manager.failures()["broken"] is record.failure


def test_failure_names_the_plugin_and_the_tool(home: Path) -> None:
    make_folder_plugin(home / "plugins", "broken", FAILING["invalid_schema"][0])
    enable(home, "broken")
    failure = PluginManager().load().record("broken").failure
    assert "plugin 'broken'" in failure.message and "'bad'" in failure.message
    assert "properties" in failure.message


def test_granted_override_replaces_and_rollback_restores(home: Path) -> None:
    override = "    ctx.register_tool('anchored', 'mine', {'name': 'anchored'}, lambda a, **k: %r, override=True)\n"
    make_folder_plugin(home / "plugins", "anchor", tool_code("anchored"))
    make_folder_plugin(home / "plugins", "over", tool_code("t") + override % "mine")
    make_folder_plugin(home / "plugins", "over_late", tool_code("t2") + override % "late" + "    raise ValueError('late')\n")
    grants = "  entries:\n    over:\n      allow_tool_override: true\n    over_late:\n      allow_tool_override: true\n"
    enable(home, "anchor", "over", "over_late", extra=grants)
    manager = PluginManager().load()
    assert manager.record("over_late").status == "failed"
    assert manager.tools.get("anchored").plugin_id == "over"  # restored to what over_late replaced
    assert manager.dispatch_tool("anchored", {}) == "mine"
    write_config(home, "plugins:\n  enabled: [anchor, over, over_late]\n")  # grants withdrawn
    manager = PluginManager().load()
    assert manager.record("over").failure.type == "ToolOverrideError"
    assert "plugins.entries.over.allow_tool_override: true" in manager.record("over").failure.message
    assert manager.tools.get("anchored").plugin_id == "anchor"


def test_reregistering_a_name_in_the_same_toolset_is_not_a_silent_overwrite(home: Path) -> None:
    make_folder_plugin(home / "plugins", "a1", tool_code("shared"))
    make_folder_plugin(home / "plugins", "a2", tool_code("shared"))
    enable(home, "a1", "a2")
    manager = PluginManager().load()
    assert manager.record("a1").status == "ok"
    assert manager.record("a2").failure.type == "ToolOverrideError"
    assert "plugin 'a1'" in manager.record("a2").failure.message


def test_reload_retries_failed_plugins(home: Path) -> None:
    make_folder_plugin(home / "plugins", "flaky", "import missing_dependency_abc\n")
    enable(home, "flaky")
    manager = PluginManager().load()
    assert manager.record("flaky").status == "failed"
    manager.load()
    assert manager.record("flaky").status == "failed"  # load() does not retry
    make_folder_plugin(home / "plugins", "flaky", tool_code("flaky_tool"))
    manager.reload()
    assert manager.record("flaky").status == "ok"
    assert manager.tools.get("flaky_tool") is not None


def test_reload_unloads_plugins_disabled_since(home: Path) -> None:
    make_folder_plugin(home / "plugins", "alpha", tool_code("alpha_tool"))
    enable(home, "alpha")
    manager = PluginManager().load()
    write_config(home, "plugins:\n  disabled: [alpha]\n")
    manager.reload()
    assert manager.tools.get("alpha_tool") is None


def test_load_is_idempotent(home: Path, tmp_path: Path) -> None:
    counter = tmp_path / "count"
    make_folder_plugin(home / "plugins", "counted", f"""
from pathlib import Path
p = Path({str(counter)!r})
p.write_text(str(int(p.read_text()) + 1) if p.exists() else "1")
def register(ctx):
    pass
""")
    enable(home, "counted")
    manager = PluginManager()
    manager.load()
    manager.load()
    assert counter.read_text() == "1"


def test_importing_hermes_core_loads_nothing(home: Path, tmp_path: Path) -> None:
    marker = tmp_path / "imported"
    make_folder_plugin(home / "plugins", "lazy", f"open({str(marker)!r}, 'w').close()\ndef register(ctx): pass\n")
    enable(home, "lazy")
    manager = PluginManager()
    assert not marker.exists()
    manager.discover()
    assert not marker.exists()
    manager.load()
    assert marker.exists()


def test_asking_for_tools_or_firing_a_hook_loads_first(home: Path) -> None:
    assert PluginManager().tools.get("current_time") is not None
    make_folder_plugin(home / "plugins", "hooky", """
import builtins
def register(ctx):
    ctx.register_hook("on_session_reset", lambda session_id: setattr(builtins, "HOOKY", session_id))
""")
    enable(home, "hooky")
    PluginManager().lifecycle.on_session_reset(session_id="r1", platform="cli", reason="new_session").run()
    import builtins

    assert builtins.HOOKY == "r1"  # type: ignore[attr-defined]


def test_incompatible_plugin_is_reported_and_not_imported(home: Path, tmp_path: Path) -> None:
    marker = tmp_path / "imported"
    make_folder_plugin(home / "plugins", "future", f"open({str(marker)!r}, 'w').close()\n",
                       "requires_hermes: '>=99'\n")
    enable(home, "future")
    record = PluginManager().load().record("future")
    assert record.status == "incompatible"
    assert ">=99" in record.failure.message
    assert not marker.exists()


def test_broken_manifest_is_a_failed_plugin(home: Path) -> None:
    make_folder_plugin(home / "plugins", "bad", "", "requires_env: 3\n")
    enable(home, "bad")
    record = PluginManager().load().record("bad")
    assert (record.status, record.failure.type) == ("failed", "ManifestError")


def test_add_plugin_loads_an_object_transactionally(home: Path) -> None:
    manager = PluginManager()

    def register(ctx):
        ctx.register_tool("x", "ts", {"name": "x"}, lambda a, **k: "x")
        ctx.register_tool("x", "ts", {"name": "x"}, lambda a, **k: "y")

    record = manager.add_plugin(register, "host-thing")
    assert record.status == "failed" and manager.tools.get("x") is None
    namespace = types.SimpleNamespace(register_command=hookimpl(lambda ctx: Command("ns", lambda raw: "ns")))
    assert manager.add_plugin(namespace, "ns-plugin").status == "ok"
    assert manager.run_command("ns") == "ns"


def test_unknown_hookimpl_and_empty_plugin_are_warnings(home: Path) -> None:
    make_folder_plugin(home / "plugins", "odd", """
from hermes_core import hookimpl
@hookimpl
def on_moon_landing():
    pass
""")
    enable(home, "odd")
    record = PluginManager().load().record("odd")
    assert record.status == "ok"
    assert any("on_moon_landing" in w for w in record.warnings)
    assert any("registered nothing" in w for w in record.warnings)


def test_registration_hook_returning_the_wrong_type_fails_the_plugin(home: Path) -> None:
    make_folder_plugin(home / "plugins", "wrong", """
from hermes_core import hookimpl
@hookimpl
def register_tool(ctx):
    return {"name": "not a Tool"}
""")
    enable(home, "wrong")
    record = PluginManager().load().record("wrong")
    assert record.failure.type == "RegistrationError"
    assert "register_tool of plugin 'wrong'" in record.failure.message


def test_ctx_dispatch_tool_runs_other_tools_with_hooks(home: Path) -> None:
    make_folder_plugin(home / "plugins", "caller", """
import json
def register(ctx):
    ctx.register_tool("what_time", "t", {"name": "what_time", "parameters": {"type": "object"}},
                      lambda args, **kw: ctx.dispatch_tool("current_time", {"timezone": "UTC"}))
    ctx.register_hook("pre_tool_call", lambda tool_name: {"action": "block", "message": "no clocks"}
                      if tool_name == "current_time" and ctx.config.get("block") else None)
""")
    enable(home, "caller")
    assert json.loads(PluginManager().dispatch_tool("what_time", {}))["timezone"] == "UTC"
    enable(home, "caller", extra="  entries:\n    caller:\n      settings: {block: true}\n")
    assert PluginManager().dispatch_tool("what_time", {}) == "no clocks"


def test_a_failure_names_the_right_call_even_after_the_plugin_caught_one(home: Path) -> None:
    make_folder_plugin(home / "plugins", "careful", tool_code("t") + """
    try:
        ctx.register_tool("current_time", "mine", {"name": "current_time"}, print, override=True)
    except PermissionError:
        pass  # fine, keep the built-in one
    raise LookupError("later, unrelated")
""")
    enable(home, "careful")
    failure = PluginManager().load().record("careful").failure
    assert (failure.type, failure.call) == ("LookupError", "register(ctx)")


def test_conflicts_stay_reported_across_reload(home: Path) -> None:
    make_folder_plugin(home / "plugins", "c1", "def register(ctx):\n    ctx.register_command('same', print)\n")
    make_folder_plugin(home / "plugins", "c2", "def register(ctx):\n    ctx.register_command('same', print)\n")
    enable(home, "c1", "c2")
    manager = PluginManager().load()
    assert any("/same" in p for p in manager.doctor().problems)
    manager.reload()
    assert any("/same" in p for p in manager.doctor().problems)


# -- discovery as Hermes does it: the import namespace, manifest-less and guessed memory plugins --

RELATIVE = {
    "__init__.py": """
import json
from .provider import make
from hermes_plugins.word_tools.sub import VALUE

def register(ctx):
    ctx.register_tool("where", "ts", {"name": "where", "parameters": {"type": "object", "properties": {}}},
                      lambda args, **kw: json.dumps({"name": __name__, "made": make(), "value": VALUE}))
""",
    "provider.py": "from . import sub\ndef make():\n    return 'made:' + sub.VALUE\n",
    "sub.py": "VALUE = 'one'\n",
}


def make_package(root: Path, folder: str, files: dict[str, str], manifest: str | None = "") -> Path:
    path = make_folder_plugin(root, folder, files["__init__.py"], manifest)
    for name, code in files.items():
        (path / name).write_text(textwrap.dedent(code), encoding="utf-8")
    return path


def test_folder_plugin_is_imported_as_hermes_plugins_name_with_its_relative_imports(home: Path) -> None:
    make_package(home / "plugins", "word-tools", RELATIVE)
    enable(home, "word-tools")
    result = json.loads(hermes("tools", "call", "where", "{}").stdout)
    assert result == {"name": "hermes_plugins.word_tools", "made": "made:one", "value": "one"}


def test_category_plugin_module_name_keeps_its_category(home: Path) -> None:
    code = "import builtins\ndef register(ctx):\n    builtins.CATEGORY_MODULE = __name__\n"
    make_folder_plugin(home / "plugins" / "memory", "vec-store", code)
    enable(home, "memory/vec-store")
    PluginManager().load()
    import builtins

    assert builtins.CATEGORY_MODULE == "hermes_plugins.memory__vec_store"  # type: ignore[attr-defined]


def test_unloading_and_reloading_forget_the_plugins_modules(home: Path) -> None:
    folder = make_package(home / "plugins", "word-tools", RELATIVE)
    enable(home, "word-tools")
    manager = PluginManager().load()
    name = json.loads(manager.dispatch_tool("where", {}))["name"]
    assert name.startswith("hermes_plugins.word_tools") and f"{name}.sub" in sys.modules
    write_config(home, "plugins:\n  disabled: [word-tools]\n")
    manager.reload()
    assert not [m for m in sys.modules if m == name or m.startswith(name + ".")]
    assert not hasattr(sys.modules["hermes_plugins"], name.rpartition(".")[2])
    (folder / "sub.py").write_text("VALUE = 'three'\n")  # another size: a .pyc of the same second is not reused
    enable(home, "word-tools")
    manager.reload()
    assert json.loads(manager.dispatch_tool("where", {}))["made"] == "made:three"  # no stale submodule


def test_the_same_plugin_id_in_two_homes_keeps_two_module_trees(tmp_path: Path, home: Path) -> None:
    other = tmp_path / "other-home"
    for where, value in ((home, "one"), (other, "other")):
        make_package(where / "plugins", "word-tools", RELATIVE | {"sub.py": f"VALUE = {value!r}\n"})
        enable(where, "word-tools")
    first, second = PluginManager(home=home).load(), PluginManager(home=other).load()
    mine, theirs = json.loads(first.dispatch_tool("where", {})), json.loads(second.dispatch_tool("where", {}))
    assert mine["name"] != theirs["name"] and theirs["name"].startswith("hermes_plugins.word_tools__")
    assert (mine["made"], theirs["made"]) == ("made:one", "made:other")



def test_a_manifestless_memory_folder_is_found_enabled_selected_and_ok(home: Path) -> None:
    make_folder_plugin(home / "plugins", "local_memory", SHIM, manifest=None)
    row = {r["id"]: r for r in hermes_json("plugins", "list")}["local_memory"]
    assert (row["kind"], row["source"], row["enabled"], row["error"]) == ("memory", "user", False, None)
    hermes("plugins", "enable", "--yes", "local_memory")
    write_config(home, "plugins:\n  enabled: [local_memory]\nmemory:\n  provider: local_memory\n")
    doctor = hermes_json("plugins", "doctor")
    plugin = next(p for p in doctor["plugins"] if p["id"] == "local_memory")
    assert (plugin["status"], plugin["registered"]) == ("ok", {"providers": ["memory:local"]})
    assert doctor["slots"]["memory"] == "local" and doctor["problems"] == []


def test_selecting_a_memory_folder_by_name_is_enough_to_load_it(home: Path) -> None:
    make_folder_plugin(home / "plugins", "local_memory", SHIM, manifest=None)
    write_config(home, "memory:\n  provider: local_memory\n")
    manager = PluginManager().load()
    assert manager.record("local_memory").status == "ok"
    assert manager.slots.select("memory", manager.config).name == "local"


def test_a_kindless_manifest_registering_a_memory_provider_is_a_memory_plugin(home: Path) -> None:
    make_folder_plugin(home / "plugins", "brain", SHIM.replace('"local"', '"brain"'), "name: brain\nversion: 1.0.0\n")
    assert {r["id"]: r for r in hermes_json("plugins", "list")}["brain"]["kind"] == "memory"
    write_config(home, "memory:\n  provider: brain\n")
    doctor = hermes_json("plugins", "doctor")
    assert doctor["slots"]["memory"] == "brain"
    assert next(p for p in doctor["plugins"] if p["id"] == "brain")["status"] == "ok"


def test_a_guessed_kind_never_costs_a_plugin_its_tools(home: Path) -> None:
    # Hermes' trap (oh-my-hermes #922): a plugin that only mentions MemoryProvider lost its tools there
    make_folder_plugin(home / "plugins", "mentions", "# works next to any MemoryProvider\n" + tool_code("note_tool"),
                       "name: mentions\n")
    enable(home, "mentions")
    manager = PluginManager().load()
    assert manager.discover().get("mentions").kind == "memory"
    assert (manager.record("mentions").status, manager.record("mentions").registered) == ("ok", {"tools": ["note_tool"]})


def test_a_memory_folder_without_register_offers_the_class_its_package_defines(home: Path) -> None:
    make_package(home / "plugins", "vault", {
        "__init__.py": "from .provider import VaultMemoryProvider\n",
        "provider.py": """
from agent.memory_provider import MemoryProvider

class VaultMemoryProvider(MemoryProvider):
    name = "vault"
    def is_available(self): return True
    def initialize(self, session_id, **kwargs): pass
    def get_tool_schemas(self): return []
""",
    }, manifest=None)
    write_config(home, "memory:\n  provider: vault\n")
    manager = PluginManager().load()
    assert manager.record("vault").registered == {"providers": ["memory:vault"]}


def test_a_memory_provider_in_the_hermes_memory_provider_group_is_found_and_selected(home: Path, site: Path) -> None:
    install_dist(site, "hermes-wiki", {"wiki": "hermes_wiki:WikiMemoryProvider"}, {"hermes_wiki": """
try:
    from agent.memory_provider import MemoryProvider
except ImportError:
    class MemoryProvider: ...

class WikiMemoryProvider(MemoryProvider):
    name = "wiki"
    def is_available(self): return True
    def initialize(self, session_id, **kwargs): pass
    def get_tool_schemas(self): return []
"""}, group="hermes.memory_provider")
    row = {r["id"]: r for r in hermes_json("plugins", "list")}["memory/wiki"]
    assert (row["kind"], row["source"]) == ("memory", "entrypoint")
    write_config(home, "memory:\n  provider: wiki\n")
    doctor = hermes_json("plugins", "doctor")
    assert next(p for p in doctor["plugins"] if p["id"] == "memory/wiki")["status"] == "ok"
    assert doctor["slots"]["memory"] == "wiki"
