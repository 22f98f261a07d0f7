"""Importing a discovered plugin: a folder package from its path, or an entry point."""

from __future__ import annotations

import importlib.util
import re
import sys
from typing import Any

from ._discovery import ENTRY_POINT_GROUP, PluginSpec

__all__ = ["import_plugin", "module_label", "forget_module"]


def _folder_module_name(spec: PluginSpec) -> str:
    return f"_hermes_plugin__{spec.source}__{re.sub(r'[^0-9A-Za-z_]', '_', spec.id)}"


def module_label(spec: PluginSpec) -> str:
    """The import a plugin's loading starts with, as it is shown in failures."""
    if spec.entry_point is not None:
        return f"import {spec.entry_point}"
    return f"import {spec.path}"


def forget_module(name: str) -> None:
    """Drop a module and its submodules from `sys.modules`, so a later retry imports afresh."""
    for key in [k for k in sys.modules if k == name or k.startswith(name + ".")]:
        del sys.modules[key]


def import_plugin(spec: PluginSpec) -> tuple[Any, str | None]:
    """Import the plugin and return its object, and the module name to forget on rollback."""
    if spec.entry_point is not None:
        from importlib.metadata import EntryPoint

        return EntryPoint(name=spec.id, value=spec.entry_point, group=ENTRY_POINT_GROUP).load(), None
    assert spec.path is not None
    name = _folder_module_name(spec)
    forget_module(name)
    init = spec.path / "__init__.py"
    module_spec = importlib.util.spec_from_file_location(name, init, submodule_search_locations=[str(spec.path)])
    if module_spec is None or module_spec.loader is None:  # pragma: no cover - a readable __init__.py always has one
        raise ImportError(f"cannot import {init}")
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[name] = module
    try:
        module_spec.loader.exec_module(module)
    except BaseException:
        forget_module(name)
        raise
    return module, name
