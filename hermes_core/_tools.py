"""The tool registry: schema checks at registration, validated and isolated dispatch.

A handler can never take the host down: every failure becomes a bounded JSON error string.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import attrs

from . import _aio
from ._errors import ToolOverrideError, ToolSchemaError, owner
from ._records import Tool

__all__ = ["ToolRegistry", "ToolInfo", "MAX_ERROR_CHARS", "error_result", "parse_arguments"]

log = logging.getLogger("hermes_core.tools")
MAX_ERROR_CHARS = 2048
Undo = Callable[[], None]


def error_result(message: str) -> str:
    """`{"error": message}` as a JSON string, the message cut to `MAX_ERROR_CHARS`."""
    if len(message) > MAX_ERROR_CHARS:
        message = message[: MAX_ERROR_CHARS - 1] + "…"
    return json.dumps({"error": message}, ensure_ascii=False)


def parse_arguments(args: Any) -> tuple[dict[str, Any] | None, str | None]:
    """Tool arguments as a dict (a JSON string, as models send them, is parsed), or the problem."""
    if isinstance(args, (str, bytes)):
        try:
            args = json.loads(args) if args.strip() else {}
        except ValueError as exc:
            return None, f"not JSON ({exc})"
    if args is None:
        return {}, None
    if not isinstance(args, Mapping):
        return None, f"expected an object, got {type(args).__name__}"
    return dict(args), None


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
class _Entry:
    tool: Tool
    schema: dict[str, Any]
    validator: Any = None
    source: Any = None  # the engine/provider object whose handle_tool_call answers


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


class ToolRegistry:
    """Every tool the host can offer the model, with its provenance.

    `grants(plugin_id)` says whether the operator allowed that plugin to override tools.
    """

    def __init__(self, grants: Callable[[str | None], bool] = lambda plugin_id: False) -> None:
        self._entries: dict[str, _Entry] = {}
        self._lock = threading.RLock()
        self._grants = grants

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
            entry = _Entry(tool, schema, source=source)
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
        except Exception as exc:  # noqa: BLE001 - an engine never takes the host down
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

    def __iter__(self) -> Iterator[Tool]:
        return iter([entry.tool for entry in list(self._entries.values())])

    def __len__(self) -> int:
        return len(self._entries)

    def availability(self, tool: Tool) -> tuple[bool, str]:
        """Whether `tool` can run now, and why not: its `requires_env` and its `check_fn`."""
        missing = [name for name in tool.requires_env if not os.environ.get(name, "").strip()]
        if missing:
            return False, f"missing environment variable(s): {', '.join(missing)}"
        if tool.check_fn is None:
            return True, ""
        try:
            ok = tool.check_fn()
        except Exception as exc:  # noqa: BLE001 - a raising check_fn means unavailable
            log.warning("check_fn of tool %r (%s) raised %s: %s", tool.name, owner(tool.plugin_id), type(exc).__name__, exc)
            return False, f"check_fn raised {type(exc).__name__}: {exc}"
        return (True, "") if ok else (False, "check_fn returned false")

    def infos(self) -> list[ToolInfo]:
        """Every registered tool, with provenance and availability."""
        rows = []
        for entry in list(self._entries.values()):
            ok, reason = self.availability(entry.tool)
            rows.append(ToolInfo(entry.tool.name, entry.tool.toolset, entry.tool.plugin_id, ok, reason, entry.schema))
        return rows

    def schemas(self) -> list[dict[str, Any]]:
        """The OpenAI `tools` list of every available tool: `[{"type": "function", "function": ...}]`."""
        return [{"type": "function", "function": info.schema} for info in self.infos() if info.available]

    # -- dispatch -----------------------------------------------------------------------

    def _prepare(self, name: str, args: Any) -> tuple[_Entry | None, dict[str, Any] | None, str | None]:
        entry = self._entries.get(name)
        if entry is None:
            return None, None, error_result(f"Unknown tool: {name}")
        tool = entry.tool
        parsed, problem = parse_arguments(args)
        if parsed is None:
            return None, None, error_result(f"Invalid arguments for tool {name!r}: {problem}")
        args = parsed
        ok, reason = self.availability(tool)
        if not ok:
            return None, None, error_result(f"Tool {name!r} ({owner(tool.plugin_id)}) is not available: {reason}")
        problem = self._validate(entry, args)
        if problem:
            return None, None, error_result(f"Invalid arguments for tool {name!r}: {problem}")
        return entry, args, None

    @staticmethod
    def _validate(entry: _Entry, args: dict[str, Any]) -> str | None:
        if entry.validator is None:
            from jsonschema.validators import validator_for

            parameters = entry.schema["parameters"]
            entry.validator = validator_for(parameters)(parameters)
        from jsonschema.exceptions import best_match

        error = best_match(entry.validator.iter_errors(args))
        if error is None:
            return None
        field = "/".join(str(p) for p in error.absolute_path)
        if not field and error.validator == "required":
            missing = [n for n in error.validator_value if n not in error.instance]
            field = missing[0] if missing else ""
        message = error.message
        shown = repr(error.instance)
        if len(shown) > 80:  # "'xxxx…(10001 chars)' is too long", not the whole value
            message = message.replace(shown, f"{shown[:60]}…({len(shown)} chars)")
        return f"field {field!r}: {message}" if field else message

    @staticmethod
    def _finish(tool: Tool, result: Any) -> str:
        if isinstance(result, str):
            return result
        try:
            return json.dumps(result, ensure_ascii=False, default=str)
        except (TypeError, ValueError) as exc:
            return error_result(f"Tool execution failed: {type(exc).__name__}: handler returned {type(result).__name__}")

    @staticmethod
    def _failed(tool: Tool, exc: BaseException) -> str:
        log.error(
            "tool %r (%s) failed: %s: %s", tool.name, owner(tool.plugin_id), type(exc).__name__, exc,
            exc_info=(type(exc), exc, exc.__traceback__),
        )
        return error_result(f"Tool execution failed: {type(exc).__name__}: {exc}")

    @staticmethod
    def _call(entry: _Entry, args: dict[str, Any], kwargs: dict[str, Any]) -> Any:
        if entry.source is not None:
            return entry.tool.handler(entry.tool.name, args, **kwargs)
        return entry.tool.handler(args, **kwargs)

    def dispatch(self, name: str, args: Any, **kwargs: Any) -> str:
        """Run tool `name` from synchronous code; always returns a string, never raises."""
        entry, checked, error = self._prepare(name, args)
        if entry is None or checked is None:
            return error or error_result(f"Unknown tool: {name}")
        try:
            result = self._call(entry, checked, kwargs)
            if _aio.is_awaitable(result):
                result = _aio.run_coroutine(result)
        except (Exception, SystemExit) as exc:
            return self._failed(entry.tool, exc)
        return self._finish(entry.tool, result)

    async def adispatch(self, name: str, args: Any, **kwargs: Any) -> str:
        """Run tool `name` from async code; sync handlers run in a worker thread."""
        entry, checked, error = self._prepare(name, args)
        if entry is None or checked is None:
            return error or error_result(f"Unknown tool: {name}")
        try:
            if entry.tool.is_async or _aio.is_coroutine_function(entry.tool.handler):
                result = await self._call(entry, checked, kwargs)
            else:
                result = await asyncio.wrap_future(_aio.submit(lambda: self._call(entry, checked, kwargs)))
            if _aio.is_awaitable(result):
                result = await result
        except (Exception, SystemExit) as exc:
            return self._failed(entry.tool, exc)
        return self._finish(entry.tool, result)
