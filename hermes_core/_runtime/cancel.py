"""Stopping a turn from another thread, promptly: its caller went away, or asked it to stop.

A `Cancel` is set by whoever owns the turn (`Agent.cancel()`, an API request whose client left,
an editor's `session/cancel`). The turn's thread runs inside `cancel_scope(cancel)`, and what it waits
on registers how to break that wait off (`breaking(close)`): a model request being streamed
shuts its connection down, so the read blocked on it returns at once instead of at the model's
next piece. The turn then raises `Cancelled` at its next step (`cancel_check()`), which the agent
handles as it handles Ctrl-C: what was said stands and the session stays valid.

>>> cancel = Cancel()
>>> with cancel_scope(cancel):
...     cancel.set()   # from any thread
...     cancel_check()        # raises Cancelled
"""

from __future__ import annotations

import contextvars
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

T = TypeVar("T")

__all__ = ["Cancel", "Cancelled", "breakable", "breaking", "cancel_check", "cancel_scope", "current", "pause"]


class Cancelled(KeyboardInterrupt):
    """The turn was stopped by its caller (handled as Ctrl-C is: never a plugin's failure)."""

    def __init__(self, message: str = "the turn was stopped by its caller") -> None:
        super().__init__(message)


class Cancel:
    """One turn's stop signal, and the waits to break off when it is set."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self._lock = threading.Lock()
        self._breakers: list[Callable[[], None]] = []

    @property
    def is_set(self) -> bool:
        return self._event.is_set()

    def set(self) -> None:
        """Stop the turn: every wait registered now is broken off (from this thread)."""
        with self._lock:
            self._event.set()
            breakers, self._breakers = self._breakers, []
        for breaker in breakers:
            _quietly(breaker)

    def wait(self, timeout: float | None = None) -> bool:
        return self._event.wait(timeout)


_current: contextvars.ContextVar[Cancel | None] = contextvars.ContextVar("hermes_cancel", default=None)


def current() -> Cancel | None:
    """The `Cancel` of the turn this code runs in, if any."""
    return _current.get()


@contextmanager
def cancel_scope(cancel: Cancel) -> Iterator[Cancel]:
    """Run the block as the turn `cancel` stops."""
    token = _current.set(cancel)
    try:
        yield cancel
    finally:
        _current.reset(token)


def cancel_check() -> None:
    """Raise `Cancelled` when the current turn has been stopped."""
    cancel = _current.get()
    if cancel is not None and cancel.is_set:
        raise Cancelled


def pause(seconds: float) -> None:
    """Sleep `seconds`, or less when the current turn is stopped meanwhile (then `Cancelled`)."""
    cancel = _current.get()
    if cancel is None:
        time.sleep(seconds)
        return
    cancel.wait(seconds)
    cancel_check()


@contextmanager
def breaking(breaker: Callable[[], None]) -> Iterator[None]:
    """While the block waits, `breaker()` is how to break that wait off when the current turn is
    stopped (at once when it already is). Outside a turn, nothing is registered."""
    cancel = _current.get()
    if cancel is None:
        yield
        return
    with cancel._lock:
        stopped = cancel._event.is_set()
        if not stopped:
            cancel._breakers.append(breaker)
    if stopped:
        _quietly(breaker)
        raise Cancelled
    try:
        yield
    finally:
        with cancel._lock:
            if breaker in cancel._breakers:
                cancel._breakers.remove(breaker)


def breakable(work: Callable[[], T]) -> T:
    """`work()`; in a turn that can be stopped, run on a pooled daemon worker and waited for until
    it ends or the turn is stopped (`Cancelled`; the work then ends on its own, its result dropped)."""
    if _current.get() is None:
        return work()
    done = threading.Event()
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = work()
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting thread
            box["error"] = exc
        finally:
            done.set()

    from .workers import start

    start(run)  # in a copy of this turn's context (its session variables)
    with breaking(done.set):
        done.wait()
    cancel_check()
    if "error" in box:
        raise box["error"]
    return box["value"]  # type: ignore[no-any-return]


def _quietly(breaker: Callable[[], None]) -> None:
    try:
        breaker()
    except Exception:  # noqa: BLE001 - breaking off a wait that already ended is no failure
        pass
