"""Hermes' `tools.registry`: `registry`, `tool_error`, `tool_result`.

`registry.register(...)` called while a plugin loads (at import, or in `register(ctx)`) is that
plugin's `ctx.register_tool(...)`: the tool is the plugin's, checked the same way, and removed
if the plugin's load fails. Called at any other time it raises, saying what to do. The readers
(`get_entry`, `get_all_tool_names`, `get_schema`, ...) answer from the registry of the manager
that is loading (or last loaded) plugins in this process; `dispatch` runs a tool (no hooks, as
in Hermes).
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from .._errors import RegistrationError, UnknownToolError
from . import names as hermes_names

__all__ = ["ToolEntry", "ToolRegistry", "registry", "tool_error", "tool_result"]

log = logging.getLogger("hermes_core.hermes_names")
_MAX_ERROR_CHARS = 2048
_TRUNCATED = "… [truncated]"


def tool_error(message: Any, **extra: Any) -> str:
    """`{"error": message, **extra}` as a JSON string; the message is cut at 2,048 characters."""
    text = str(message)
    if len(text) > _MAX_ERROR_CHARS:
        text = text[:_MAX_ERROR_CHARS] + _TRUNCATED
    return json.dumps({"error": text, **extra}, ensure_ascii=False)


def tool_result(data: Any = None, **kwargs: Any) -> str:
    """`data` (or, when it is None, the keyword arguments) as a JSON string."""
    return json.dumps(data if data is not None else kwargs, ensure_ascii=False)


@dataclasses.dataclass(frozen=True)
class ToolEntry:
    """A registered tool as Hermes describes it (read-only: hermes-core owns the registration)."""

    name: str
    toolset: str
    schema: dict[str, Any]
    handler: Callable[..., Any]
    check_fn: Callable[[], Any] | None
    requires_env: list[str]
    is_async: bool
    description: str
    emoji: str
    max_result_size_chars: int | float | None = None
    dynamic_schema_overrides: Callable[[], Any] | None = None


_READERS = ("get_entry", "get_all_tool_names", "get_all_entries", "get_schema", "get_toolset_for_tool",
            "get_emoji", "get_tool_to_toolset_map", "get_registered_toolset_names", "get_tool_names_for_toolset",
            "is_toolset_available", "get_definitions", "dispatch")


class ToolRegistry:
    """Hermes' tool registry, answered by hermes-core's (one per manager)."""

    def register(
        self,
        name: str,
        toolset: str,
        schema: Mapping[str, Any],
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
        plugin = hermes_names.loading()
        if plugin is None:
            raise RegistrationError(
                f"tools.registry.registry.register({name!r}) was called outside a plugin's load: hermes-core "
                "registers a plugin's tools while the plugin loads. Call it when the plugin module is imported "
                "or from its register(ctx), or use ctx.register_tool(...) there"
            )
        if dynamic_schema_overrides is not None:
            log.warning("plugin %r: tool %r has dynamic_schema_overrides; hermes-core offers its static schema",
                        plugin.plugin_id, name)
        if not description and isinstance(schema, Mapping):
            description = str(schema.get("description") or "")
        plugin.ctx().register_tool(name, toolset, schema, handler, check_fn, requires_env, is_async, description,
                                   emoji, override)

    def _tools(self) -> Any:
        tools = hermes_names.current_tools()
        if tools is None:
            raise UnknownToolError(
                "tools.registry.registry has no tools to read: no hermes-core manager has loaded plugins in "
                "this process; load plugins first (PluginManager.load())"
            )
        return tools

    def get_entry(self, name: str, *, scope: str | None = None) -> ToolEntry | None:
        """The tool `name`, or None."""
        found = self._tools().entry(name)
        if found is None:
            return None
        tool = found.tool
        return ToolEntry(tool.name, tool.toolset, dict(found.schema), tool.handler, tool.check_fn,
                         list(tool.requires_env), found.is_async, tool.description or found.schema.get("description", ""),
                         tool.emoji)

    def get_all_entries(self) -> list[ToolEntry]:
        return [entry for entry in map(self.get_entry, self.get_all_tool_names()) if entry is not None]

    def get_all_tool_names(self) -> list[str]:
        return sorted(tool.name for tool in self._tools())

    def get_schema(self, name: str) -> dict[str, Any] | None:
        """The tool's schema as registered, whether it is available or not."""
        entry = self._tools().entry(name)
        return dict(entry.schema) if entry is not None else None

    def get_toolset_for_tool(self, name: str) -> str | None:
        tool = self._tools().get(name)
        return tool.toolset if tool is not None else None

    def get_emoji(self, name: str, default: str = "⚡") -> str:
        tool = self._tools().get(name)
        return (tool.emoji if tool is not None else "") or default

    def get_tool_to_toolset_map(self) -> dict[str, str]:
        return {tool.name: tool.toolset for tool in self._tools()}

    def get_registered_toolset_names(self) -> list[str]:
        return sorted({tool.toolset for tool in self._tools()})

    def get_tool_names_for_toolset(self, toolset: str) -> list[str]:
        return sorted(tool.name for tool in self._tools() if tool.toolset == toolset)

    def is_toolset_available(self, toolset: str) -> bool:
        """Whether a tool of `toolset` can run now."""
        return any(info.available for info in self._tools().infos() if info.toolset == toolset)

    def get_definitions(self, tool_names: Iterable[str], quiet: bool = False) -> list[dict[str, Any]]:
        """The OpenAI `tools` entries of the named tools that are available now."""
        wanted = set(tool_names)
        infos = sorted((i for i in self._tools().infos() if i.name in wanted and i.available), key=lambda i: i.name)
        return [{"type": "function", "function": {**info.schema, "name": info.name}} for info in infos]

    def dispatch(self, name: str, args: Any, *, scope: str | None = None, **kwargs: Any) -> str:
        """Run tool `name` (no lifecycle hooks); the result string, `{"error": ...}` on failure."""
        result: str = self._tools().dispatch(name, args, **kwargs)
        return result

    def __getattr__(self, name: str) -> Any:
        raise AttributeError(
            f"tools.registry.registry.{name} is not served by hermes-core: a plugin registers tools with "
            f"register(...) while it loads (its tools go when it unloads) and reads them with "
            f"{', '.join(_READERS)}"
        )


registry = ToolRegistry()
