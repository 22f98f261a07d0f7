"""`tools.registry.registry`: hermes-core's tool registry seen through Hermes' `ToolRegistry`.

There is one registry: the manager's (the one loading plugins in this thread, else the one that
loaded plugins last in this process). `registry._tools` is a live, read-only view of its tools
as Hermes' `ToolEntry`s; `register(...)` while a plugin loads is that plugin's
`ctx.register_tool(...)` (a tool registered again under its name with `override=True` replaces
it for as long as the registering plugin is loaded, given the operator's
`plugins.entries.<id>.allow_tool_override`; unloading it brings the old tool back);
`deregister(name)` while a plugin loads takes away one of its own tools, or with that grant any
tool, until it unloads; `dispatch` runs a tool as Hermes' does, with hermes-core's validation
and time limit and no plugin's hooks.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from .._errors import RegistrationError
from .._undo import put
from . import names as hermes_names
from .tool_registry import ToolEntry, ToolRegistry

__all__ = ["ServedRegistry", "registry"]

log = logging.getLogger("hermes_core.hermes_names")


def _entry(found: Any) -> ToolEntry:
    tool = found.tool
    return ToolEntry(tool.name, tool.toolset, dict(found.schema), tool.handler, tool.check_fn, list(tool.requires_env),
                     found.is_async, tool.description or str(found.schema.get("description", "")), tool.emoji)


class _Tools(Mapping[str, ToolEntry]):
    """The manager's tools by name, as Hermes' entries (read-only: register through `register`)."""

    def __init__(self, tools: Any) -> None:
        self._source = tools

    def __getitem__(self, name: str) -> ToolEntry:
        found = self._source.entry(name) if self._source is not None else None
        if found is None:
            raise KeyError(name)
        return _entry(found)

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(tool.name for tool in self._source) if self._source is not None else [])

    def __len__(self) -> int:
        return len(self._source) if self._source is not None else 0

    def __setitem__(self, name: str, value: Any) -> None:
        raise TypeError(f"tools.registry.registry._tools is read-only under hermes-core; register {name!r} with "
                        "registry.register(...) (override=True to replace a tool) while the plugin loads")

    __delitem__ = __setitem__


def _loading(call: str) -> hermes_names.Loading:
    plugin = hermes_names.loading()
    if plugin is None:
        raise RegistrationError(
            f"tools.registry.registry.{call} was called outside a plugin's load: hermes-core registers a plugin's "
            "tools while the plugin loads. Call it when the plugin module is imported or from its register(ctx), "
            "or use ctx.register_tool(...) there"
        )
    return plugin


class ServedRegistry(ToolRegistry):
    """Hermes' registry singleton, answered by the manager's tool registry."""

    def __init__(self) -> None:  # no table of its own: the manager's is the one
        pass

    @property
    def _tools(self) -> _Tools:  # type: ignore[override]
        return _Tools(hermes_names.current_tools())

    def _snapshot_state(self, scope: str | None = None) -> tuple[list[ToolEntry], dict[str, Callable[[], Any]]]:
        entries = list(self._tools.values())
        return entries, {e.toolset: e.check_fn for e in entries if e.check_fn is not None}

    def register(
        self,
        name: str,
        toolset: str,
        schema: dict[str, Any],
        handler: Callable[..., Any],
        check_fn: Callable[[], Any] | None = None,
        requires_env: list[str] | None = None,
        is_async: bool = False,
        description: str = "",
        emoji: str = "",
        max_result_size_chars: int | float | None = None,
        dynamic_schema_overrides: Callable[[], Any] | None = None,
        override: bool = False,
        scope: str | None = None,
    ) -> None:
        """Register a tool for the plugin that is loading (its `ctx.register_tool`)."""
        plugin = _loading(f"register({name!r})")
        if dynamic_schema_overrides is not None:
            log.warning("plugin %r: tool %r has dynamic_schema_overrides; hermes-core offers its static schema",
                        plugin.plugin_id, name)
        if not description and isinstance(schema, Mapping):
            description = str(schema.get("description") or "")
        plugin.ctx().register_tool(name, toolset, schema, handler, check_fn, requires_env, is_async, description,
                                   emoji, override)

    def deregister(self, name: str, *, scope: str | None = None) -> None:
        """Take tool `name` away while the loading plugin is loaded (see the module's doc)."""
        plugin = _loading(f"deregister({name!r})")
        undo = plugin.tools.remove(name, plugin.plugin_id)
        if undo is not None:
            plugin.keep(undo)

    def register_toolset_alias(self, alias: str, toolset: str) -> None:
        """`alias` names `toolset` while the loading plugin is loaded (outside a load: for good)."""
        plugin = hermes_names.loading()
        undo = put(self._aliases(), alias, toolset)
        if plugin is not None:
            plugin.keep(undo)

    def _exposable(self, toolset: str, entries: list[ToolEntry], memo: dict[Any, bool] | None = None) -> bool:
        tools = hermes_names.current_tools()
        return tools is not None and any(i.available for i in tools.infos() if i.toolset == toolset)

    def get_definitions(self, tool_names: Iterable[str], quiet: bool = False) -> list[dict[str, Any]]:
        """The OpenAI `tools` entries of the named tools that are available now (hermes-core's
        availability: the tool's `check_fn` and `requires_env`)."""
        tools, wanted = hermes_names.current_tools(), set(tool_names)
        infos = sorted((i for i in tools.infos() if i.name in wanted and i.available), key=lambda i: i.name) \
            if tools is not None else []
        return [{"type": "function", "function": {**info.schema, "name": info.name}} for info in infos]

    def dispatch(self, name: str, args: Any, *, scope: str | None = None, **kwargs: Any) -> str:
        """Run tool `name` (no plugin's hooks, as in Hermes); `{"error": ...}` on failure."""
        tools = hermes_names.current_tools()
        if tools is None:
            unknown: str = super().dispatch(name, args, **kwargs)  # nothing loaded: an unknown tool
            return unknown
        result: str = tools.dispatch_without_hooks(name, args, **kwargs)
        return result

    def __getattr__(self, name: str) -> Any:
        raise AttributeError(
            f"tools.registry.registry.{name} is not served by hermes-core: a plugin registers tools with "
            "register(...) while it loads and reads them with _tools, get_entry, get_all_tool_names, "
            "get_definitions, is_toolset_available, get_available_toolsets, ...; see docs/hermes.md"
        )


registry = ServedRegistry()
