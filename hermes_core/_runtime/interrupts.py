"""Telling a real Ctrl-C from plugin code raising `KeyboardInterrupt`, and what counts as a plugin's failure.

A plugin's failure is anything its code raises: `Exception`, but also `SystemExit`,
`KeyboardInterrupt`, `GeneratorExit` or any other `BaseException` subclass it raises itself.
Only three things are not the plugin's failure and go on up: the user pressing Ctrl-C (SIGINT
delivered to the process), the host cancelling the task the plugin code runs in, and the caller
of a turn stopping it (`cancel.Cancel`) while the plugin's code waited on the model.

To know a Ctrl-C is real, `install()` puts a SIGINT handler in place that behaves like
Python's default (it raises `KeyboardInterrupt`) and marks the exception it raises. It is
installed only over Python's default handler and only from the main thread; when a host has
its own SIGINT handler, every `KeyboardInterrupt` counts as the user's (nothing can tell).

>>> install()
>>> is_plugin_fault(KeyboardInterrupt())   # raised by a plugin, not by the signal
True
"""

from __future__ import annotations

import signal
import sys
import threading
from types import FrameType

__all__ = ["install", "is_plugin_fault", "is_user_interrupt", "leave_sigint_to_the_main_thread"]

_MARK = "_hermes_sigint"


def _on_sigint(signum: int, frame: FrameType | None) -> None:
    """Python's default SIGINT behaviour, with the `KeyboardInterrupt` marked as the user's."""
    interrupt = KeyboardInterrupt()
    setattr(interrupt, _MARK, True)
    raise interrupt


def install() -> None:
    """Put the marking SIGINT handler in place of Python's default (main thread only; idempotent)."""
    if threading.current_thread() is not threading.main_thread():
        return
    try:
        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            signal.signal(signal.SIGINT, _on_sigint)
    except (ValueError, OSError):  # pragma: no cover - an embedded interpreter without signals
        pass


def leave_sigint_to_the_main_thread() -> None:
    """Block SIGINT in the calling (background) thread: a Ctrl-C the kernel hands to a worker
    only sets Python's flag, and leaves the main thread waiting in a prompt or a socket read."""
    if hasattr(signal, "pthread_sigmask") and threading.current_thread() is not threading.main_thread():
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})


def is_user_interrupt(exc: BaseException) -> bool:
    """Whether `exc` is the user's Ctrl-C (not plugin code raising `KeyboardInterrupt`)."""
    if not isinstance(exc, KeyboardInterrupt):
        return False
    handler = signal.getsignal(signal.SIGINT)
    if handler is signal.SIG_IGN:  # no Ctrl-C reaches this process (a background job): it was raised
        return False
    return bool(getattr(exc, _MARK, False)) or handler is not _on_sigint


def _stopped_turn() -> bool:
    """Whether the turn this code runs in was stopped by its caller (`cancel.Cancel`). Read from the
    module if it was imported (no turn can be stopped before): `cancel` runs its work on `workers`,
    which leaves SIGINT to the main thread here."""
    module = sys.modules.get(f"{__package__}.cancel")
    cancel = None if module is None else module.current()
    return cancel is not None and bool(cancel.is_set)


def _cancelling() -> bool:
    """Whether the current asyncio task is being cancelled by its owner."""
    import asyncio

    try:
        task = asyncio.current_task()
    except RuntimeError:
        return False
    cancelling = getattr(task, "cancelling", None)  # Python 3.11+; before, every CancelledError is the host's
    return task is not None and (cancelling is None or cancelling() > 0)


def is_plugin_fault(exc: BaseException) -> bool:
    """Whether `exc`, leaving plugin code, is that plugin's failure (contained and reported)
    rather than the user's Ctrl-C or the host cancelling the call (raised on)."""
    if is_user_interrupt(exc):
        return False
    if isinstance(exc, KeyboardInterrupt) and _stopped_turn():
        return False
    asyncio = sys.modules.get("asyncio")  # not imported yet: nothing can be cancelling
    if asyncio is not None and isinstance(exc, asyncio.CancelledError) and _cancelling():
        return False
    return True
