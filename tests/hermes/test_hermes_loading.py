"""How Hermes plugins are loaded: a `register(ctx=None)` gets its ctx, a plugin that registered
nothing is a doctor warning, and `hermes plugins doctor --json` carries every warning the text
output prints."""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers import hermes, hermes_json, make_folder_plugin, write_config

REACT = '''
from typing import Any


def register(ctx: Any = None) -> None:
    ctx.register_tool("react", "chat", {"name": "react", "description": "React",
                      "parameters": {"type": "object", "properties": {}}}, lambda args, **kw: '{"ok": true}')
'''


def test_a_register_whose_ctx_has_a_default_is_called_with_the_ctx(home: Path) -> None:
    make_folder_plugin(home / "plugins", "react", REACT, "name: react\n")
    write_config(home, "plugins:\n  enabled: [react]\n")
    row = next(p for p in hermes_json("plugins", "doctor")["plugins"] if p["id"] == "react")
    assert (row["status"], row["registered"]) == ("ok", {"tools": ["react"]})
    assert json.loads(hermes("tools", "call", "react", "{}").stdout) == {"ok": True}


def test_doctor_json_carries_the_warnings_the_text_prints(home: Path) -> None:
    make_folder_plugin(home / "plugins", "idle", "def register(ctx=None):\n    pass\n", "name: idle\nkind: gizmo\n")
    make_folder_plugin(home / "plugins", "deaf", "def register(ctx):\n    ctx.register_hook('kanban_task_claimed', "
                       "lambda **kw: None)\n", "name: deaf\n")
    write_config(home, "plugins:\n  enabled: [idle, deaf]\nmodle:\n  provider: openai\n")
    report = hermes_json("plugins", "doctor")
    warnings = report["warnings"]
    expected = ["plugin 'idle' loaded but registered nothing", "unknown `kind` 'gizmo'", "modle",
                "plugin 'deaf' registered hooks this host never fires: kanban_task_claimed"]
    for part in expected:
        assert any(part in line for line in warnings), (part, warnings)
    text = hermes("plugins", "doctor").stdout
    assert all(f"warning: {line}" in text for line in warnings)


LATE_MANIFEST = """\
name: prism
version: 2.1.0
kind: standalone
description: A manifest with every field Hermes accepts late in 2026
requires_env:
  - PRISM_REGION
  - {name: PRISM_AGENT_KEY, description: The agent key, url: "https://prism.invalid/keys", secret: true}
update_url: https://prism.invalid/releases.json
python_runtime: ">=3.11"
extra: {maintainer: someone}
hooks: [pre_tool_call]
provides_hooks: [pre_tool_call]
python_dependencies: [requests>=2]
pip_dependencies: [requests>=2]
config_schema:
  - {key: api_key, description: The key, type: secret, env_var: PRISM_AGENT_KEY}
  - {key: region, type: text, default: eu}
"""


def test_every_manifest_field_hermes_accepts_loads(home: Path, monkeypatch) -> None:
    make_folder_plugin(home / "plugins", "prism", "def register(ctx):\n    ctx.register_command('prism', "
                       "lambda raw: 'ok')\n", LATE_MANIFEST)
    write_config(home, "plugins:\n  enabled: [prism]\n")
    listed = next(r for r in hermes_json("plugins", "list") if r["id"] == "prism")
    assert (listed["error"], listed["version"], listed["enabled"]) == (None, "2.1.0", True)
    report = hermes_json("plugins", "doctor", check=1)  # its variables are unset: a problem naming both
    assert any("PRISM_REGION, PRISM_AGENT_KEY" in p for p in report["problems"]), report["problems"]
    assert not any("prism" in w and "unknown field" in w for w in report["warnings"]), report["warnings"]
    monkeypatch.setenv("PRISM_REGION", "eu")
    monkeypatch.setenv("PRISM_AGENT_KEY", "k")
    row = next(p for p in hermes_json("plugins", "doctor")["plugins"] if p["id"] == "prism")
    assert (row["status"], row["registered"]) == ("ok", {"commands": ["prism"]})


def test_a_requires_env_mapping_without_a_name_is_one_line(home: Path) -> None:
    make_folder_plugin(home / "plugins", "bad", "def register(ctx):\n    pass\n",
                       "name: bad\nrequires_env:\n  - {description: no name here}\n")
    listed = next(r for r in hermes_json("plugins", "list") if r["id"] == "bad")
    assert "needs a `name`" in listed["error"] and "\n" not in listed["error"]


def test_an_entry_point_naming_a_function_loads_that_function_as_register(home: Path, site: Path) -> None:
    from tests.helpers import install_dist

    install_dist(site, "hermes-ep-func", {"epfunc": "ep_func.setup:install"}, {
        "ep_func.__init__": "",
        "ep_func.setup": "def install(ctx):\n    ctx.register_command('epfunc', lambda raw: 'installed')\n",
    })
    write_config(home, "plugins:\n  enabled: [epfunc]\n")
    row = next(p for p in hermes_json("plugins", "doctor")["plugins"] if p["id"] == "epfunc")
    assert (row["status"], row["registered"]) == ("ok", {"commands": ["epfunc"]})


# A memory provider written against Hermes' memory loader, whose collector takes any register_*
# call: a tool registered with Hermes' older three-argument shape, a command that fits.
LOOSE_MEMORY = '''
from agent.memory_provider import MemoryProvider


class Loose(MemoryProvider):
    name = "loose"

    def is_available(self):
        return True

    def initialize(self, session_id, **kwargs):
        pass

    def get_tool_schemas(self):
        return []


def recall_tool(args, **kwargs):
    return "{}"


def register(ctx):
    ctx.register_tool("loose_recall", {"name": "loose_recall", "parameters": {"type": "object"}}, recall_tool)
    ctx.register_command("loose", lambda raw: "loose memory")
    ctx.register_memory_provider(Loose())
'''


def test_a_memory_provider_folder_registers_as_hermes_memory_loader_lets_it(home: Path) -> None:
    folder = home / "plugins" / "memory" / "loose"
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text(LOOSE_MEMORY, encoding="utf-8")
    (folder / "plugin.yaml").write_text("name: loose\nversion: 0.3.1\n", encoding="utf-8")
    write_config(home, "memory:\n  provider: loose\n")
    report = hermes_json("plugins", "doctor")
    row = next(p for p in report["plugins"] if p["id"] == "memory/loose")
    assert row["status"] == "ok", row
    assert row["registered"] == {"commands": ["loose"], "providers": ["memory:loose"]}
    assert report["slots"]["memory"] == "loose"
    assert any("ctx.register_tool(...) called while registering its memory provider was left out" in w
               and "memory/loose" in w for w in report["warnings"]), report["warnings"]


def test_outside_a_memory_provider_a_call_that_does_not_fit_still_fails_the_load(home: Path) -> None:
    make_folder_plugin(home / "plugins", "strict", "def register(ctx):\n"
                       "    ctx.register_tool('x', {'name': 'x'}, lambda args: '{}')\n", "name: strict\n")
    write_config(home, "plugins:\n  enabled: [strict]\n")
    row = next(p for p in hermes_json("plugins", "doctor", check=1)["plugins"] if p["id"] == "strict")
    assert row["status"] == "failed" and "TypeError" in row["error"]
