"""Hermes' plugin surface re-read for round 4 (issue 60): what a plugin may read from config at
register time, memory providers Hermes reads as exclusive, the whole model-provider profile
(`create_client` and the hooks the runtime reads), `gateway.run`'s runner for installers, and
context engines that prepare their compression in the background. Each plugin is written the way
the published ones are."""

from __future__ import annotations

import json
from pathlib import Path

from hermes_core import PluginManager
from hermes_core.agent import Agent
from hermes_core.testing import ScriptedServer
from tests.helpers import hermes, hermes_json, llm_config, make_folder_plugin, write_config

# A plugin that sizes itself from the model's window at register time, as a published one does.
SIZED = '''
from hermes_cli.config import load_config

def register(ctx):
    window = load_config()["model"]["context_length"]
    if not isinstance(window, int):
        raise RuntimeError(f"model.context_length is not an integer: {window!r}")
    ctx.register_tool("window", "sized", {"name": "window", "description": "the window",
                      "parameters": {"type": "object", "properties": {}}}, lambda args, **kw: str(window))
'''


def test_a_plugin_reads_an_integer_context_length_at_register_time(home: Path) -> None:
    make_folder_plugin(home / "plugins", "sized", SIZED, "name: sized\nversion: 1.0.0\n")
    write_config(home, "model:\n  provider: custom\n  model: local-model\nplugins:\n  enabled: [sized]\n")
    row = next(p for p in hermes_json("plugins", "doctor")["plugins"] if p["id"] == "sized")
    assert row["status"] == "ok", row["error"]
    assert hermes("tools", "call", "window", "{}").stdout.strip() == "128000"  # the window hermes-core runs with
    write_config(home, "model:\n  model: local-model\n  context_length: 32000\nplugins:\n  enabled: [sized]\n")
    assert hermes("tools", "call", "window", "{}").stdout.strip() == "32000"  # the operator's


# A folder memory provider with a manifest that declares no kind: Hermes' heuristic reads it as
# `exclusive`, its general manager never loads it, its memory loader does when selected.
EXCLUSIVE = '''
import os
from agent.memory_provider import MemoryProvider

class Jotter(MemoryProvider):
    @property
    def name(self):
        return "jotter"
    def is_available(self):
        return True
    def initialize(self, session_id, **kwargs):
        pass
    def get_tool_schemas(self):
        return []

def register(ctx):
    open(os.path.join(os.environ["HERMES_HOME"], "jotter-loaded"), "a").write("x")
    ctx.register_memory_provider(Jotter())
'''


def test_a_memory_provider_without_a_kind_loads_only_when_selected(home: Path) -> None:
    make_folder_plugin(home / "plugins", "jotter", EXCLUSIVE, "name: jotter\nversion: 0.1.0\n")
    write_config(home, "plugins:\n  enabled: [jotter]\n")
    listed = next(p for p in hermes_json("plugins", "list") if p["id"] == "jotter")
    assert listed["kind"] == "memory" and listed["enabled"] is False
    assert "memory.provider selects it" in listed["reason"]
    report = hermes_json("plugins", "doctor")
    assert all(p["id"] != "jotter" for p in report["plugins"])
    assert not (home / "jotter-loaded").exists()  # never imported by the general loading
    write_config(home, "memory:\n  provider: jotter\n")  # its memory loader's: by name, enabled or not
    report = hermes_json("plugins", "doctor")
    assert next(p for p in report["plugins"] if p["id"] == "jotter")["status"] == "ok"
    assert report["slots"]["memory"] == "jotter"
