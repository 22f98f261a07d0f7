"""What a plugin registers as a tool, and what the host keeps of it: `Tool`, its checked schema,
the `ToolEntry` a call reads and the `ToolInfo` row a listing shows."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from .._errors import ToolSchemaError, owner
from .._runtime.invoke import contained
from .checked import SchemaMemory

__all__ = ["Tool", "ToolEntry", "ToolInfo", "checked_schema"]

log = logging.getLogger("hermes_core.tools")


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
        return (True, "") if ok else (False, getattr(ok, "reason", None) or "check_fn returned false")


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


def checked_schema(tool: Tool, memory: SchemaMemory | None = None) -> dict[str, Any]:
    """`tool`'s schema as a call uses it (name and description filled in), or `ToolSchemaError`
    saying what is wrong: it must be an OpenAI function object whose `parameters` is a valid
    JSON Schema describing an object. An `annotations` mapping beside them holds MCP's tool hints
    (`readOnlyHint`, `destructiveHint`, ...) for `hermes mcp serve`; the model is not sent it.
    A schema `memory` holds as valid is not checked again."""
    def who() -> str:  # named only in an error: no string built for each schema that passes
        return f"tool {tool.name!r} of {owner(tool.plugin_id)}"

    if not isinstance(tool.name, str) or not tool.name.strip():
        raise ToolSchemaError(f"{owner(tool.plugin_id)} registered a tool without a name", plugin_id=tool.plugin_id)
    if not isinstance(tool.toolset, str) or not tool.toolset.strip():
        raise ToolSchemaError(f"{who()}: toolset must be a non-empty string", plugin_id=tool.plugin_id)
    if not callable(tool.handler):
        raise ToolSchemaError(f"{who()}: handler is not callable", plugin_id=tool.plugin_id)
    schema = tool.schema
    if not isinstance(schema, Mapping):
        raise ToolSchemaError(
            f"{who()}: schema must be a dict (an OpenAI function object with name, description, parameters), "
            f"not {type(schema).__name__}",
            plugin_id=tool.plugin_id,
        )
    schema = dict(schema)
    if schema.setdefault("name", tool.name) != tool.name:
        raise ToolSchemaError(
            f"{who()}: schema name {schema['name']!r} differs from the tool name; make them the same",
            plugin_id=tool.plugin_id,
        )
    if not schema.get("description") and tool.description:
        schema["description"] = tool.description
    annotations = schema.get("annotations")
    if annotations is not None and not isinstance(annotations, Mapping):
        raise ToolSchemaError(f"{who()}: schema annotations must be a mapping of MCP tool hints such as "
                              "{'readOnlyHint': true}", plugin_id=tool.plugin_id)
    parameters = schema.setdefault("parameters", {"type": "object", "properties": {}})
    if not isinstance(parameters, Mapping):
        raise ToolSchemaError(f"{who()}: schema parameters must be a JSON Schema object (a dict)", plugin_id=tool.plugin_id)
    if parameters.get("type", "object") != "object":
        raise ToolSchemaError(
            f"{who()}: schema parameters must describe an object (type: object), not {parameters.get('type')!r}",
            plugin_id=tool.plugin_id,
        )
    digest = memory.digest(parameters) if memory is not None else None
    if memory is not None and memory.known(digest):
        return schema
    from jsonschema.exceptions import SchemaError
    from jsonschema.validators import validator_for

    try:
        validator_for(parameters).check_schema(parameters)
    except SchemaError as exc:
        path = "/".join(str(p) for p in exc.absolute_path) or "(root)"
        raise ToolSchemaError(
            f"{who()}: schema parameters is not a valid JSON Schema at {path}: {exc.message}",
            plugin_id=tool.plugin_id,
        ) from None
    if memory is not None:
        memory.remember(digest)
    return schema
