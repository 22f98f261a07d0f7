"""A running tool's progress: a tool reports it (`ctx.report_progress`), the host the call runs in
shows it where it can (`hermes mcp serve`: a progress notification to a client that asked for
them; `hermes acp`: the editor's tool call; `hermes chat`: the status line).

A host runs a call inside `progress_scope(listener)`; `listener(progress, total, message)` is
called from the tool's thread, must not block, and its failures are logged, never raised into
the tool.
"""

from __future__ import annotations

import contextvars
import logging
import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager

__all__ = ["ProgressListener", "progress_scope", "report_progress"]

log = logging.getLogger("hermes_core.progress")

ProgressListener = Callable[[float, "float | None", str], None]

_current: contextvars.ContextVar[ProgressListener | None] = contextvars.ContextVar("hermes_progress", default=None)


@contextmanager
def progress_scope(listener: ProgressListener | None) -> Iterator[None]:
    """Calls run inside report their progress to `listener` (None: to no one)."""
    token = _current.set(listener)
    try:
        yield
    finally:
        _current.reset(token)


def report_progress(progress: float, total: float | None = None, message: str = "") -> bool:
    """Tell whoever runs this call how far it is: `progress` so far (it should grow from one
    report to the next), of `total` when known, with an optional `message`. Whether anyone
    listens; a bad value is a `ValueError`."""
    if isinstance(progress, bool) or not isinstance(progress, (int, float)) or not math.isfinite(progress):
        raise ValueError(f"progress must be a finite number, not {progress!r}")
    if total is not None and (isinstance(total, bool) or not isinstance(total, (int, float))
                              or not math.isfinite(total)):
        raise ValueError(f"total must be a finite number or None, not {total!r}")
    listener = _current.get()
    if listener is None:
        return False
    try:
        listener(float(progress), None if total is None else float(total), str(message or ""))
    except Exception as exc:  # noqa: BLE001 - a host's display never fails the tool
        log.warning("a progress report was not shown: %s: %s", type(exc).__name__, exc)
    return True
