"""Plugin processes closed at the host's exit while traces are exported: each sends what it has not
sent yet of its spans and metrics as it exits (`_telemetry.relay`), which reaches the host before
the OpenTelemetry SDK's last export. `close_at_exit` is registered with `atexit` at the first
process started with export on, after the SDK's providers were made, so it runs before their
shutdown (atexit runs last-registered first)."""

from __future__ import annotations

import atexit
import threading
import weakref
from typing import Any

__all__ = ["close_at_exit", "forget", "traced"]

_TRACED: weakref.WeakSet[Any] = weakref.WeakSet()  # ChildProcess objects, each with its `close()`
_LOCK = threading.Lock()
_REGISTERED = False


def traced(child: Any) -> None:
    """`child` (a `ChildProcess`) is closed at the host's exit unless it was closed before."""
    global _REGISTERED
    with _LOCK:
        if not _REGISTERED:
            atexit.register(close_at_exit)
            _REGISTERED = True
        _TRACED.add(child)


def forget(child: Any) -> None:
    """`child` was closed: nothing to do for it at exit."""
    with _LOCK:
        _TRACED.discard(child)


def close_at_exit() -> None:
    """Close every process still open that was started while traces are exported."""
    with _LOCK:
        children = list(_TRACED)
    for child in children:  # one that fails to close leaves the others to be closed all the same
        try:
            child.close()
        except Exception:  # noqa: BLE001, S112 - exiting: nothing left to tell
            continue
