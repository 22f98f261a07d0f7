"""The slash `Command` a plugin registers, and how command names are normalised."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs

__all__ = ["ARGUMENT_MODES", "Command", "normalise_command_name"]


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
    # Hermes' argument modes: "raw" (the text after the command), "none" (no arguments), "required"
    argument_mode: str = attrs.field(default="raw", kw_only=True)

    def usage_problem(self, raw_args: str) -> str | None:
        """Why `raw_args` do not fit this command's `argument_mode` (None when they do)."""
        given = bool(raw_args.strip())
        if self.argument_mode == "none" and given:
            return f"/{self.name} takes no arguments"
        if self.argument_mode == "required" and not given:
            return f"/{self.name} needs arguments: /{self.name} {self.args_hint or '<text>'}".rstrip()
        return None


ARGUMENT_MODES = ("raw", "none", "required", "text", "options", "mixed")  # Hermes' three: the raw text
