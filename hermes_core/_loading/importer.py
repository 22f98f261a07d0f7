"""Importing a discovered plugin: a folder package from its path, or an entry point.

A folder plugin is imported as `hermes_plugins.<slug>`, the name Hermes Agent gives it (the slug
is the plugin id with `/` as `__` and any other character that cannot be in a name as `_`:
`context_engine/lcm` is `hermes_plugins.context_engine__lcm`, `hermes-otel` is
`hermes_plugins.hermes_otel`). Its relative imports work, and so do absolute ones such as
`from hermes_plugins.hermes_otel.tracer import get_tracer`. `hermes_plugins` itself is a
namespace package made up in `sys.modules`, with no files of its own.
"""

from __future__ import annotations

import hashlib
import importlib.util
import sys
import threading
import types
from pathlib import Path
from typing import Any

from .._discovery.spec import ENTRY_POINT_GROUP, NAMESPACE, PluginSpec, bare_module_name

__all__ = ["import_plugin", "module_label", "module_name", "forget_module"]

_claims: dict[str, Path] = {}  # a module name -> the folder whose code it holds in this process
_claims_lock = threading.Lock()


def module_name(spec: PluginSpec) -> str:
    """The module a folder plugin is imported as: `hermes_plugins.<slug>`, or, when another folder
    (another HERMES_HOME in this process) already holds that name, the name with a suffix."""
    assert spec.path is not None
    bare = bare_module_name(spec.id)
    folder = spec.path.resolve()
    with _claims_lock:
        if _claims.setdefault(bare, folder) == folder:
            return bare
        name = f"{bare}__{hashlib.sha256(str(folder).encode()).hexdigest()[:12]}"
        _claims[name] = folder
        return name


def module_label(spec: PluginSpec) -> str:
    """The import a plugin's loading starts with, as it is shown in failures."""
    if spec.entry_point is not None:
        return f"import {spec.entry_point}"
    return f"import {spec.path}"


def forget_module(name: str) -> None:
    """Drop a module and its submodules from `sys.modules`, so a later retry imports afresh."""
    for key in [k for k in sys.modules if k == name or k.startswith(name + ".")]:
        del sys.modules[key]
    parent, _, child = name.rpartition(".")
    if parent == NAMESPACE and NAMESPACE in sys.modules:
        vars(sys.modules[NAMESPACE]).pop(child, None)


def _namespace() -> None:
    """`hermes_plugins` in `sys.modules`: a package with no folders of its own."""
    if NAMESPACE not in sys.modules:
        package = types.ModuleType(NAMESPACE, "Folder plugins, each imported as hermes_plugins.<slug>.")
        package.__path__ = []
        package.__package__ = NAMESPACE
        sys.modules[NAMESPACE] = package


def import_plugin(spec: PluginSpec) -> tuple[Any, str | None]:
    """Import the plugin and return its object, and the module name to forget on rollback."""
    if spec.portable:
        return _portable(spec), None
    if spec.entry_point is not None:
        from importlib.metadata import EntryPoint

        return EntryPoint(name=spec.id, value=spec.entry_point, group=ENTRY_POINT_GROUP).load(), None
    assert spec.path is not None
    name = module_name(spec)
    forget_module(name)  # a stale submodule would answer the new package's relative imports
    _namespace()
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
    setattr(sys.modules[NAMESPACE], name.rpartition(".")[2], module)  # `hermes_plugins.<slug>` as an attribute too
    return module, name


def _portable(spec: PluginSpec) -> Any:
    """A Portable Agent Plugins v1 package as a plugin: its valid skills registered, nothing imported."""
    import logging

    from .._skills.portable import load_agent_plugin

    assert spec.path is not None
    package = load_agent_plugin(spec.path)  # AgentPluginError: the plugin fails, saying why

    def register(ctx: Any) -> None:
        for note in package.diagnostics:
            logging.getLogger("hermes_core.plugins").warning("Agent Plugin %r %s", spec.id, note)
        for skill in package.skills:
            ctx.register_skill(skill.name, skill.skill_md, skill.description, skill.frontmatter)

    return register
