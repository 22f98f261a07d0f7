"""`tools.registry.registry` as published plugins use it: a plugin that reads every tool from
`registry._tools`, one that wraps another plugin's tool by registering its name again, one that
takes a tool away; the served registry is the agent's own, so a wrapped tool is the tool the
agent calls, still validated, hooked and timed by hermes-core."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from hermes_core import PluginManager
from tests.helpers import hermes, hermes_json, make_folder_plugin, write_config

SHOUT = '''
from tools.registry import registry, tool_result

registry.register(
    name="shout", toolset="voice",
    schema={"name": "shout", "description": "Say it loud",
            "parameters": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}},
    handler=lambda args, **kw: tool_result(text=args["text"].upper()),
    emoji="📣",
)
'''

# The pattern of published tool-wrapping plugins: look the tool up in `_tools`, register the
# same name with a handler that calls the old one.
WRAPPER = '''
import json

from tools.registry import registry


def register(ctx):
    old = registry._tools["shout"]

    def polite(args, **kwargs):
        said = json.loads(old.handler(args, **kwargs))
        return json.dumps({"text": said["text"] + ", PLEASE", "wrapped": old.toolset})

    registry.register(name=old.name, toolset=old.toolset, schema=old.schema, handler=polite,
                      description=old.description, emoji=old.emoji, override=True)
'''

INVENTORY = '''
from tools.registry import registry


def register(ctx):
    seen = sorted((name, entry.toolset, entry.emoji, entry.is_async, callable(entry.handler))
                  for name, entry in registry._tools.items())
    ctx.register_command("inventory", lambda raw: repr(seen))
'''


def plugin(home: Path, name: str, code: str) -> None:
    make_folder_plugin(home / "plugins", name, code, f"name: {name}\nversion: 1.0.0\n")


def call(name: str, args: dict[str, Any], check: int = 0) -> Any:
    return json.loads(hermes("tools", "call", name, json.dumps(args), check=check).stdout)


def test_a_plugin_reads_every_tool_from_registry_tools(home: Path) -> None:
    plugin(home, "a_shout", SHOUT)
    plugin(home, "inventory", INVENTORY)
    write_config(home, "plugins:\n  enabled: [a_shout, inventory]\n")
    manager = PluginManager(home=home).load()
    try:
        assert manager.record("inventory").status == "ok", manager.record("inventory").failure
        seen = eval(manager.run_command("inventory"))  # noqa: S307 (the repr the fixture made)
        assert ("shout", "voice", "📣", False, True) in seen
        assert {name for name, *_ in seen} == {tool.name for tool in manager.tools}
    finally:
        manager.close()


@pytest.mark.fires("pre_tool_call", "post_tool_call")
def test_a_wrapped_tool_is_the_one_the_agent_calls_with_hermes_cores_checks_around_it(home: Path) -> None:
    plugin(home, "a_shout", SHOUT)
    plugin(home, "wrap", WRAPPER)
    seen: list[tuple[str, Any]] = []

    def pre_tool_call(tool_name: str, args: Any, **kwargs: Any) -> None:
        seen.append(("pre", tool_name))

    def post_tool_call(tool_name: str, result: Any, **kwargs: Any) -> None:
        seen.append(("post", json.loads(result)))

    write_config(home, "plugins:\n  enabled: [a_shout, wrap]\n  entries:\n    wrap: {allow_tool_override: true}\n")
    manager = PluginManager(home=home).load()
    try:
        manager.add_plugin(lambda ctx: (ctx.register_hook("pre_tool_call", pre_tool_call),
                                        ctx.register_hook("post_tool_call", post_tool_call)), "watch")
        assert manager.record("wrap").registered == {"tools": ["shout"]}
        answer = json.loads(manager.dispatch_tool("shout", {"text": "hi"}))
        assert answer == {"text": "HI, PLEASE", "wrapped": "voice"}
        assert seen == [("pre", "shout"), ("post", answer)]  # the hooks are around the wrapper
        refused = json.loads(manager.dispatch_tool("shout", {}))  # hermes-core still validates its arguments
        assert "text" in refused["error"] and len(seen) == 2 + 2
        from tools.registry import registry

        assert registry.get_entry("shout").handler is not None and registry.get_toolset_for_tool("shout") == "voice"
    finally:
        manager.close()
    assert call("shout", {"text": "hey"}) == {"text": "HEY, PLEASE", "wrapped": "voice"}  # the CLI's tool too
    write_config(home, "plugins:\n  enabled: [a_shout]\n")
    assert call("shout", {"text": "hey"}) == {"text": "HEY"}  # the wrapper gone, the tool is the old one


def test_wrapping_another_plugins_tool_needs_the_operators_grant(home: Path) -> None:
    plugin(home, "a_shout", SHOUT)
    plugin(home, "wrap", WRAPPER)
    write_config(home, "plugins:\n  enabled: [a_shout, wrap]\n")
    row = next(p for p in hermes_json("plugins", "doctor", check=1)["plugins"] if p["id"] == "wrap")
    assert row["status"] == "failed" and "plugins.entries.wrap.allow_tool_override: true" in row["error"]
    assert call("shout", {"text": "hi"}) == {"text": "HI"}  # the failed wrapper left the tool alone


def test_deregister_takes_a_tool_away_while_the_plugin_is_loaded(home: Path) -> None:
    plugin(home, "a_shout", SHOUT)
    plugin(home, "quiet", '''
from tools.registry import registry

def register(ctx):
    registry.deregister("shout")
    registry.deregister("no_such_tool")  # nothing to take: nothing happens, as in Hermes
''')
    write_config(home, "plugins:\n  enabled: [a_shout, quiet]\n  entries:\n    quiet: {allow_tool_override: true}\n")
    assert "shout" not in {row["name"] for row in hermes_json("tools", "list")}
    write_config(home, "plugins:\n  enabled: [a_shout, quiet]\n")  # no grant: it may not
    row = next(p for p in hermes_json("plugins", "doctor", check=1)["plugins"] if p["id"] == "quiet")
    assert "may not remove tool 'shout'" in row["error"] and "allow_tool_override" in row["error"]
    assert "shout" in {row["name"] for row in hermes_json("tools", "list")}


def test_the_readers_answer_in_hermes_shapes(home: Path) -> None:
    plugin(home, "a_shout", SHOUT + '''
registry.register(name="whisper", toolset="gated", handler=lambda args, **kw: "{}", check_fn=lambda: False,
                  requires_env=["WHISPER_KEY"],
                  schema={"name": "whisper", "description": "Quietly", "parameters": {"type": "object"}})
registry.register(name="crash", toolset="broken", handler=lambda args, **kw: "{}", check_fn=lambda: 1 / 0,
                  schema={"name": "crash", "description": "Breaks", "parameters": {"type": "object"}})
''')
    plugin(home, "reader", '''
from tools.registry import registry

def register(ctx):
    def report(raw):
        toolsets = registry.get_available_toolsets()
        return repr((sorted(d["function"]["name"] for d in registry.get_definitions({"shout", "whisper", "crash"})),
                     registry.is_toolset_available("voice"), registry.is_toolset_available("gated"),
                     registry.is_toolset_available("broken"), toolsets["gated"]["tools"],
                     toolsets["gated"]["requirements"], toolsets["voice"]["available"],
                     registry.get_entry("nope"), "shout" in registry.get_all_tool_names()))
    ctx.register_command("report", report)
''')
    write_config(home, "plugins:\n  enabled: [a_shout, reader]\n")
    manager = PluginManager(home=home).load()
    try:
        assert manager.run_command("report") == repr(
            (["shout"], True, False, False, ["whisper"], ["WHISPER_KEY"], True, None, True))
        from tools.registry import registry

        with pytest.raises(TypeError, match="read-only"):
            registry._tools["shout"] = None
        assert json.loads(registry.dispatch("crash", {}))["error"]  # no check: unavailable is an error result
    finally:
        manager.close()
