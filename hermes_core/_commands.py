"""Slash commands: unique normalised names, with provenance, runnable sync or async."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator

from . import _aio
from ._errors import CommandConflictError, CommandFailedError, UnknownCommandError, owner
from ._records import Command, normalise_command_name

__all__ = ["CommandRegistry"]

log = logging.getLogger("hermes_core.commands")
Undo = Callable[[], None]


class CommandRegistry:
    """The slash commands of every loaded plugin."""

    def __init__(self) -> None:
        self._commands: dict[str, Command] = {}
        self._lock = threading.Lock()

    def add(self, command: Command) -> Undo:
        """Register `command`; `CommandConflictError` names both sides of a clash."""
        if not command.name or "/" in command.name:
            raise CommandConflictError(
                f"{owner(command.plugin_id)} registered a command with an invalid name {command.name!r}; "
                "use letters, digits and '-'",
                plugin_id=command.plugin_id,
            )
        if not callable(command.handler):
            raise CommandConflictError(f"command /{command.name} of {owner(command.plugin_id)}: handler is not callable",
                                       plugin_id=command.plugin_id)
        with self._lock:
            existing = self._commands.get(command.name)
            if existing is not None:
                raise CommandConflictError(
                    f"command /{command.name} of {owner(command.plugin_id)} was rejected: "
                    f"/{command.name} is already registered by {owner(existing.plugin_id)}",
                    plugin_id=command.plugin_id,
                )
            self._commands[command.name] = command

        def undo() -> None:
            with self._lock:
                if self._commands.get(command.name) is command:
                    del self._commands[command.name]

        return undo

    def get(self, name: str) -> Command | None:
        return self._commands.get(normalise_command_name(name))

    def __iter__(self) -> Iterator[Command]:
        return iter(sorted(self._commands.values(), key=lambda c: c.name))

    def __len__(self) -> int:
        return len(self._commands)

    def _lookup(self, name: str) -> Command:
        command = self.get(name)
        if command is None:
            available = ", ".join("/" + c.name for c in self) or "none"
            raise UnknownCommandError(f"unknown command /{normalise_command_name(name)} (available: {available})")
        return command

    def run(self, name: str, raw_args: str = "") -> str | None:
        """Run command `name` with `raw_args`; a handler failure becomes `CommandFailedError`."""
        command = self._lookup(name)
        try:
            result = command.handler(raw_args)
            if _aio.is_awaitable(result):
                result = _aio.run_coroutine(result)
        except (Exception, SystemExit) as exc:
            raise self._failed(command, exc) from exc
        return None if result is None else str(result)

    async def arun(self, name: str, raw_args: str = "") -> str | None:
        command = self._lookup(name)
        try:
            result = command.handler(raw_args)
            if _aio.is_awaitable(result):
                result = await result
        except (Exception, SystemExit) as exc:
            raise self._failed(command, exc) from exc
        return None if result is None else str(result)

    @staticmethod
    def _failed(command: Command, exc: BaseException) -> CommandFailedError:
        log.debug("command /%s of %s failed", command.name, owner(command.plugin_id), exc_info=exc)  # raised to the caller
        error = CommandFailedError(f"/{command.name} ({owner(command.plugin_id)}) failed: {type(exc).__name__}: {exc}")
        error.original = exc
        return error
