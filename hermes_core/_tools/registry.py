"""`ToolRegistry`: every tool the host can offer the model, with its provenance and time limit.

A tool's schema is checked when it is registered (`tool.checked_schema`); a call runs in `call`,
from parsing the model's arguments to the result, with the lifecycle hooks around it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from .. import config_keys as keys
from .._config.config import Config
from .._errors import ToolOverrideError, ToolSchemaError, owner
from .._runtime import workers
from .._runtime.invoke import contained
from .._undo import Undo, put
from . import call
from .checked import SchemaMemory
from .tool import Tool, ToolEntry, ToolInfo, checked_schema
from .validators import ToolValidator

__all__ = ["ToolRegistry", "time_limits"]

log = logging.getLogger("hermes_core.tools")


def time_limits(config: Config | Callable[[], Config]) -> Callable[[str], float | None]:
    """The time limit of each tool by name: `tools.timeouts.<name>`, else `tools.timeout`
    (0: none). `config` is a snapshot, or a function returning the current one."""

    known: list[tuple[Config | None, dict[str, float | None]]] = [(None, {})]  # the limits read from one snapshot

    def limit(name: str) -> float | None:
        current = config() if callable(config) else config
        snapshot, limits = known[0]
        if snapshot is not current:  # a new snapshot (reload): read again
            limits = {}
            known[0] = (current, limits)
        try:
            return limits[name]
        except KeyError:
            pass
        seconds = current.read(keys.TOOL_TIMEOUT, name)
        if seconds is None:
            seconds = current.read(keys.TOOLS_TIMEOUT)
        limits[name] = seconds = seconds or None
        return seconds

    return limit


def _for_model(schema: Mapping[str, Any]) -> Mapping[str, Any]:
    """A tool's schema as the model is sent it: without the MCP hints (`annotations`)."""
    return schema if "annotations" not in schema else {k: v for k, v in schema.items() if k != "annotations"}


class ToolRegistry:
    """Every tool the host can offer the model, with its provenance.

    `grants(plugin_id)` says whether the operator allowed that plugin to override tools;
    `limit(name)` is the seconds a call of tool `name` may run (None: no limit), by default
    the `tools.timeout` default (see `time_limits`).
    """

    def __init__(
        self, grants: Callable[[str | None], bool] = lambda plugin_id: False,
        limit: Callable[[str], float | None] | None = None, schemas: SchemaMemory | None = None,
        gives_way: Callable[[str | None], bool] = lambda plugin_id: False,
    ) -> None:
        self._entries: dict[str, ToolEntry] = {}
        self._schemas = schemas  # the valid schemas remembered from earlier starts
        self._lock = threading.RLock()
        self._grants = grants
        self._gives_way = gives_way  # a plugin whose tools yield their names to any other's (a built-in)
        self._yielded: set[tuple[str, str | None]] = set()  # (tool, built-in) that gave way
        self.limit: Callable[[str], float | None] = limit or time_limits(Config({}))

    def gave_way(self, name: str, plugin_id: str | None) -> bool:
        """Whether the built-in `plugin_id`'s tool `name` yielded its name to a plugin's tool."""
        return (name, plugin_id) in self._yielded

    # -- registration -------------------------------------------------------------------

    def add(self, tool: Tool, *, source: Any = None) -> Undo:
        """Register `tool`; returns a function that undoes exactly this registration. A built-in's
        tool and an enabled plugin's of the same name: the plugin's is used, whichever came first
        (`gave_way` tells which built-in tools yielded).

        Raises `ToolSchemaError` for a bad schema and `ToolOverrideError` (a
        `PermissionError`) when the name is taken and the plugin may not override it.
        """
        schema = checked_schema(tool, self._schemas)
        with self._lock:
            previous = self._entries.get(tool.name)
            if previous is not None:
                ours, theirs = self._gives_way(tool.plugin_id), self._gives_way(previous.tool.plugin_id)
                if ours and not theirs:  # a built-in helps, never blocks: the plugin's tool keeps its name
                    self._yielded.add((tool.name, tool.plugin_id))
                    _gave_way(tool.name, previous.tool.plugin_id, tool.plugin_id)
                    return lambda: None
                if theirs and not ours:
                    self._yielded.add((tool.name, previous.tool.plugin_id))
                    _gave_way(tool.name, tool.plugin_id, previous.tool.plugin_id)
                else:
                    self._check_override(tool, previous.tool)
            entry = ToolEntry(tool, schema, tool.is_async or workers.is_coroutine_function(tool.handler), source,
                              ToolValidator(schema["parameters"]))
            return put(self._entries, tool.name, entry, self._lock)

    def _check_override(self, tool: Tool, existing: Tool) -> None:
        where = "the same toolset" if existing.toolset == tool.toolset else f"toolset {existing.toolset!r}"
        taken = f"tool {tool.name!r} is already registered by {owner(existing.plugin_id)} in {where}"
        if not tool.override:
            raise ToolOverrideError(
                f"{owner(tool.plugin_id)} cannot register {taken}; pick another name, or pass override=True "
                "to replace it (a plugin also needs the operator's grant)",
                plugin_id=tool.plugin_id,
            )
        if not self._grants(tool.plugin_id):
            raise ToolOverrideError(
                f"{owner(tool.plugin_id)} may not override {taken}; the operator can allow it with "
                f"plugins.entries.{tool.plugin_id}.allow_tool_override: true",
                plugin_id=tool.plugin_id,
            )

    def remove(self, name: str, plugin_id: str | None) -> Undo | None:
        """Take tool `name` away for plugin `plugin_id` (Hermes' `registry.deregister`): its own
        tool, or any with the operator's grant to override; the undo puts it back (unless another
        tool has that name by then). None when there is no such tool."""
        with self._lock:
            entry = self._entries.get(name)
            if entry is None:
                return None
            if entry.tool.plugin_id != plugin_id and not self._grants(plugin_id):
                raise ToolOverrideError(
                    f"{owner(plugin_id)} may not remove tool {name!r} of {owner(entry.tool.plugin_id)}; the operator "
                    f"can allow it with plugins.entries.{plugin_id}.allow_tool_override: true",
                    plugin_id=plugin_id,
                )
            del self._entries[name]

        def undo() -> None:
            with self._lock:
                self._entries.setdefault(name, entry)

        return undo

    def attach(
        self, source: Any, plugin_id: str | None, toolset: str, *, taken: Callable[[str], bool] = lambda name: False
    ) -> list[str]:
        """Offer the tools of an engine or provider (`get_tool_schemas()`), answered by its
        `handle_tool_call(name, args, **kwargs)`. A tool with a bad schema, or a name that is
        `taken` or already here, is left out; returns one line per tool left out."""
        who = f"{toolset} ({owner(plugin_id)})"
        try:
            schemas = list(source.get_tool_schemas() or [])
        except BaseException as exc:  # noqa: BLE001 - an engine never takes the host down
            contained(exc)
            log.warning("%s: get_tool_schemas() raised", who, exc_info=True)
            return [f"{who}: get_tool_schemas() raised {type(exc).__name__}: {exc}; it offers no tools"]
        problems = []
        for schema in schemas:
            name = schema.get("name") if isinstance(schema, Mapping) else None
            if isinstance(name, str) and (taken(name) or name in self._entries):
                problems.append(f"{who}: tool {name!r} is left out: another tool already has that name")
                continue
            try:
                self.add(Tool(name, toolset, schema, source.handle_tool_call, plugin_id=plugin_id), source=source)  # type: ignore[arg-type]
            except (ToolSchemaError, ToolOverrideError) as exc:
                problems.append(f"{who}: {exc}")
        for problem in problems:
            log.warning("%s", problem)
        return problems

    # -- queries ------------------------------------------------------------------------

    def get(self, name: str) -> Tool | None:
        entry = self._entries.get(name)
        return entry.tool if entry else None

    def entry(self, name: str) -> ToolEntry | None:
        """What a call of tool `name` needs (see `call`), or None for an unknown tool."""
        return self._entries.get(name)

    def __iter__(self) -> Iterator[Tool]:
        return iter([entry.tool for entry in list(self._entries.values())])

    def __len__(self) -> int:
        return len(self._entries)

    def availability(self, tool: Tool) -> tuple[bool, str]:
        """Whether `tool` can run now, and why not (see `Tool.availability`)."""
        return tool.availability()

    def infos(self) -> list[ToolInfo]:
        """Every registered tool, with provenance and availability."""
        rows = []
        for entry in list(self._entries.values()):
            ok, reason = entry.tool.availability()
            rows.append(ToolInfo(entry.tool.name, entry.tool.toolset, entry.tool.plugin_id, ok, reason, entry.schema))
        return rows

    def schemas(self) -> list[dict[str, Any]]:
        """The OpenAI `tools` list of every available tool: `[{"type": "function", "function": ...}]`."""
        return [{"type": "function", "function": _for_model(entry.schema)} for entry in list(self._entries.values())
                if entry.tool.availability()[0]]  # `infos()` without its rows: a turn asks this each request

    # -- calls ------------------------------------------------------------------------------

    def dispatch_without_hooks(self, name: str, args: Any, **kwargs: Any) -> str:
        """Run tool `name` from synchronous code with no plugin's hooks around it (no `pre_tool_call`
        gate): a host's own call, or a test of a registry alone. Calls on the model's behalf go
        through `PluginManager.dispatch_tool` or `AgentSession.dispatch_tool`. Never raises."""
        return call.dispatch(self, None, name, args, kwargs=kwargs)

    async def adispatch_without_hooks(self, name: str, args: Any, **kwargs: Any) -> str:
        """`dispatch_without_hooks` from async code; sync handlers run in a worker thread."""
        return await call.adispatch(self, None, name, args, kwargs=kwargs)


def _gave_way(name: str, used: str | None, builtin: str | None) -> None:
    log.warning("tool %r of %s is used instead of the built-in one of %s", name, owner(used), owner(builtin))
