"""The small value objects plugins hand to the framework: `Tool` and `Command`."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import attrs

__all__ = ["Tool", "Command", "normalise_command_name"]


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


def normalise_command_name(name: str) -> str:
    """Lowercase, strip a leading `/`, and turn spaces into `-`: `"/My Cmd"` → `"my-cmd"`."""
    return "-".join(name.strip().lstrip("/").lower().split())


@attrs.frozen
class Command:
    """A slash command: `handler(raw_args: str) -> str | None`, sync or async.

    The name is normalised on creation (`"/TL DR"` becomes `"tl-dr"`).
    """

    name: str = attrs.field(converter=normalise_command_name)
    handler: Callable[..., Any] = attrs.field(repr=False)
    description: str = ""
    args_hint: str = ""
    plugin_id: str | None = attrs.field(default=None, kw_only=True)
