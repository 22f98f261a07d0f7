"""What happened to each plugin the manager tried to load."""

from __future__ import annotations

import logging
import traceback
from typing import TYPE_CHECKING, Any, Literal

import attrs

from .._discovery.spec import PluginSpec
from .._runtime.invoke import failed_call
from .._undo import Undo

if TYPE_CHECKING:
    from .._ctx.context import PluginContext

__all__ = ["LoadFailure", "PluginRecord", "PluginStatus", "discovery_failure", "failure_of"]

log = logging.getLogger("hermes_core.plugins")

# A plugin's status: being loaded, loaded, failed (its import or registration raised, all of it
# undone), or incompatible (its `requires_hermes` excludes this version; not imported).
PluginStatus = Literal["pending", "ok", "failed", "incompatible"]


NEEDS_HOST = "NeedsHermesHost"  # the `type` of a failure that is the Hermes Agent host missing


@attrs.frozen
class LoadFailure:
    """Why a plugin did not load: the exception type, its message, and the call that failed.

    A plugin that needs Hermes Agent itself has the type `NeedsHermesHost` and is said in
    one line: `needs the Hermes Agent host (imports gateway.config)`.
    """

    type: str
    message: str
    call: str
    traceback: str = attrs.field(default="", repr=False)

    @property
    def needs_host(self) -> bool:
        return self.type == NEEDS_HOST

    def __str__(self) -> str:
        from .._quote import MESSAGE_LIMIT, clip

        if self.needs_host:
            return clip(self.message, MESSAGE_LIMIT)
        return f"{self.type}: {clip(self.message, MESSAGE_LIMIT)} (in {clip(self.call)})" if self.message else \
            f"{self.type} (in {clip(self.call)})"


@attrs.define
class PluginRecord:
    """What happened to one plugin: its status (`ok`, `failed`, `incompatible`; `pending` while it loads), what it
    registered, how long its import took, the failure if any, and the problems its
    registrations ran into (a command or provider name someone else already had). A `lazy` record
    is `ok` with what the plugin registered at its last import, standing in until it is imported."""

    spec: PluginSpec
    status: PluginStatus = "pending"
    failure: LoadFailure | None = None
    registered: dict[str, list[str]] = attrs.field(factory=dict)
    import_ms: float = 0.0
    warnings: list[str] = attrs.field(factory=list)
    module: Any = attrs.field(default=None, repr=False)
    ctx: PluginContext | None = attrs.field(default=None, repr=False)
    problems: list[str] = attrs.field(factory=list)
    undos: list[Undo] = attrs.field(factory=list, repr=False)
    hermes_names: list[str] = attrs.field(factory=list)  # Hermes modules hermes-core served it at import
    # what it did that only its code can do again, so it is imported at every start (`ctx.spawn_task`, ...)
    eager: list[str] = attrs.field(factory=list, repr=False)
    # what it registered when last imported, standing in for it until it is imported (lazy activation)
    deferred: dict[str, Any] | None = attrs.field(default=None, repr=False)
    # an isolated plugin's child process (`plugins.entries.<id>.isolation: process`)
    process: Any = attrs.field(default=None, repr=False)

    @property
    def lazy(self) -> bool:
        """Whether the plugin is not imported yet: its tools and commands stand in for it until first needed."""
        return self.deferred is not None

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
    """The `LoadFailure` for `exc`: the call it was tagged with, else the loading phase. An import
    of a Hermes module that nothing serves is the Hermes Agent host missing, said in one line."""
    from .._hermes.host import host_line, needed_module, undeclared_package

    call = failed_call(exc) or phase
    trace = "".join(traceback.format_exception(exc))
    needed = needed_module(exc)
    if needed is not None:
        return LoadFailure(NEEDS_HOST, host_line(f"imports {needed}"), call, trace)
    return LoadFailure(type(exc).__name__, undeclared_package(exc) or str(exc), call, trace)


def discovery_failure(spec: PluginSpec) -> LoadFailure | None:
    """Why `spec` is not imported at all, when discovery already knows: a broken manifest or
    folder."""
    if spec.error:
        return LoadFailure("ManifestError", spec.error, "discovery")
    return None
