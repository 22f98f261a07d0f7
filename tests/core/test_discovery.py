"""Discovery: four sources with precedence, manifests, ids — and nothing imported."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from hermes_core import Config, discover
from tests.helpers import HERMES, hermes, hermes_json, install_dist, make_folder_plugin, write_config
from tests.helpers.shims import SHIM

CODE = "def register(ctx):\n    pass\n"
# hermes-local-memory's shim: a folder with no plugin.yaml whose provider has no base class
def by_id(found):
    return {spec.id: spec for spec in found.plugins}


def test_flat_folder_plugin_id_is_the_manifest_name(home: Path) -> None:
    make_folder_plugin(home / "plugins", "some-folder", CODE, "name: weather\nversion: 1.2\ndescription: Forecasts\n")
    spec = by_id(discover())["weather"]
    assert (spec.name, spec.version, spec.description, spec.source, spec.kind) == (
        "weather", "1.2", "Forecasts", "user", "standalone",
    )
    assert spec.path == home / "plugins" / "some-folder"


def test_manifest_name_defaults_to_the_folder_name(home: Path) -> None:
    make_folder_plugin(home / "plugins", "dice", CODE, "version: '0.1'\n")
    assert by_id(discover())["dice"].version == "0.1"


def test_plugin_yml_is_the_fallback_manifest(home: Path) -> None:
    folder = make_folder_plugin(home / "plugins", "dice", CODE, manifest=None)
    (folder / "plugin.yml").write_text("name: dice2\n")
    assert "dice2" in by_id(discover())


def test_category_plugin_id_is_category_slash_folder(home: Path) -> None:
    make_folder_plugin(home / "plugins" / "context_engine", "lcm", CODE, "name: lossless\n")
    make_folder_plugin(home / "plugins" / "memory", "vectors", CODE, "")
    found = by_id(discover())
    assert found["context_engine/lcm"].kind == "context_engine"
    assert found["context_engine/lcm"].name == "lossless"
    assert found["memory/vectors"].kind == "memory"


def test_folder_without_manifest_that_is_not_a_category_is_reported_not_loaded(home: Path) -> None:
    make_folder_plugin(home / "plugins", "stray", CODE, manifest=None)
    found = discover()
    assert "stray" not in by_id(found)
    assert any("stray" in p and "no plugin.yaml" in p for p in found.problems)
    assert [(s.name, s.source) for s in found.skipped] == [("stray", "user")]


def test_a_memory_folder_with_a_name_that_cannot_be_an_id_is_skipped_saying_so(home: Path) -> None:
    make_folder_plugin(home / "plugins", "my memory", SHIM, manifest=None)
    found = discover()
    assert [(s.name, "not a valid plugin id" in s.reason) for s in found.skipped] == [("my memory", True)]


def test_anything_skipped_is_a_row_in_every_listing_format(home: Path, site: Path) -> None:
    make_folder_plugin(home / "plugins", "stray", CODE, manifest=None)
    install_dist(site, "hermes-bad", {"bad name": "hermes_bad"}, {"hermes_bad": CODE})
    rows = {row["id"]: row for row in hermes_json("plugins", "list")}
    stray, bad = rows["stray"], rows["bad name"]
    assert (stray["skipped"], stray["enabled"], stray["source"]) == (True, False, "user")
    assert "no plugin.yaml" in stray["error"] and stray["origin"] == str(home / "plugins" / "stray")
    assert bad["skipped"] and "not a valid plugin id" in bad["error"]
    assert rows["clock"]["skipped"] is False
    text = hermes("plugins", "list")
    assert "stray" in text.stderr and "no plugin.yaml" in text.stderr
    refused = hermes("plugins", "enable", "stray", check=1)
    assert "it was skipped" in refused.stderr and "no plugin.yaml" in refused.stderr


def test_depth_is_two_at_most(home: Path) -> None:
    make_folder_plugin(home / "plugins" / "context_engine" / "deep", "lcm", CODE, "")
    found = by_id(discover())
    assert "context_engine/deep" in found and found["context_engine/deep"].error  # no manifest at depth two
    assert not any(pid.endswith("/lcm") and found[pid].source != "builtin" for pid in found)


@pytest.mark.parametrize(
    ("manifest", "message"),
    [
        ("name: 'has space'\n", "not a valid plugin name"),
        ("requires_hermes: 'not a spec'\n", "not a version specifier"),
        ("requires_env: 3\n", "`requires_env` must be a list"),
        ("- just\n- a list\n", "must be a mapping"),
        ("name: ok\nversion: a: b\n", "invalid YAML at line 2, column 11"),
        ("provides: [a]\n", "`provides` must be a mapping"),
    ],
)
def test_invalid_manifest_is_reported_with_the_field(home: Path, manifest: str, message: str) -> None:
    make_folder_plugin(home / "plugins", "bad", CODE, manifest)
    spec = discover().get("bad")
    assert spec is not None and spec.error is not None
    assert message in spec.error and "plugin.yaml" in spec.error


def test_unknown_kind_is_a_warning_and_standalone_as_hermes_does(home: Path) -> None:
    make_folder_plugin(home / "plugins", "odd", CODE, "kind: quantum\n")
    spec = by_id(discover())["odd"]
    assert (spec.error, spec.kind) == (None, "standalone")
    assert any("unknown `kind` 'quantum'" in w and "treated as standalone" in w for w in spec.warnings)


@pytest.mark.parametrize(("kind", "expected"), [("backend", "standalone"), ("model-provider", "model-provider"),
                                                ("exclusive", "memory")])
def test_hermes_kinds_are_accepted(home: Path, kind: str, expected: str) -> None:
    make_folder_plugin(home / "plugins", "hk", "# register_memory_provider\n" + CODE, f"kind: {kind}\n")
    spec = by_id(discover())["hk"]
    assert (spec.error, spec.kind, spec.warnings) == (None, expected, ())


def test_hermes_manifest_fields_are_accepted_quietly(home: Path) -> None:
    make_folder_plugin(home / "plugins", "brainy", CODE, "name: brainy\nhooks: [on_session_end]\nprovides_tools: [a]\n")
    assert by_id(discover())["brainy"].warnings == ()


@pytest.mark.parametrize(("code", "kind"), [
    ("from .provider import P\ndef register(ctx):\n    ctx.register_memory_provider(P())\n", "memory"),
    ("class P(MemoryProvider): ...\n", "memory"),
    ("def register(ctx):\n    ctx.register_context_engine(E())\n", "context_engine"),
    ("from agent.context_engine import ContextEngine\n", "context_engine"),
    ("def register(ctx):\n    pass\n", "standalone"),
])
def test_a_manifest_without_kind_gets_hermes_reading_of_its_init(home: Path, code: str, kind: str) -> None:
    make_folder_plugin(home / "plugins", "k", code, "name: k\n")
    spec = by_id(discover())["k"]
    assert (spec.kind, spec.kind_source) == (kind, "source" if kind != "standalone" else "default")


def test_hermes_reads_only_the_first_8_kb(home: Path) -> None:
    make_folder_plugin(home / "plugins", "late", "#" * 8200 + "\n# register_memory_provider\n", "")
    assert by_id(discover())["late"].kind == "standalone"


def test_a_declared_kind_or_a_category_wins_over_the_source(home: Path) -> None:
    engine_text = "# register_context_engine\n" + CODE
    make_folder_plugin(home / "plugins", "declared", engine_text, "kind: standalone\n")
    make_folder_plugin(home / "plugins" / "memory", "cat", engine_text, "")
    found = by_id(discover())
    assert (found["declared"].kind, found["declared"].kind_source) == ("standalone", "manifest")
    assert (found["memory/cat"].kind, found["memory/cat"].kind_source) == ("memory", "category")


def test_a_folder_without_manifest_that_registers_a_memory_provider_is_found(home: Path) -> None:
    make_folder_plugin(home / "plugins", "local_memory", SHIM, manifest=None)
    make_folder_plugin(home / "plugins", "engine_only", "def register(ctx):\n    ctx.register_context_engine(1)\n",
                       manifest=None)
    found = discover()
    memory, engine = found.get("local_memory"), found.get("engine_only")
    assert memory is not None and engine is not None and not found.problems
    assert (memory.kind, memory.source, memory.kind_source, memory.error) == ("memory", "user", "source", None)
    assert engine.kind == "context_engine"


def test_unknown_manifest_field_is_a_warning_not_a_failure(home: Path) -> None:
    make_folder_plugin(home / "plugins", "dice", CODE, "name: dice\ncolour: blue\n")
    spec = by_id(discover())["dice"]
    assert spec.error is None
    assert any("colour" in w for w in spec.warnings)


def test_folder_without_init_is_reported(home: Path) -> None:
    folder = home / "plugins" / "empty"
    folder.mkdir(parents=True)
    (folder / "plugin.yaml").write_text("name: empty\n")
    assert "__init__.py" in (by_id(discover())["empty"].error or "")


def test_project_plugins_need_the_environment_flag(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    make_folder_plugin(Path.cwd() / ".hermes" / "plugins", "local", CODE, "")
    assert "local" not in by_id(discover())
    monkeypatch.setenv("HERMES_ENABLE_PROJECT_PLUGINS", "1")
    assert by_id(discover())["local"].source == "project"
    monkeypatch.setenv("HERMES_ENABLE_PROJECT_PLUGINS", "false")
    assert "local" not in by_id(discover())


def test_entry_point_plugin_id_is_the_entry_point_name(home: Path, site: Path) -> None:
    install_dist(site, "hermes-dice", {"dice": "hermes_dice"}, {"hermes_dice": CODE}, version="2.0", summary="Dice")
    spec = by_id(discover())["dice"]
    assert (spec.source, spec.version, spec.description, spec.distribution) == ("entrypoint", "2.0", "Dice", "hermes-dice")
    assert spec.entry_point == "hermes_dice"


@pytest.mark.parametrize("group", ["hermes_agent.memory_providers", "hermes.memory_provider", "hermes.memory_providers"])
def test_memory_provider_entry_points_in_every_group_in_use(home: Path, site: Path, group: str) -> None:
    install_dist(site, "hermes-wiki", {"wiki": "hermes_wiki:WikiProvider"}, {"hermes_wiki": CODE}, group=group)
    spec = by_id(discover())["memory/wiki"]
    assert (spec.kind, spec.kind_source, spec.source, spec.category) == ("memory", "group", "entrypoint", "memory")


def test_hermes_plugins_group_is_read_like_hermes_agent_plugins(home: Path, site: Path) -> None:
    install_dist(site, "hermes-guard", {"guard": "hermes_guard"}, {"hermes_guard": CODE}, group="hermes.plugins")
    assert by_id(discover())["guard"].kind == "standalone"


def test_one_entry_point_declared_in_two_equivalent_groups_is_one_plugin(home: Path, site: Path) -> None:
    install_dist(site, "hermes-wiki", {"wiki": "hermes_wiki:P"}, {"hermes_wiki": CODE},
                 group="hermes_agent.memory_providers", more_groups={"hermes.memory_provider": {"wiki": "hermes_wiki:P"}})
    found = discover()
    assert [s.id for s in found.plugins if s.id.endswith("wiki")] == ["memory/wiki"] and not found.problems


def test_an_entry_point_in_the_general_group_stays_opt_in_whatever_its_source_says(home: Path, site: Path) -> None:
    engine = "from agent.context_engine import ContextEngine\n" + CODE
    install_dist(site, "hermes-lossless", {"lossless": "hermes_lossless"}, {"hermes_lossless.__init__": engine})
    spec = by_id(discover())["lossless"]
    assert (spec.kind, spec.kind_source) == ("standalone", "default")
    assert not spec.enablement(Config({"context": {"engine": "lossless"}}))[0]


def test_builtin_plugins_come_through_entry_points(home: Path) -> None:
    spec = by_id(discover())["clock"]
    assert spec.source == "builtin"
    assert spec.entry_point == "hermes_plugins_builtin.clock"
    assert spec.enablement(Config({}))[0] is True


def test_later_sources_override_earlier_ones_with_the_same_id(
    home: Path, site: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HERMES_ENABLE_PROJECT_PLUGINS", "yes")
    make_folder_plugin(home / "plugins", "clock", CODE, "description: user clock\n")
    assert by_id(discover())["clock"].source == "user"  # user overrides built-in
    make_folder_plugin(Path.cwd() / ".hermes" / "plugins", "clock", CODE, "description: project clock\n")
    assert by_id(discover())["clock"].source == "project"  # project overrides user
    install_dist(site, "other-clock", {"clock": "other_clock"}, {"other_clock": CODE})
    spec = by_id(discover())["clock"]
    assert spec.source == "entrypoint"  # entry points override everything
    assert [s.split(":")[0] for s in spec.shadows] == ["builtin", "user", "project"]


def test_load_order_is_by_source_then_id(home: Path, site: Path) -> None:
    make_folder_plugin(home / "plugins", "zeta", CODE, "")
    make_folder_plugin(home / "plugins", "alpha", CODE, "")
    install_dist(site, "hermes-beta", {"beta": "hermes_beta"}, {"hermes_beta": CODE})
    ids = [i for i in discover().ids if i in {"alpha", "zeta", "beta", "clock"}]
    assert ids == ["clock", "alpha", "zeta", "beta"]


def test_enablement_rules(home: Path) -> None:
    make_folder_plugin(home / "plugins", "dice", CODE, "")
    make_folder_plugin(home / "plugins" / "context_engine", "lcm", CODE, "")
    found = discover()
    dice, lcm, clock = found.get("dice"), found.get("context_engine/lcm"), found.get("clock")
    assert not dice.enablement(Config({}))[0]  # opt-in
    assert dice.enablement(Config({"plugins": {"enabled": ["dice"]}}))[0]
    both = Config({"plugins": {"enabled": ["dice"], "disabled": ["dice"]}})
    assert not dice.enablement(both)[0]  # disabled wins
    assert not clock.enablement(Config({"plugins": {"disabled": ["clock"]}}))[0]
    assert not lcm.enablement(Config({}))[0]
    assert lcm.enablement(Config({"context": {"engine": "lcm"}}))[0]  # selected in its slot
    named = discover().get("context_engine/lcm")._replace(name="lossless")
    assert named.enablement(Config({"context": {"engine": "lossless"}}))[0]  # ...by its manifest name too
    assert not named.enablement(Config({"context": {"engine": "other"}}))[0]


LISTING_PROBE = """
import json, sys
from hermes_core.cli import main
try:
    main(["plugins", "list", "--json"])
except SystemExit as exc:
    assert not exc.code, exc.code
print(json.dumps(sorted(sys.modules)), file=sys.stderr)
"""


def test_listing_imports_no_plugin_openai_or_jsonschema(home: Path, site: Path, monkeypatch) -> None:
    monkeypatch.setenv("HERMES_ENABLE_PROJECT_PLUGINS", "1")
    boom = "raise RuntimeError('imported during listing')\n"
    make_folder_plugin(home / "plugins", "user_plugin", boom, "name: userp\n")
    make_folder_plugin(home / "plugins" / "memory", "vec", boom, "")
    make_folder_plugin(Path.cwd() / ".hermes" / "plugins", "proj", boom, "")
    install_dist(site, "hermes-ep", {"ep": "hermes_ep_module"}, {"hermes_ep_module": boom})
    install_dist(site, "hermes-zep", {"zep": "hermes_zep_module:Zep"}, {"hermes_zep_module": boom},
                 group="hermes_agent.memory_providers")
    install_dist(site, "hermes-wiki", {"wiki": "hermes_wiki_module:Wiki"},
                 {"hermes_wiki_module.__init__": "from gateway.hooks import X\n" + boom}, group="hermes.memory_provider")
    make_folder_plugin(home / "plugins", "shim", "# register_memory_provider\n" + boom, manifest=None)
    write_config(home, "plugins:\n  enabled: [userp, proj, ep, shim]\nmemory:\n  provider: zep\n")
    result = subprocess.run([sys.executable, "-c", LISTING_PROBE], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    listed = {row["id"]: row for row in json.loads(result.stdout)}
    assert {"userp", "memory/vec", "proj", "ep", "clock", "memory/builtin", "memory/zep", "memory/wiki", "shim"} <= set(listed)
    assert listed["memory/wiki"]["needs_host"] == "needs the Hermes Agent host (imports gateway.hooks)"
    assert listed["ep"]["enabled"] and listed["userp"]["enabled"] and listed["memory/zep"]["enabled"]
    assert (listed["memory/zep"]["kind"], listed["memory/zep"]["source"]) == ("memory", "entrypoint")
    modules = set(json.loads(result.stderr.strip().splitlines()[-1]))
    forbidden = {"openai", "jsonschema", "hermes_ep_module", "hermes_zep_module", "hermes_wiki_module",
                 "hermes_plugins_builtin.clock", "hermes_plugins_builtin.memory", "sqlite3", "pluggy", "hermes_plugins",
                 # the slots' base classes are imported when a provider is checked, not to list
                 "hermes_core.providers", "hermes_core._slots.memory", "hermes_core._slots.context_engine"}
    assert not modules & forbidden
    assert not [m for m in modules if m.startswith("hermes_plugins.")]


def test_hermes_plugins_list_importtime_shows_no_heavy_module(home: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-X", "importtime", str(HERMES), "plugins", "list"],
        capture_output=True, text=True, timeout=60,
    )
    assert result.returncode == 0, result.stderr
    imported = {line.split("|")[-1].strip() for line in result.stderr.splitlines() if line.startswith("import time:")}
    assert "hermes_core._discovery.discover" in imported  # the probe sees our imports...
    assert not {m for m in imported if m.split(".")[0] in {"openai", "jsonschema", "httpx", "pydantic"}}
    assert "hermes_plugins_builtin.clock" not in imported  # ...and no plugin module


def test_listing_and_runtime_see_the_same_plugins(home: Path, site: Path) -> None:
    from hermes_core import PluginManager

    make_folder_plugin(home / "plugins", "dice", CODE, "")
    install_dist(site, "hermes-beta", {"beta": "hermes_beta"}, {"hermes_beta": CODE})
    write_config(home, "plugins:\n  enabled: [dice, beta]\n")
    listed = {s.id for s in discover().plugins if s.enablement(Config({"plugins": {"enabled": ["dice", "beta"]}}))[0]}
    loaded = {r.id for r in PluginManager().load().records}
    assert listed == loaded

