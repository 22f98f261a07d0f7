"""A registered tool or command as plain data, and the stand-in made from it: what lazy
activation remembers and registers in a plugin's place, what an isolated plugin's process sends
the host, what an MCP server's tool list becomes. `Unavailable` is a stand-in's `check_fn`
answer when the code behind it cannot run now (a server down, a child's `check_fn` saying no).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from .._commands.command import Command
from .._tools.tool import Tool, ToolEntry

__all__ = ["Unavailable", "command_fields", "stand_in_command", "stand_in_tool", "tool_fields"]


class Unavailable:
    """A falsy `check_fn` answer that says why (`reason`, which a tool listing shows)."""

    __slots__ = ("reason",)

    def __init__(self, reason: str) -> None:
        self.reason = reason

    def __bool__(self) -> bool:
        return False

    def __repr__(self) -> str:
        return f"Unavailable({self.reason!r})"


def tool_fields(entry: ToolEntry) -> dict[str, Any]:
    """A registered tool as plain data: what a stand-in for it needs (`stand_in_tool`)."""
    tool = entry.tool
    return {"name": tool.name, "toolset": tool.toolset, "schema": entry.schema, "requires_env": list(tool.requires_env),
            "is_async": entry.is_async, "description": tool.description, "emoji": tool.emoji, "override": tool.override,
            "checked": tool.check_fn is not None}


def stand_in_tool(fields: Mapping[str, Any], handler: Callable[..., Any], plugin_id: str, *,
                  check_fn: Callable[[], Any] | None = None, is_async: bool = False) -> Tool:
    """The tool of `fields` (`tool_fields`; `name`, `toolset` and `schema` are enough) answered by
    `handler` instead of the code it stands for."""
    return Tool(fields["name"], fields["toolset"], fields["schema"], handler, check_fn,
                tuple(fields.get("requires_env", ())), is_async, fields.get("description", ""),
                fields.get("emoji", ""), fields.get("override", False), plugin_id=plugin_id)


def command_fields(command: Command) -> dict[str, Any]:
    """A registered slash command as plain data: what a stand-in for it needs (`stand_in_command`)."""
    return {"name": command.name, "description": command.description, "args_hint": command.args_hint,
            "argument_mode": command.argument_mode}


def stand_in_command(fields: Mapping[str, Any], handler: Callable[..., Any], plugin_id: str) -> Command:
    """The command of `fields` (`command_fields`) answered by `handler` instead of the plugin's own."""
    return Command(fields["name"], handler, fields["description"], fields["args_hint"], plugin_id=plugin_id,
                   argument_mode=fields["argument_mode"])
