"""Slash commands: the `Command` a plugin registers, and the registry that names and runs them.

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

from ._errors import CommandConflictError, CommandFailedError, UnknownCommandError, owner
from ._runtime.invoke import Failure, Invoke, Policy, adrive, describe_error, drive
from ._quote import clip
from .config_keys import COMMANDS_TIMEOUT

if TYPE_CHECKING:
    from ._hooks.calls import LifecycleHooks

__all__ = ["Command", "CommandRegistry", "normalise_command_name"]

log = logging.getLogger("hermes_core.commands")
Undo = Callable[[], None]


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


ARGUMENT_MODES = ("raw", "none", "required")


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
        result = yield Invoke(command.handler, (raw_args,), is_async=_is_async(command.handler), limit=self.limit())
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
    from ._runtime.workers import is_coroutine_function

    return is_coroutine_function(handler)
