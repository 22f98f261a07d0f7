"""What lazy activation puts in place of a handler whose plugin is not imported yet: `Deferred`.

A host that activates plugins lazily registers a plugin's tools and commands from what the
plugin registered at an earlier start, each with a `Deferred` handler. The call path that finds
one resolves it first (`resolve()` imports the plugin, which registers its real handlers in
place of the deferred ones) and then looks the tool or command up again; anything that calls the
handler directly gets the same through `__call__`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .._runtime.invoke import Resolvable

__all__ = ["Deferred"]


class Deferred(Resolvable):
    """Stands in for a handler until its plugin is imported. `activate()` imports the plugin (once,
    whoever asks first) or raises the error that says why it could not load; `real()` is the
    handler registered in its place by then."""

    __slots__ = ("_activate", "_real")

    def __init__(self, activate: Callable[[], None], real: Callable[[], Callable[..., Any]]) -> None:
        self._activate, self._real = activate, real

    def resolve(self) -> Callable[..., Any]:
        """Import the plugin if nobody has yet, and return the real handler."""
        self._activate()
        return self._real()

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.resolve()(*args, **kwargs)

    def __repr__(self) -> str:
        return "<handler imported when first needed>"
