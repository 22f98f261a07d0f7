"""`CommandRegistry`: the slash commands of every loaded plugin, by name, and running one.

Names are unique and normalised; every command keeps its provenance; a handler may be sync or
async and runs through one policy for sync and async callers, after the `pre_command` hook
when the caller hands in the lifecycle hooks.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import attrs

from .._errors import CommandConflictError, CommandFailedError, UnknownCommandError, owner
from .._quote import clip
from .._runtime.invoke import Failure, Invoke, Policy, Resolvable, adrive, describe_error, drive, keeps_own_limit
from .._undo import Undo, put
from ..config_keys import COMMANDS_TIMEOUT
from .command import ARGUMENT_MODES, Command, normalise_command_name

if TYPE_CHECKING:
    from .._hooks.calls import LifecycleHooks

__all__ = ["CommandRegistry"]

log = logging.getLogger("hermes_core.commands")


class CommandRegistry:
    """The slash commands of every loaded plugin."""

    def __init__(self, limit: Callable[[], float | None] = lambda: COMMANDS_TIMEOUT.default or None) -> None:
        """`limit()`: the seconds a command's handler may run (`commands.timeout`; None: no limit)."""
        self._commands: dict[str, Command] = {}
        self._lock = threading.Lock()
        self.limit = limit

    def add(self, command: Command) -> Undo:
        """Register `command`; `CommandConflictError` names both sides of a clash."""
        if not command.name or "/" in command.name:
            raise CommandConflictError(
                f"{owner(command.plugin_id)} registered a command with an invalid name {command.name!r}; "
                "use letters, digits and '-'",
                plugin_id=command.plugin_id,
            )
        if command.argument_mode not in ARGUMENT_MODES:
            log.warning("command /%s of %s: unknown argument_mode %r, used as 'raw' (modes: %s)", command.name,
                        owner(command.plugin_id), command.argument_mode, ", ".join(ARGUMENT_MODES))
            command = attrs.evolve(command, argument_mode="raw")
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
            return put(self._commands, command.name, command, self._lock)

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
            raise UnknownCommandError(f"unknown command /{clip(normalise_command_name(name))} (available: {available})")
        return command

    def _call(self, name: str, raw_args: str, hooks: LifecycleHooks | None, where: dict[str, str]) -> Policy[str | None]:
        command = self._lookup(name)
        if hooks is not None:
            yield hooks.pre_command(command=command.name, alias_used=name.strip().lstrip("/"), args_raw=raw_args,
                                    **where)
        problem = command.usage_problem(raw_args)
        if problem is not None:
            return problem
        if isinstance(command.handler, Resolvable):  # its plugin is imported now (on a worker for an async caller)
            resolved = yield Invoke(command.handler.resolve)
            if isinstance(resolved, Failure):
                raise CommandFailedError(f"/{clip(command.name, 60)} ({owner(command.plugin_id)}) cannot run: "
                                         f"{resolved.error}") from resolved.error
            command = self._lookup(command.name)
        limit = None if keeps_own_limit(command.handler) else self.limit()
        result = yield Invoke(command.handler, (raw_args,), is_async=_is_async(command.handler), limit=limit)
        if isinstance(result, Failure):
            raise self._failed(command, result) from result.error
        return None if result is None else str(result)

    def run(
        self, name: str, raw_args: str = "", *, hooks: LifecycleHooks | None = None, surface: str = "cli",
        session_key: str = "", platform: str = "cli",
    ) -> str | None:
        """Run command `name` with `raw_args`; a handler failure becomes `CommandFailedError`.
        With `hooks`, the plugins' `pre_command` hears of it first (`surface`, `session_key` and
        `platform` are what it is told about the caller)."""
        where = {"surface": surface, "session_key": session_key, "platform": platform}
        return drive(self._call(name, raw_args, hooks, where))

    async def arun(
        self, name: str, raw_args: str = "", *, hooks: LifecycleHooks | None = None, surface: str = "cli",
        session_key: str = "", platform: str = "cli",
    ) -> str | None:
        """`run` for async hosts: an async handler is awaited, a sync one runs on a worker thread."""
        where = {"surface": surface, "session_key": session_key, "platform": platform}
        return await adrive(self._call(name, raw_args, hooks, where))

    @staticmethod
    def _failed(command: Command, failure: Failure) -> CommandFailedError:
        exc = failure.error
        log.debug("command /%s of %s failed", command.name, owner(command.plugin_id), exc_info=exc)  # raised to the caller
        if failure.timed_out:
            error = CommandFailedError(f"/{clip(command.name, 60)} ({owner(command.plugin_id)}) {failure.describe()} "
                                       "and was stopped waiting for (the operator's limit: commands.timeout)")
        else:
            error = CommandFailedError(f"/{clip(command.name, 60)} ({owner(command.plugin_id)}) failed: "
                                       f"{describe_error(exc)}")
        error.original = exc
        return error


def _is_async(handler: Callable[..., Any]) -> bool:
    from .._runtime.workers import is_coroutine_function

    return is_coroutine_function(handler)
