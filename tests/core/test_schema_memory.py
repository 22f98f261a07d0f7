"""A tool schema checked once is not checked again: the next start that registers the same
tools (a plugin's, or an engine's and the memory provider's in a session) neither imports
jsonschema nor checks them, and an invalid schema is said every time."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.helpers import make_folder_plugin, write_config

TOOL = """
def register(ctx):
    ctx.register_tool("add", "calc", {{"name": "add", "description": "Add",
                      "parameters": {parameters}}}, lambda args, **kw: "{{}}")
"""
PROBE = """
import json, sys
from hermes_core import PluginManager
manager = PluginManager().load()
manager.open_session().close()  # the memory provider's tools register in the session's own registry
record = manager.record("calc")
print(json.dumps([record.status, str(record.failure or ""), "jsonschema" in sys.modules]))
"""


def start() -> list:
    return json.loads(subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, check=True).stdout)


def test_a_schema_checked_once_is_remembered_and_a_change_is_checked_again(home: Path) -> None:
    valid = '{"type": "object", "properties": {"a": {"type": "number"}}}'
    make_folder_plugin(home / "plugins", "calc", TOOL.format(parameters=valid), "name: calc\n")
    write_config(home, "plugins:\n  enabled: [calc]\n")
    assert start() == ["ok", "", True]  # checked: jsonschema imported
    assert start() == ["ok", "", False]  # remembered: not even imported
    invalid = '{"type": "object", "properties": {"a": {"type": 5}}}'
    make_folder_plugin(home / "plugins", "calc", TOOL.format(parameters=invalid), "name: calc\n")
    for _ in range(2):  # an invalid schema is never remembered: its error every time
        status, failure, _ = start()
        assert status == "failed" and "schema parameters is not a valid JSON Schema at properties/a/type" in failure
    cache = home / ".cache" / "valid-schemas.json"
    cache.write_text("{not json")  # damaged: no memory, checked, the file written again whole
    make_folder_plugin(home / "plugins", "calc", TOOL.format(parameters=valid), "name: calc\n")
    assert start() == ["ok", "", True]
    assert len(json.loads(cache.read_text())["valid"]) >= 1
    assert start() == ["ok", "", False]
