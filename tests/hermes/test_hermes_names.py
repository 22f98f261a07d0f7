"""Hermes' module names beyond the two ABCs: the provider base classes of every slot,
`tools.registry`, `hermes_constants`, `hermes_cli.config`, `agent.plugin_llm`, `agent.redact`,
`agent.secret_scope`. Plugins are written in the patterns the published ones use and run
through the `hermes` CLI in a subprocess, as an operator would see them."""

from __future__ import annotations

import ast
import base64
import importlib
import json
import re
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hermes_core import PluginManager
from hermes_core.testing import ScriptedServer
from tests.helpers import hermes, hermes_json, llm_config, make_folder_plugin, write_config

ROOT = Path(__file__).resolve().parents[2]


def served_table() -> ast.Dict:
    """`SERVED`, read from the source (the tests import no private module)."""
    tree = ast.parse((ROOT / "hermes_core" / "_hermes" / "names.py").read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", None) == "SERVED":
            assert isinstance(node.value, ast.Dict)
            return node.value
    raise AssertionError("SERVED not found in hermes_core/_hermes/names.py")


def served_names() -> list[str]:
    """The Hermes module names hermes-core serves (the keys of `SERVED`)."""
    return [key.value for key in served_table().keys if isinstance(key, ast.Constant)]


def serving_modules() -> set[str]:
    """The hermes-core modules whose names `SERVED` hands out."""
    return {node.value for value in served_table().values for node in ast.walk(value)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith("hermes_core.")}


def plugin(home: Path, name: str, code: str) -> None:
    make_folder_plugin(home / "plugins", name, code, f"name: {name}\nversion: 1.0.0\n")


def doctor_row(report: dict[str, Any], plugin_id: str) -> dict[str, Any]:
    return next(p for p in report["plugins"] if p["id"] == plugin_id)


def call(name: str, args: dict[str, Any] | None = None, check: int = 0) -> Any:
    return json.loads(hermes("tools", "call", name, json.dumps(args or {}), check=check).stdout)


# The pattern of the published web search providers (hermes-yandex-search-api's _compat.py):
# Hermes' base class and helper if they import, else a stand-in.
GUARDED_WEB_SEARCH = '''
    import os

    try:
        from agent.web_search_provider import WebSearchProvider, get_provider_env
        HERMES_AVAILABLE = True
    except ImportError:
        HERMES_AVAILABLE = False

        class WebSearchProvider:
            @property
            def display_name(self):
                return self.name

            def supports_search(self):
                return True

        def get_provider_env(name):
            return (os.environ.get(name) or "").strip()


    class QuickSearch(WebSearchProvider):
        @property
        def name(self):
            return "quick"

        @property
        def display_name(self):
            return "Quick Search"

        def is_available(self):
            return bool(get_provider_env("QUICK_API_KEY"))

        def search(self, query, limit=5):
            hits = [{"title": query, "url": "https://example.invalid/1", "description": "", "position": 1}]
            return {"success": True, "data": {"web": hits[:limit]}}


    def probe(args, **kwargs):
        import json
        provider = QuickSearch()
        return json.dumps({
            "hermes": HERMES_AVAILABLE, "base": WebSearchProvider.__module__, "available": provider.is_available(),
            "extract": provider.supports_extract(), "schema": provider.get_setup_schema(),
            "search": provider.search("tea", limit=1),
        })


    def register(ctx):
        ctx.register_web_search_provider(QuickSearch())
        ctx.register_tool("quick_probe", "quick", {"name": "quick_probe", "parameters": {"type": "object"}}, probe)
'''


def test_a_guarded_web_search_provider_gets_hermes_core_base_and_is_selected(home: Path) -> None:
    plugin(home, "quick", GUARDED_WEB_SEARCH)
    write_config(home, "plugins:\n  enabled: [quick]\nweb_search:\n  provider: quick\n")
    (home / ".env").write_text("QUICK_API_KEY='from-dotenv'\n", encoding="utf-8")
    report = hermes_json("plugins", "doctor")
    row = doctor_row(report, "quick")
    assert row["status"] == "ok", row["error"]
    assert row["registered"]["providers"] == ["web_search:quick"]
    assert row["hermes_names"] == ["agent.web_search_provider"]
    assert report["slots"]["web_search"] == "quick" and report["problems"] == []
    assert "imports Hermes' agent.web_search_provider, served by hermes-core" in " ".join(
        hermes("plugins", "doctor").stdout.split())
    probe = call("quick_probe")
    assert probe["hermes"] is True and probe["base"] == "hermes_core.providers"
    assert probe["available"] is True  # get_provider_env read $HERMES_HOME/.env
    assert probe["extract"] is False  # the base's default
    assert probe["schema"] == {"name": "Quick Search", "badge": "", "tag": "", "env_vars": []}
    assert probe["search"]["data"]["web"][0]["title"] == "tea"


WRONG_TTS = '''
    class TTSProvider:  # a stand-in, and the plugin forgot synthesize
        pass

    class Speaker(TTSProvider):
        name = "speaker"

        def list_voices(self):
            return [{"id": "alto"}]

    def register(ctx):
        ctx.register_tts_provider(Speaker())
'''


def test_a_wrong_shaped_provider_is_refused_naming_what_it_lacks(home: Path) -> None:
    plugin(home, "speaker", WRONG_TTS)
    write_config(home, "plugins:\n  enabled: [speaker]\n")
    row = doctor_row(hermes_json("plugins", "doctor", check=1), "speaker")
    assert row["status"] == "failed" and row["registered"] == {}
    error = row["error"]
    assert "not a TTSProvider: it lacks synthesize" in error
    assert re.search(r"its bases: [\w.]*speaker\.TTSProvider\)", error)
    assert "hermes_core.providers.TTSProvider" in error and "agent.tts_provider.TTSProvider" in error


def test_a_provider_setting_its_name_in_init_is_accepted_by_shape(home: Path) -> None:
    plugin(home, "sandboxes", '''
        class Sandbox:
            def __init__(self):
                self.name = "boxes"

            def is_available(self):
                return True

            def create_environment(self, *, cwd, timeout, **kwargs):
                return {"cwd": cwd}

        def register(ctx):
            ctx.register_terminal_environment_provider(Sandbox)
    ''')
    write_config(home, "plugins:\n  enabled: [sandboxes]\nterminal_environment:\n  provider: boxes\n")
    report = hermes_json("plugins", "doctor")
    assert doctor_row(report, "sandboxes")["status"] == "ok", doctor_row(report, "sandboxes")["error"]
    assert report["slots"]["terminal_environment"] == "boxes" and report["problems"] == []


# Tool modules in Hermes register at import with the registry singleton.
REGISTRY_AT_IMPORT = '''
    from tools.registry import registry, tool_error, tool_result

    SCHEMA = {"name": "shout", "description": "Shout the text",
              "parameters": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}}

    def shout(args, **kwargs):
        if not args["text"]:
            return tool_error("nothing to shout", code=400)
        entry = registry.get_entry("shout")
        return tool_result(text=args["text"].upper(), tools=registry.get_all_tool_names(),
                           toolset=registry.get_toolset_for_tool("shout"), emoji=registry.get_emoji("shout"),
                           entry=[entry.name, entry.toolset, entry.description, entry.schema == SCHEMA])

    registry.register(name="shout", toolset="loud", schema=SCHEMA, handler=shout, emoji="📣")
'''


def test_registry_register_at_import_registers_the_plugins_tool(home: Path) -> None:
    plugin(home, "loud", REGISTRY_AT_IMPORT)
    write_config(home, "plugins:\n  enabled: [loud]\n")
    row = doctor_row(hermes_json("plugins", "doctor"), "loud")
    assert row["status"] == "ok", row["error"]
    assert row["registered"] == {"tools": ["shout"]} and row["hermes_names"] == ["tools.registry"]
    listed = {r["name"]: r for r in hermes_json("tools", "list")}
    assert (listed["shout"]["plugin"], listed["shout"]["toolset"]) == ("loud", "loud")
    result = call("shout", {"text": "hi"})
    assert result["text"] == "HI" and {"shout", "current_time"} <= set(result["tools"])
    assert (result["toolset"], result["emoji"]) == ("loud", "📣")
    assert result["entry"] == ["shout", "loud", "Shout the text", True]
    assert call("shout", {"text": ""}) == {"error": "nothing to shout", "code": 400}
    assert "text" in call("shout", {}, check=1)["error"]  # hermes-core checks the arguments first


def test_registry_register_in_a_failing_load_is_rolled_back(home: Path) -> None:
    plugin(home, "flaky", REGISTRY_AT_IMPORT + "\n    raise RuntimeError('config missing')\n")
    write_config(home, "plugins:\n  enabled: [flaky]\n")
    row = doctor_row(hermes_json("plugins", "doctor", check=1), "flaky")
    assert row["status"] == "failed" and "config missing" in row["error"] and row["registered"] == {}
    assert "shout" not in {r["name"] for r in hermes_json("tools", "list")}


def test_registry_register_outside_a_load_is_one_clear_error(home: Path) -> None:
    plugin(home, "late", '''
        from tools.registry import registry

        def later(args, **kwargs):
            registry.register(name="too_late", toolset="late", schema={"name": "too_late"},
                              handler=lambda args, **kw: "{}")
            return "{}"

        def register(ctx):
            ctx.register_tool("later", "late", {"name": "later", "parameters": {"type": "object"}}, later)
            registry.register(name="in_register", toolset="late",
                              schema={"name": "in_register", "parameters": {"type": "object"}},
                              handler=lambda args, **kw: '{"ok": true}')
    ''')
    write_config(home, "plugins:\n  enabled: [late]\n")
    assert call("in_register") == {"ok": True}  # inside register(ctx) is inside the load
    error = call("later", check=1)["error"]
    assert "registry.register('too_late') was called outside a plugin's load" in error
    assert "ctx.register_tool" in error
    assert "too_late" not in {r["name"] for r in hermes_json("tools", "list")}


def test_a_registry_name_hermes_core_does_not_serve_says_what_it_serves(home: Path) -> None:
    plugin(home, "remover", '''
        from tools.registry import registry

        def register(ctx):
            registry.register_plugin_override_policy("hermes_plugins.remover", True)
    ''')
    write_config(home, "plugins:\n  enabled: [remover]\n")
    error = doctor_row(hermes_json("plugins", "doctor", check=1), "remover")["error"]
    assert "AttributeError" in error and "registry.register_plugin_override_policy is not served" in error
    assert "get_entry" in error


PATHS_AND_CONFIG = '''
    import json
    from hermes_constants import display_hermes_home, get_config_path, get_hermes_home
    from hermes_cli.config import get_env_value, load_config, load_config_readonly, save_config

    def paths(args, **kwargs):
        return json.dumps({"home": str(get_hermes_home()), "config": str(get_config_path()),
                           "display": display_hermes_home()})

    def settings(args, **kwargs):
        config = load_config()
        config["voice"]["speaker"] = 99  # a fresh copy: changing it changes nothing
        return json.dumps({"voice": load_config_readonly()["voice"], "token": get_env_value("VOICE_TOKEN"),
                           "missing": get_env_value("NOT_SET_ANYWHERE")})

    def write(args, **kwargs):
        save_config({"voice": {}})
        return "{}"

    def register(ctx):
        for name, handler in (("paths", paths), ("settings", settings), ("write", write)):
            ctx.register_tool(name, "cfg", {"name": name, "parameters": {"type": "object"}}, handler)
'''


def test_hermes_constants_answer_with_the_home_the_cli_runs_with(home: Path) -> None:
    plugin(home, "cfg", PATHS_AND_CONFIG)
    write_config(home, "plugins:\n  enabled: [cfg]\n")
    assert call("paths") == {"home": str(home), "config": str(home / "config.yaml"), "display": str(home)}
    assert doctor_row(hermes_json("plugins", "doctor"), "cfg")["hermes_names"] == [
        "hermes_constants", "hermes_cli.config"]


def test_hermes_cli_config_reads_the_operators_config_and_refuses_writes(home: Path, monkeypatch) -> None:
    plugin(home, "cfg", PATHS_AND_CONFIG)
    write_config(home, """
        plugins:
          enabled: [cfg]   # the operator's comment
        voice:
          speaker: 3
          url: ${VOICE_URL}/v1
          unset: ${NOT_SET_ANYWHERE}
    """)
    monkeypatch.setenv("VOICE_URL", "http://127.0.0.1:50021")
    (home / ".env").write_text("export VOICE_TOKEN=\"from dotenv\"\n", encoding="utf-8")
    result = call("settings")
    assert result["voice"] == {"speaker": 3, "url": "http://127.0.0.1:50021/v1", "unset": "${NOT_SET_ANYWHERE}"}
    assert (result["token"], result["missing"]) == ("from dotenv", None)
    error = call("write", check=1)["error"]
    assert "hermes_cli.config.save_config() is not available under hermes-core" in error
    assert "ctx.set_config" in error
    assert "the operator's comment" in (home / "config.yaml").read_text(encoding="utf-8")


# hermes-vaultwarden-secret-source's pattern: Hermes' helpers for running a vault's CLI.
SECRET_SOURCE = '''
    import json
    import sys
    from agent.secret_sources.base import ErrorKind, FetchResult, SecretSource, is_valid_env_name, run_secret_cli

    class Vault(SecretSource):
        name = "vault"
        label = "Test Vault"
        shape = "bulk"

        def fetch(self, cfg, home_path):
            done = run_secret_cli([sys.executable, "-c", "import os; print('API_TOKEN=' + os.environ['NO_COLOR'])"])
            key, _, value = done.stdout.strip().partition("=")
            if not is_valid_env_name(key):
                return FetchResult(error="bad name", error_kind=ErrorKind.REF_INVALID)
            return FetchResult(secrets={key: value})

    def fetch(args, **kwargs):
        source = Vault()
        result = source.fetch({}, None)
        return json.dumps({"secrets": result.secrets, "ok": result.ok, "enabled": source.is_enabled({"enabled": 1}),
                           "timeout": source.fetch_timeout_seconds({"timeout_seconds": -1}),
                           "hint": source.remediation(ErrorKind.AUTH_FAILED, {})})

    def register(ctx):
        ctx.register_secret_source(Vault())
        ctx.register_tool("vault_fetch", "vault", {"name": "vault_fetch", "parameters": {"type": "object"}}, fetch)
'''


def test_a_secret_source_in_hermes_pattern_registers_and_runs_its_cli(home: Path) -> None:
    plugin(home, "vault", SECRET_SOURCE)
    write_config(home, "plugins:\n  enabled: [vault]\nsecret_source:\n  provider: vault\n")
    report = hermes_json("plugins", "doctor")
    assert doctor_row(report, "vault")["hermes_names"] == ["agent.secret_sources.base"]
    assert report["slots"]["secret_source"] == "vault" and report["problems"] == []
    result = call("vault_fetch")
    assert result["secrets"] == {"API_TOKEN": "1"} and result["ok"] is True  # the CLI saw NO_COLOR=1
    assert result["enabled"] is True and result["timeout"] == 120.0
    assert result["hint"] == "Credentials rejected — run `hermes secrets vault setup` to re-authenticate."


def test_plugin_llm_input_types_reach_the_model(home: Path, llm_server: ScriptedServer) -> None:
    plugin(home, "receipts", '''
        import json
        from agent.plugin_llm import PluginLlmImageInput, PluginLlmStructuredResult, PluginLlmTextInput

        def read_receipt(args, **kwargs):
            result = CTX.llm.complete_structured(
                instructions="Total of this receipt?",
                input=[PluginLlmTextInput(text="in euros"), PluginLlmImageInput(data=b"PNG bytes"),
                       PluginLlmImageInput(url="https://example.invalid/r.jpg", mime_type="image/jpeg")],
                json_mode=True, purpose="receipt")
            return json.dumps({"parsed": result.parsed, "structured": isinstance(result, PluginLlmStructuredResult)})

        def register(ctx):
            global CTX
            CTX = ctx
            ctx.register_tool("read_receipt", "receipts", {"name": "read_receipt", "parameters": {"type": "object"}},
                              read_receipt)
    ''')
    llm_config(home, llm_server.url, "plugins:\n  enabled: [receipts]\n")
    llm_server.reply_json({"total": 12.5})
    assert call("read_receipt") == {"parsed": {"total": 12.5}, "structured": True}
    parts = llm_server.requests[0].messages[-1]["content"]
    assert parts[1:] == [
        {"type": "text", "text": "in euros"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64," + base64.b64encode(b"PNG bytes").decode()}},
        {"type": "image_url", "image_url": {"url": "https://example.invalid/r.jpg"}},
    ]


def test_a_real_tools_package_is_not_added_to(home: Path, site: Path) -> None:
    (site / "tools").mkdir()
    (site / "tools" / "__init__.py").write_text("REAL = True\n")
    plugin(home, "probe", '''
        import json
        try:
            from tools.registry import registry
            FOUND = "served"
        except ImportError:
            FOUND = "missing"

        def register(ctx):
            ctx.register_tool("probe", "p", {"name": "probe", "parameters": {"type": "object"}},
                              lambda args, **kw: json.dumps(FOUND))
    ''')
    write_config(home, "plugins:\n  enabled: [probe]\n")
    assert call("probe") == "missing"
    assert doctor_row(hermes_json("plugins", "doctor"), "probe")["hermes_names"] == []


# -- in process: the served modules themselves ------------------------------------------------


@pytest.fixture
def served(home: Path) -> PluginManager:
    """A manager that has loaded plugins, so the Hermes names are answered in this process."""
    return PluginManager(home=home).load()


@pytest.mark.parametrize("name", served_names())
def test_every_served_name_is_a_real_module_with_all(served: PluginManager, name: str) -> None:
    module = importlib.import_module(name)
    assert isinstance(module, types.ModuleType) and module.__name__ == name
    assert isinstance(module.__all__, list)
    assert all(hasattr(module, attr) for attr in module.__all__)
    if any(other.startswith(name + ".") for other in served_names()):
        assert hasattr(module, "__path__")  # a package: its submodules import under it
    else:
        assert module.__all__, f"{name} serves nothing"


def test_the_provider_bases_are_hermes_core_providers(served: PluginManager) -> None:
    from hermes_core import providers

    assert importlib.import_module("agent.web_search_provider").WebSearchProvider is providers.WebSearchProvider
    assert importlib.import_module("agent.secret_sources.base").SecretSource is providers.SecretSource
    assert issubclass(providers.ImageGenProvider, providers.CatalogProviderBase)
    image_gen = importlib.import_module("agent.image_gen_provider")
    assert image_gen.resolve_aspect_ratio(" SQUARE ") == "square" and image_gen.resolve_aspect_ratio(3) == "landscape"
    assert image_gen.normalize_reference_images([" a ", "", 3]) == ["a"] and image_gen.normalize_reference_images([]) is None
    saved = image_gen.save_b64_image(base64.b64encode(b"img").decode(), prefix="cat")
    assert saved.parent == served.home / "cache" / "images" and saved.name.startswith("cat_") and saved.read_bytes() == b"img"
    ok = image_gen.success_response(image=str(saved), model="m", prompt="p", aspect_ratio="square", provider="x",
                                    extra={"success": False, "seed": 7})
    assert ok["success"] is True and ok["seed"] == 7  # extra never overrides the standard keys


def test_redact_and_secret_scope(served: PluginManager, monkeypatch) -> None:
    redact = importlib.import_module("agent.redact")
    scope = importlib.import_module("agent.secret_scope")
    key = "sk-" + "a1B2" * 8
    assert key not in redact.redact_sensitive_text(f"key={key}", force=True, redact_url_credentials=True)
    assert redact.redact_sensitive_text(None) is None
    monkeypatch.setenv("FROM_ENV", "env")
    (served.home / ".env").write_text("FROM_FILE=file\n", encoding="utf-8")
    assert (scope.get_secret("FROM_ENV"), scope.get_secret("FROM_FILE"), scope.get_secret("NOPE", "d")) == (
        "env", "file", "d")
    token = scope.set_secret_scope({"FROM_ENV": "scoped"})
    assert scope.get_secret("FROM_ENV") == "scoped"
    scope.reset_secret_scope(token)
    assert scope.get_secret("FROM_ENV") == "env" and scope.is_multiplex_active() is False


JSON_VALUES = st.recursive(st.none() | st.booleans() | st.integers() | st.text(),
                           lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
                           max_leaves=8)


FIXTURE_PER_TEST = settings(suppress_health_check=[HealthCheck.function_scoped_fixture])


@FIXTURE_PER_TEST
@given(message=st.text(max_size=3000),
       extra=st.dictionaries(st.text().filter(lambda k: k != "error"), JSON_VALUES, max_size=3))
def test_tool_error_is_a_bounded_json_error(served: PluginManager, message: str, extra: dict[str, Any]) -> None:
    tool_error = importlib.import_module("tools.registry").tool_error
    expected = message if len(message) <= 2048 else message[:2048] + "… [truncated]"
    assert json.loads(tool_error(message, **extra)) == {"error": expected, **extra}


@FIXTURE_PER_TEST
@given(data=JSON_VALUES, kwargs=st.dictionaries(st.text().filter(lambda key: key != "data"), JSON_VALUES, max_size=3))
def test_tool_result_is_its_data_as_json(served: PluginManager, data: Any, kwargs: dict[str, Any]) -> None:
    tool_result = importlib.import_module("tools.registry").tool_result
    assert json.loads(tool_result(data, **kwargs)) == (data if data is not None else kwargs)


# -- docs and start-up ---------------------------------------------------------------------


def test_every_served_name_is_documented_in_the_table() -> None:
    text = (ROOT / "docs" / "hermes.md").read_text(encoding="utf-8")
    rows = {m.group(1) for m in re.finditer(r"^\| `([\w.]+)` \|", text, re.MULTILINE)}
    assert set(served_names()) - rows == set()


def test_the_start_up_finder_knows_every_top_level_name_served() -> None:
    import _hermes_core_names

    assert _hermes_core_names.TOP_LEVEL == {name.partition(".")[0] for name in served_names()}


def test_every_package_of_hermes_core_ships_in_the_distribution() -> None:
    import tomllib

    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]["packages"])
    packages = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "hermes_core").rglob("__init__.py")}
    assert packages - listed == set()


LISTING = """
import json, sys
from hermes_core.cli import main
try:
    main(["plugins", "list", "--json"])
except SystemExit as exc:
    assert not exc.code, exc.code
print(json.dumps(sorted(sys.modules)), file=sys.stderr)
"""


def test_listing_imports_none_of_what_the_names_serve(home: Path) -> None:
    result = subprocess.run([sys.executable, "-c", LISTING], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    modules = set(json.loads(result.stderr.strip().splitlines()[-1]))
    assert "hermes_core._discovery.discover" in modules  # the probe sees our imports
    serving = {m for m in serving_modules() if m.startswith("hermes_core._hermes.")}  # what serves nothing else
    assert "hermes_core._hermes.tool_registry" in serving  # the modules are read from SERVED...
    assert not {m for m in modules if m in serving or m == "urllib.request" or m.split(".")[0] in {
        "agent", "tools", "hermes_cli", "hermes_constants", "dataclasses", "subprocess"}}  # ...and none is imported


def test_a_toolset_alias_lives_as_long_as_its_plugin(home: Path) -> None:
    plugin(home, "lark", '''
from tools.registry import registry

def register(ctx):
    registry.register_toolset_alias("feishu", "lark")
    registry.register("lark_send", "lark", {"name": "lark_send", "description": "Send",
                      "parameters": {"type": "object", "properties": {}}}, lambda args, **kw: "{}")
''')
    write_config(home, "plugins:\n  enabled: [lark]\n")
    manager = PluginManager().load()
    assert manager.record("lark").status == "ok", manager.record("lark").failure
    registry = importlib.import_module("tools.registry").registry
    assert registry.get_tool_names_for_toolset("feishu") == ["lark_send"]
    assert registry.get_registered_toolset_aliases() == {"feishu": "lark"}
    manager.remove_plugin("lark")
    assert registry.get_registered_toolset_aliases() == {}
