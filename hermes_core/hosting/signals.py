"""Stopping a host on SIGINT or SIGTERM: the first asks it to stop (what runs may finish), a second
stops it at once.

>>> with until_signal(server.stop, server.stop_now):
...     server.run()
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import threading
from collections.abc import Callable, Iterator, Sequence
from types import FrameType
from typing import Any

__all__ = ["STOP_SIGNALS", "until_signal"]

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


@contextlib.contextmanager
def until_signal(stop: Callable[[], Any], again: Callable[[], Any] | None = None, *,
                 signals: Sequence[int] = STOP_SIGNALS) -> Iterator[None]:
    """While the block runs, the first of `signals` calls `stop()` and each later one `again()`
    (`stop()` when there is none), in place of their handlers, which are put back afterwards.

    Entered in a coroutine, the calls are made on its event loop, never inside the signal handler,
    so they may touch the loop's objects (set an `asyncio.Event`, cancel a scope). Entered in
    synchronous code, they run in the handler, on the main thread, as Python runs handlers. Off the
    main thread, where Python takes no signal handlers, it changes nothing.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    try:
        loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
    except RuntimeError:
        loop = None
    received = 0

    def handler(signum: int, frame: FrameType | None) -> None:
        nonlocal received
        received += 1
        action = stop if received == 1 or again is None else again
        if loop is None:
            action()
        elif not loop.is_closed():
            loop.call_soon_threadsafe(action)

    previous = {number: signal.signal(number, handler) for number in signals}
    try:
        yield
    finally:
        for number, old in previous.items():
            signal.signal(number, old if old is not None else signal.SIG_DFL)
