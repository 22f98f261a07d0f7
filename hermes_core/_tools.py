"""Tools: the `Tool` a plugin registers, and the registry of every tool the host can offer.

A schema is checked when the tool is registered (an OpenAI function object whose `parameters`
is a valid JSON Schema); a call runs in `_tool_call`, from parsing to result.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import attrs

from . import _tool_call
from ._runtime import workers
from . import config_keys as keys
from ._config.config import Config
from ._errors import ToolOverrideError, ToolSchemaError, owner
from ._runtime.invoke import contained
from ._validators import ToolValidator

__all__ = ["Tool", "ToolEntry", "ToolInfo", "ToolRegistry"]

log = logging.getLogger("hermes_core.tools")
Undo = Callable[[], None]


def _tuple(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    return tuple(value)


@attrs.frozen
class Tool:
    """A tool the model can call: an OpenAI function schema and the handler that answers it.

    `handler(args: dict, **kwargs) -> str` returns a JSON string; it may be async.
    `plugin_id` is filled in by the framework when the tool is registered.

    >>> Tool("echo", "demo", {"name": "echo", "parameters": {"type": "object"}}, lambda args, **kw: "{}")
    Tool(name='echo', toolset='demo', plugin_id=None)
    """

    name: str
    toolset: str
    schema: Mapping[str, Any]
    handler: Callable[..., Any] = attrs.field(repr=False)
    check_fn: Callable[[], Any] | None = attrs.field(default=None, repr=False)
    requires_env: tuple[str, ...] = attrs.field(default=(), converter=_tuple)
    is_async: bool = False
    description: str = ""
    emoji: str = ""
    override: bool = False
    plugin_id: str | None = attrs.field(default=None, kw_only=True)

    def __repr__(self) -> str:
        return f"Tool(name={self.name!r}, toolset={self.toolset!r}, plugin_id={self.plugin_id!r})"

    def availability(self) -> tuple[bool, str]:
        """Whether this tool can run now, and why not: its `requires_env` and its `check_fn`."""
        missing = [name for name in self.requires_env if not os.environ.get(name, "").strip()]
        if missing:
            return False, f"missing environment variable(s): {', '.join(missing)}"
        if self.check_fn is None:
            return True, ""
        try:
            ok = self.check_fn()
        except BaseException as exc:  # noqa: BLE001 - a raising check_fn means unavailable
            contained(exc)
            log.warning("check_fn of tool %r (%s) raised %s: %s", self.name, owner(self.plugin_id),
                        type(exc).__name__, exc)
            return False, f"check_fn raised {type(exc).__name__}: {exc}"
        return (True, "") if ok else (False, "check_fn returned false")


@attrs.frozen
class ToolInfo:
    """A row of the tool listing: the tool, who provides it, and whether it can run now."""

    name: str
    toolset: str
    plugin: str | None
    available: bool
    reason: str = ""
    schema: Mapping[str, Any] = attrs.field(factory=dict, repr=False)


@attrs.define
class ToolEntry:
    """A registered tool as a call needs it: its checked schema, its validator (compiled on first
    use), whether its handler is async, and the engine whose `handle_tool_call(name, args)`
    answers (if any)."""

    tool: Tool
    schema: dict[str, Any]
    is_async: bool = False
    source: Any = None
    validator: Any = None


def _check_schema(tool: Tool) -> dict[str, Any]:
    who = f"tool {tool.name!r} of {owner(tool.plugin_id)}"
    if not isinstance(tool.name, str) or not tool.name.strip():
        raise ToolSchemaError(f"{owner(tool.plugin_id)} registered a tool without a name", plugin_id=tool.plugin_id)
    if not isinstance(tool.toolset, str) or not tool.toolset.strip():
        raise ToolSchemaError(f"{who}: toolset must be a non-empty string", plugin_id=tool.plugin_id)
    if not callable(tool.handler):
        raise ToolSchemaError(f"{who}: handler is not callable", plugin_id=tool.plugin_id)
    schema = tool.schema
    if not isinstance(schema, Mapping):
        raise ToolSchemaError(
            f"{who}: schema must be a dict (an OpenAI function object with name, description, parameters), "
            f"not {type(schema).__name__}",
            plugin_id=tool.plugin_id,
        )
    schema = dict(schema)
    if schema.setdefault("name", tool.name) != tool.name:
        raise ToolSchemaError(
            f"{who}: schema name {schema['name']!r} differs from the tool name; make them the same",
            plugin_id=tool.plugin_id,
        )
    if not schema.get("description") and tool.description:
        schema["description"] = tool.description
    parameters = schema.setdefault("parameters", {"type": "object", "properties": {}})
    if not isinstance(parameters, Mapping):
        raise ToolSchemaError(f"{who}: schema parameters must be a JSON Schema object (a dict)", plugin_id=tool.plugin_id)
    if parameters.get("type", "object") != "object":
        raise ToolSchemaError(
            f"{who}: schema parameters must describe an object (type: object), not {parameters.get('type')!r}",
            plugin_id=tool.plugin_id,
        )
    from jsonschema.exceptions import SchemaError
    from jsonschema.validators import validator_for

    try:
        validator_for(parameters).check_schema(parameters)
    except SchemaError as exc:
        path = "/".join(str(p) for p in exc.absolute_path) or "(root)"
        raise ToolSchemaError(
            f"{who}: schema parameters is not a valid JSON Schema at {path}: {exc.message}",
            plugin_id=tool.plugin_id,
        ) from None
    return schema


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


class ToolRegistry:
    """Every tool the host can offer the model, with its provenance.

    `grants(plugin_id)` says whether the operator allowed that plugin to override tools;
    `limit(name)` is the seconds a call of tool `name` may run (None: no limit), by default
    the `tools.timeout` default (see `time_limits`).
    """

    def __init__(
        self, grants: Callable[[str | None], bool] = lambda plugin_id: False,
        limit: Callable[[str], float | None] | None = None,
    ) -> None:
        self._entries: dict[str, ToolEntry] = {}
        self._lock = threading.RLock()
        self._grants = grants
        self.limit: Callable[[str], float | None] = limit or time_limits(Config({}))

    # -- registration -------------------------------------------------------------------

    def add(self, tool: Tool, *, source: Any = None) -> Undo:
        """Register `tool`; returns a function that undoes exactly this registration.

        Raises `ToolSchemaError` for a bad schema and `ToolOverrideError` (a
        `PermissionError`) when the name is taken and the plugin may not override it.
        """
        schema = _check_schema(tool)
        with self._lock:
            previous = self._entries.get(tool.name)
            if previous is not None:
                self._check_override(tool, previous.tool)
            entry = ToolEntry(tool, schema, tool.is_async or workers.is_coroutine_function(tool.handler), source,
                              ToolValidator(schema["parameters"]))
            self._entries[tool.name] = entry

        def undo() -> None:
            with self._lock:
                if self._entries.get(tool.name) is entry:
                    if previous is None:
                        del self._entries[tool.name]
                    else:
                        self._entries[tool.name] = previous

        return undo

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
        """What a call of tool `name` needs (see `_tool_call`), or None for an unknown tool."""
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
        return [{"type": "function", "function": info.schema} for info in self.infos() if info.available]

    # -- calls ------------------------------------------------------------------------------

    def dispatch(self, name: str, args: Any, **kwargs: Any) -> str:
        """Run tool `name` from synchronous code (no hooks); always returns a string, never raises."""
        return _tool_call.dispatch(self, None, name, args, kwargs=kwargs)

    async def adispatch(self, name: str, args: Any, **kwargs: Any) -> str:
        """Run tool `name` from async code (no hooks); sync handlers run in a worker thread."""
        return await _tool_call.adispatch(self, None, name, args, kwargs=kwargs)
