"""A plugin reaches the host only through `ctx`'s public members: nothing on `ctx` (nor on
anything it holds) leads to the manager, a registry, the pluggy instance or another plugin's
registrations. Tried the way a hostile plugin author would."""

from __future__ import annotations

import json
import types
from pathlib import Path
from typing import Any

import pluggy
import pytest

from hermes_core import (
    AgentSession,
    CommandRegistry,
    HookRunner,
    LifecycleHooks,
    PluginContext,
    PluginManager,
    PluginRecord,
    RegistrationError,
    SlotRegistry,
    ToolRegistry,
)
from tests.helpers import OPAQUE, referents

HOST_STATE = (PluginManager, ToolRegistry, CommandRegistry, HookRunner, SlotRegistry, LifecycleHooks,
              pluggy.PluginManager, PluginRecord, AgentSession)
SCHEMA = {"name": "victim_tool", "parameters": {"type": "object", "properties": {}}}


def victim(ctx: Any) -> None:
    ctx.register_tool("victim_tool", "victim", SCHEMA, lambda args, **kw: json.dumps({"ok": True}))


def host_state_reachable_from(ctx: PluginContext) -> tuple[list[str], int]:
    """Every object of the host's own state reachable from `ctx` and its public members, as a
    path of steps; and how many objects the walk saw."""
    roots = [ctx, *(getattr(ctx, name) for name in dir(ctx) if not name.startswith("_"))]
    found, seen = [], set()
    stack: list[tuple[Any, str]] = [(root, f"ctx{i}") for i, root in enumerate(roots)]
    while stack:
        obj, path = stack.pop()
        if id(obj) in seen or isinstance(obj, OPAQUE) or obj is None or isinstance(obj, (str, bytes, int, float)):
            continue
        seen.add(id(obj))
        if isinstance(obj, HOST_STATE) or (isinstance(obj, PluginContext) and obj is not ctx):
            found.append(f"{path} is a {type(obj).__name__}")
            continue
        stack.extend((child, f"{path}>{type(child).__name__}") for child in referents(obj))
    return found, len(seen)


def test_a_plugin_cannot_delete_another_plugins_tool_through_ctx(home: Path) -> None:
    def hostile(ctx: Any) -> None:
        ctx._manager.tools._entries.pop("victim_tool")  # what a plugin author would try first

    manager = PluginManager(home=home, discover_plugins=False).load()
    assert manager.add_plugin(victim, "victim").status == "ok"
    record = manager.add_plugin(hostile, "hostile")
    assert record.status == "failed"
    assert record.failure is not None and record.failure.type == "AttributeError"
    assert "'_manager'" in record.failure.message
    assert "nothing on ctx leads to the manager, the registries or another plugin" in record.failure.message
    assert json.loads(manager.dispatch_tool("victim_tool", {})) == {"ok": True}


@pytest.mark.parametrize("name", ["_manager", "_record", "_registrar", "_loader", "_tools", "pluggy", "manager"])
def test_every_private_or_host_attribute_is_a_clear_attribute_error(home: Path, name: str) -> None:
    manager = PluginManager(home=home, discover_plugins=False).load()
    ctx = manager.add_plugin(victim, "victim").ctx
    with pytest.raises(AttributeError, match=f"no attribute '{name}': a plugin reaches the host only through"):
        getattr(ctx, name)
    with pytest.raises(AttributeError):
        setattr(ctx, name, object())  # nothing can be planted on ctx either
    assert not hasattr(ctx, "__dict__")


def test_nothing_reachable_from_ctx_is_the_hosts_state(home: Path) -> None:
    (home / "config.yaml").write_text("model: {provider: custom, model: m, base_url: 'http://127.0.0.1:9/v1'}\n")
    manager = PluginManager(home=home, discover_plugins=False).load()
    manager.add_plugin(victim, "victim")
    record = manager.add_plugin(lambda ctx: ctx.register_command("probe", lambda raw: raw), "probe")
    ctx = record.ctx
    assert ctx is not None
    assert ctx.llm is not None  # created: its host side is walked too
    with manager.open_session("s1"):
        found, seen = host_state_reachable_from(ctx)
    assert found == []
    assert seen > 50, f"the walk saw only {seen} objects; it is not walking"


def test_the_walk_finds_host_state_planted_deep_in_the_object_graph(home: Path) -> None:
    manager = PluginManager(home=home, discover_plugins=False).load()
    ctx = manager.add_plugin(victim, "victim").ctx
    assert ctx is not None
    tools = manager.tools
    ctx.logger.hermes_test_marker = types.SimpleNamespace(inner=[{"note": lambda: tools}])  # type: ignore[attr-defined]
    try:
        found, _ = host_state_reachable_from(ctx)
    finally:
        del ctx.logger.hermes_test_marker  # type: ignore[attr-defined]
    assert any("ToolRegistry" in path for path in found)


def test_a_ctx_kept_after_its_plugin_was_unloaded_cannot_register(home: Path) -> None:
    kept: list[Any] = []
    (home / "plugins" / "keeper").mkdir(parents=True)
    (home / "plugins" / "keeper" / "plugin.yaml").write_text("name: keeper\n")
    (home / "plugins" / "keeper" / "__init__.py").write_text(
        "def register(ctx):\n    ctx.register_command('keep', lambda raw: raw)\n    KEPT.append(ctx)\n"
    )
    (home / "config.yaml").write_text("plugins: {enabled: [keeper]}\n")
    import builtins

    builtins.KEPT = kept  # type: ignore[attr-defined]
    try:
        manager = PluginManager(home=home).load()
        assert manager.record("keeper").status == "ok"
        (home / "config.yaml").write_text("plugins: {enabled: []}\n")
        manager.reload()
    finally:
        del builtins.KEPT  # type: ignore[attr-defined]
    with pytest.raises(RegistrationError, match="plugin 'keeper' was refused: the plugin is no longer loaded"):
        kept[0].register_command("late", lambda raw: raw)
    assert manager.commands.get("late") is None


def test_a_ctx_whose_manager_is_gone_says_so(home: Path) -> None:
    import gc

    ctx = PluginManager(home=home, discover_plugins=False).load().add_plugin(victim, "victim").ctx
    gc.collect()  # the host let go of its manager; the ctx does not keep it alive
    with pytest.raises(RegistrationError, match="its manager is gone"):
        ctx.dispatch_tool("victim_tool", {})
