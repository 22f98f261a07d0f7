"""Hermes' argparse-style CLI commands (`ctx.register_cli_command`), kept until the CLI asks.

A plugin gives a name, help, a `setup_fn(parser)` that adds its arguments (and subcommands)
to an `argparse` parser, and a `handler_fn(args)`; `hermes <name> ...` parses the rest of the
command line with that parser and calls the handler (a subcommand's own
`set_defaults(func=...)` wins). `hermes_core.cli` turns each into a click command.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from typing import Any, NamedTuple

from .._errors import RegistrationError
from .._undo import Undo, put

__all__ = ["CliCommand", "CliCommands", "RESERVED_CLI_NAMES"]

# the reference CLI's own commands: a plugin's command never hides one
RESERVED_CLI_NAMES = frozenset({"plugins", "tools", "command", "run", "chat", "sessions", "paths", "mcp", "help", "version",
                                "gateway", "pairing", "batch"})
_NAME = re.compile(r"[a-z0-9][a-z0-9_\-]*")


class CliCommand(NamedTuple):
    name: str
    help: str
    setup_fn: Callable[[Any], Any] | None
    handler_fn: Callable[[Any], Any] | None
    description: str
    plugin_id: str


class CliCommands:
    """The plugins' CLI commands by name; a name another plugin or the CLI has is refused."""

    def __init__(self) -> None:
        self._commands: dict[str, CliCommand] = {}
        self._lock = threading.Lock()

    def add(self, command: CliCommand) -> Undo:
        where = f"ctx.register_cli_command({command.name!r})"
        if not isinstance(command.name, str) or not _NAME.fullmatch(command.name):
            raise RegistrationError(f"{where}: a command name is lowercase letters, digits, '-' or '_'",
                                    plugin_id=command.plugin_id)
        if command.setup_fn is not None and not callable(command.setup_fn) or \
                command.handler_fn is not None and not callable(command.handler_fn):
            raise RegistrationError(f"{where}: setup_fn and handler_fn are functions", plugin_id=command.plugin_id)
        if command.name in RESERVED_CLI_NAMES:
            raise RegistrationError(f"{where}: `hermes {command.name}` is a command of hermes-core itself; "
                                    "choose another name", plugin_id=command.plugin_id)
        with self._lock:
            owner = self._commands.get(command.name)
            if owner is not None and owner.plugin_id != command.plugin_id:
                raise RegistrationError(f"{where}: plugin {owner.plugin_id!r} already has `hermes {command.name}`",
                                        plugin_id=command.plugin_id)
            return put(self._commands, command.name, command, self._lock)

    def all(self) -> list[CliCommand]:
        with self._lock:
            return list(self._commands.values())
