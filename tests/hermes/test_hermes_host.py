"""Plugins that need Hermes Agent itself: one line saying what they need, never a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hermes_core import PluginManager
from tests.helpers import hermes, hermes_json, install_dist, make_folder_plugin, write_config

GATEWAY = "needs the Hermes Agent host (imports gateway.hooks)"


def rows(command: str = "list") -> dict[str, dict]:
    data = hermes_json("plugins", command, check=None)
    return {row["id"]: row for row in (data if command == "list" else data["plugins"])}


def test_a_top_level_gateway_import_is_one_doctor_line(home: Path) -> None:
    make_folder_plugin(home / "plugins", "vk", """
from gateway.hooks import HookRegistry

def register(ctx):
    ctx.register_command("vk", lambda raw: raw)
""")
    make_folder_plugin(home / "plugins", "fine", "def register(ctx):\n    ctx.register_command('fine', print)\n")
    write_config(home, "plugins:\n  enabled: [vk, fine]\n")
    assert rows()["vk"]["needs_host"] == GATEWAY  # the listing says it before anything is imported
    text = hermes("plugins", "doctor", check=1)
    assert [line.split(None, 3) for line in text.stdout.splitlines() if line.startswith("vk ")] == [
        ["vk", "failed", "0.0", GATEWAY]]
    assert "Traceback" not in text.stdout + text.stderr
    doctor = rows("doctor")
    assert (doctor["vk"]["status"], doctor["vk"]["error"]) == ("failed", GATEWAY)
    assert doctor["fine"]["status"] == "ok"


@pytest.mark.parametrize(("statement", "needed"), [
    ("import model_tools", "model_tools"),
    ("from hermes_state import SessionDB", "hermes_state"),
    ("import providers.routing", "providers.routing"),
    ("from tools.delegate_tool import delegate_task", "tools.delegate_tool"),
    ("from hermes_cli.plugins import get_plugin_manager", "hermes_cli.plugins.get_plugin_manager"),
    ("from agent.usage_pricing import estimate", "agent.usage_pricing"),
    ("from gateway.delivery import (\n    DeliveryRouter,\n)", "gateway.delivery.DeliveryRouter"),
    ("import importlib\nimportlib.import_module('gateway.stream_consumer')", "gateway.stream_consumer"),
])
def test_each_hermes_internal_import_names_what_it_needs(home: Path, statement: str, needed: str) -> None:
    make_folder_plugin(home / "plugins", "host", f"{statement}\ndef register(ctx):\n    pass\n")
    write_config(home, "plugins:\n  enabled: [host]\n")
    record = PluginManager().load().record("host")
    assert (record.status, str(record.failure)) == ("failed", f"needs the Hermes Agent host (imports {needed})")
    assert record.failure.needs_host and record.failure.type == "NeedsHermesHost"


def test_a_plugin_that_wraps_the_import_error_still_says_what_it_needs(home: Path) -> None:
    make_folder_plugin(home / "plugins", "wrapped", """
try:
    import hermes_state
except ImportError as exc:
    raise RuntimeError("this plugin runs inside Hermes only") from exc
""")
    write_config(home, "plugins:\n  enabled: [wrapped]\n")
    assert str(PluginManager().load().record("wrapped").failure) == "needs the Hermes Agent host (imports hermes_state)"


def test_a_missing_dependency_of_its_own_is_an_ordinary_failure(home: Path) -> None:
    make_folder_plugin(home / "plugins", "deps", "import some_missing_sdk_xyz\n")
    write_config(home, "plugins:\n  enabled: [deps]\n")
    failure = PluginManager().load().record("deps").failure
    assert (failure.type, failure.needs_host) == ("ModuleNotFoundError", False)
    assert str(failure).startswith("ModuleNotFoundError: No module named 'some_missing_sdk_xyz'")


def test_the_listing_follows_the_plugins_own_imports_and_agrees_with_the_doctor(home: Path, site: Path) -> None:
    folder = make_folder_plugin(home / "plugins", "relay", "from .adapter import Adapter\n")
    (folder / "adapter.py").write_text("from . import util\nfrom gateway.hooks import HookRegistry\n")
    (folder / "util.py").write_text("import hermes_state\n")
    install_dist(site, "hermes-tokens", {"tokens": "hermes_tokens"}, {
        "hermes_tokens.__init__": "from hermes_tokens.profile import PROFILE\n",
        "hermes_tokens.profile": "from providers.routing import resolve_route\nPROFILE = 1\n",
    })
    write_config(home, "plugins:\n  enabled: [relay, tokens]\n")
    listed, doctor = rows(), rows("doctor")
    assert listed["relay"]["needs_host"] == "needs the Hermes Agent host (imports hermes_state, gateway.hooks)"
    assert doctor["relay"]["error"] == "needs the Hermes Agent host (imports hermes_state)"  # the first one met
    assert listed["tokens"]["needs_host"] == doctor["tokens"]["error"] == \
        "needs the Hermes Agent host (imports providers.routing)"


def test_a_guarded_or_lazy_hermes_import_is_not_reported_before_loading(home: Path) -> None:
    make_folder_plugin(home / "plugins", "careful", """
from typing import TYPE_CHECKING
if TYPE_CHECKING:
    from gateway.config import Platform
try:
    import model_tools
except ImportError:
    model_tools = None

def register(ctx):
    from gateway.config import Platform
""")
    assert rows()["careful"]["needs_host"] is None


def test_a_lazy_import_in_a_tool_handler_loads_and_the_tool_says_what_it_needs(home: Path) -> None:
    make_folder_plugin(home / "plugins", "reactions", """
def set_reaction(args, **kwargs):
    from gateway.hooks import HookRegistry
    return "{}"

def register(ctx):
    ctx.register_tool("set_reaction", "telegram", {"name": "set_reaction", "description": "React",
                      "parameters": {"type": "object", "properties": {}}}, set_reaction)
""")
    write_config(home, "plugins:\n  enabled: [reactions]\n")
    assert rows("doctor")["reactions"]["status"] == "ok"
    result = hermes("tools", "call", "set_reaction", "{}", check=None)
    assert json.loads(result.stdout) == {"error": f"Tool execution failed: {GATEWAY}"}
    assert "Traceback" not in result.stderr


def test_a_requirement_on_hermes_agent_alone_refuses_nothing(home: Path, site: Path) -> None:
    install_dist(site, "hermes-react", {"react": "hermes_react"}, {"hermes_react": """
from tools.registry import tool_result

def register(ctx):
    ctx.register_tool("react", "chat", {"name": "react", "description": "React",
                      "parameters": {"type": "object", "properties": {}}}, lambda args, **kw: tool_result(ok=True))
"""}, requires=("hermes-agent>=0.18.2,<0.19",))
    write_config(home, "plugins:\n  enabled: [react]\n")
    assert (rows()["react"]["needs_host"], rows()["react"]["error"]) == (None, None)
    assert rows("doctor")["react"]["status"] == "ok"
    assert json.loads(hermes("tools", "call", "react", "{}").stdout) == {"ok": True}


def test_a_distribution_that_requires_hermes_agent_and_imports_its_gateway_is_refused_before_import(
        home: Path, site: Path) -> None:
    install_dist(site, "hermes-vk", {"vk": "hermes_vk"},
                 {"hermes_vk": "from gateway.hooks import HookRegistry\ndef register(ctx):\n    pass\n"},
                 requires=("aiohttp>=3", "hermes-agent>=0", "pytest; extra == 'dev'"))
    write_config(home, "plugins:\n  enabled: [vk]\n")
    listed = rows()["vk"]
    assert listed["needs_host"] == GATEWAY
    assert GATEWAY in hermes("plugins", "list").stdout
    text = hermes("plugins", "doctor", check=1)
    assert GATEWAY in text.stdout and "Traceback" not in text.stdout + text.stderr
    doctor = rows("doctor")["vk"]
    assert (doctor["status"], doctor["error"], doctor["registered"]) == ("failed", GATEWAY, {})


def test_hermes_agent_as_an_extra_only_is_no_requirement(home: Path, site: Path) -> None:
    install_dist(site, "hermes-opt", {"opt": "hermes_opt"}, {"hermes_opt": "def register(ctx):\n    pass\n"},
                 requires=("hermes-agent>=0.18; extra == 'host'",))
    write_config(home, "plugins:\n  enabled: [opt]\n")
    assert rows()["opt"]["needs_host"] is None
    assert rows("doctor")["opt"]["status"] == "ok"
