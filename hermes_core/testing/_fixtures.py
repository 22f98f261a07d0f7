"""What the test kit's fixtures are made of: a config file a test writes to, and loading
chosen plugins (a module, an object, or an installed entry point's name) into a manager."""

from __future__ import annotations

import importlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .._config.config import Config
from .._manager import PluginManager

__all__ = ["HermesConfig", "load_plugins"]


def _merge(into: dict[str, Any], values: Mapping[str, Any]) -> None:
    for key, value in values.items():
        if isinstance(value, Mapping) and isinstance(into.get(key), dict):
            _merge(into[key], value)
        else:
            into[key] = json.loads(json.dumps(value))


class HermesConfig:
    """`$HERMES_HOME/config.yaml` for one test: call it with a mapping to merge into it.

    >>> hermes_config({"context": {"engine": "lcm"}})
    """

    def __init__(self, home: Path) -> None:
        self.path = home / "config.yaml"
        self.values: dict[str, Any] = {}

    def __call__(self, values: Mapping[str, Any]) -> Path:
        _merge(self.values, values)
        self.path.write_text(json.dumps(self.values, indent=2), encoding="utf-8")  # JSON is YAML
        return self.path

    def enable(self, plugin_id: str) -> None:
        enabled = Config(self.values).string_list("plugins.enabled")
        if plugin_id not in enabled:
            self({"plugins": {"enabled": [*enabled, plugin_id]}})


def _plugin_id(plugin: Any) -> str:
    """A module `hermes_word_tools` (or a function `word_tools`) loads as plugin `hermes-word-tools`."""
    name = getattr(plugin, "__name__", None) or type(plugin).__name__
    return name.rsplit(".", 1)[-1].replace("_", "-").strip("-") or "plugin"


def load_plugins(home: Path, config: HermesConfig, plugins: tuple[Any, ...]) -> PluginManager:
    """A manager for `home` with the built-in plugins and `plugins` loaded; fails the test
    (AssertionError) naming the plugin when one of them does not load."""
    from .._discovery.discover import discover

    discovered = {name for spec in discover(home=home).plugins for name in (spec.id, spec.name)}
    by_name = [p for p in plugins if isinstance(p, str) and p in discovered]
    for name in by_name:
        config.enable(name)
    manager = PluginManager(home=home).load()
    for plugin in plugins:
        if isinstance(plugin, str) and plugin in by_name:
            record = manager.record(plugin)
        else:
            obj = importlib.import_module(plugin) if isinstance(plugin, str) else plugin
            record = manager.add_plugin(obj, _plugin_id(obj))
        assert record.status == "ok", f"plugin {record.id!r} did not load: {record.failure}"
    return manager
