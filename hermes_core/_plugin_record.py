"""What happened to each plugin the manager tried to load."""

from __future__ import annotations

import logging
import traceback
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import attrs

from ._discovery import PluginSpec
from ._invoke import failed_call

if TYPE_CHECKING:
    from ._context import PluginContext

__all__ = ["PluginRecord", "LoadFailure", "failure_of"]

log = logging.getLogger("hermes_core.plugins")
Undo = Callable[[], None]


@attrs.frozen
class LoadFailure:
    """Why a plugin did not load: the exception type, its message, and the call that failed."""

    type: str
    message: str
    call: str
    traceback: str = attrs.field(default="", repr=False)

    def __str__(self) -> str:
        return f"{self.type}: {self.message} (in {self.call})"


@attrs.define
class PluginRecord:
    """What happened to one plugin: its status (`ok`, `failed`, `incompatible`), what it
    registered, how long its import took, the failure if any, and the problems its
    registrations ran into (a command or provider name someone else already had)."""

    spec: PluginSpec
    status: str = "pending"
    failure: LoadFailure | None = None
    registered: dict[str, list[str]] = attrs.field(factory=dict)
    import_ms: float = 0.0
    warnings: list[str] = attrs.field(factory=list)
    module: Any = attrs.field(default=None, repr=False)
    ctx: PluginContext | None = attrs.field(default=None, repr=False)
    problems: list[str] = attrs.field(factory=list)
    undos: list[Undo] = attrs.field(factory=list, repr=False)
    hermes_names: list[str] = attrs.field(factory=list)  # Hermes modules hermes-core served it at import

    @property
    def id(self) -> str:
        return self.spec.id

    def note(self, kind: str, name: str, undo: Undo | None) -> None:
        if undo is not None:
            self.undos.append(undo)
            self.registered.setdefault(kind, []).append(name)

    def rollback(self) -> None:
        for undo in reversed(self.undos):
            try:
                undo()
            except Exception:  # noqa: BLE001 - keep undoing the rest
                log.exception("rolling back plugin %r", self.id)
        self.undos.clear()
        self.registered.clear()
        self.problems.clear()


def failure_of(exc: BaseException, phase: str) -> LoadFailure:
    """The `LoadFailure` for `exc`: the call it was tagged with, else the loading phase."""
    call = failed_call(exc) or phase
    return LoadFailure(type(exc).__name__, str(exc), call, "".join(traceback.format_exception(exc)))
