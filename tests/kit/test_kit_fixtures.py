"""The test kit's pytest fixtures, used the way a plugin author's tests use them (no imports)."""

from __future__ import annotations

import json
import os
import types
from pathlib import Path

import pytest


def test_hermes_home_is_empty_and_isolated(hermes_home: Path) -> None:
    assert os.environ["HERMES_HOME"] == str(hermes_home) and list(hermes_home.iterdir()) == []
    assert "HERMES_ENABLE_PROJECT_PLUGINS" not in os.environ


def test_hermes_config_merges_into_config_yaml(hermes_config, hermes_home: Path) -> None:
    hermes_config({"context": {"engine": "lcm"}, "plugins": {"enabled": ["a"]}})
    hermes_config({"plugins": {"disabled": ["b"]}})
    from hermes_core import load_config

    config = load_config(hermes_home)
    assert config.get("context.engine") == "lcm"
    assert config.string_list("plugins.enabled") == ["a"] and config.string_list("plugins.disabled") == ["b"]


def echo_plugin() -> types.ModuleType:
    module = types.ModuleType("hermes_echo_plugin")
    exec("def register(ctx):\n    ctx.register_tool('echo', 'echo', {'name': 'echo', 'parameters': "
         "{'type': 'object', 'properties': {'text': {'type': 'string'}}}}, lambda args, **kw: args['text'])",
         module.__dict__)
    return module


def test_hermes_manager_loads_modules_objects_and_entry_points(hermes_manager) -> None:
    manager = hermes_manager(echo_plugin(), "textstats", "json")
    assert manager.dispatch_tool("echo", {"text": "hi"}) == "hi"  # a module object
    assert "text_stats" in {t.name for t in manager.tool_infos()}  # an installed entry point, enabled
    assert manager.record("json").status == "ok"  # a module by its import name (it registers nothing)
    assert manager.select("context_engine").name == "compressor"  # the built-ins are there


def test_hermes_manager_names_a_plugin_that_fails(hermes_manager) -> None:
    broken = types.ModuleType("hermes_broken")
    exec("def register(ctx):\n    raise RuntimeError('boom')", broken.__dict__)
    with pytest.raises(AssertionError, match="plugin 'hermes-broken' did not load: RuntimeError: boom"):
        hermes_manager(broken)


def test_plugin_ctx_and_scripted_llm(plugin_ctx, scripted_llm) -> None:
    scripted_llm.reply("pong")
    ctx = plugin_ctx()
    assert ctx.llm.complete([{"role": "user", "content": "ping"}]).text == "pong"
    assert scripted_llm.requests[0].body["model"] == "scripted-model"
    assert plugin_ctx(echo_plugin()).plugin_id == "hermes-echo-plugin"
    assert json.loads(ctx.dispatch_tool("current_time", {}))["timezone"] == "UTC"
