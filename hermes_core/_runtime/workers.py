"""Running plugin code safely: coroutines from sync callers, and sync calls under a time limit.

Async plugin code called from synchronous host code runs on one background event loop
(the portal), so it works whether or not the caller is itself inside an event loop. Sync
code that must respect a time limit runs on a small pool of daemon worker threads; work
that overruns is abandoned (Python cannot stop a thread) and its worker rejoins the pool
when it finally returns.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import functools
import queue
import threading
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from .interrupts import leave_sigint_to_the_main_thread

T = TypeVar("T")

__all__ = [
    "Job", "Overrun", "in_thread", "is_awaitable", "is_coroutine_function", "on_portal", "portal", "running_portal",
    "run_coroutine", "start", "submit",
]


class Overrun(TimeoutError):
    """Plugin code ran past its time limit (not a `TimeoutError` the plugin raised itself)."""

_portal_loop: asyncio.AbstractEventLoop | None = None
_portal_lock = threading.Lock()


def portal() -> asyncio.AbstractEventLoop:
    """The background event loop async plugin code runs on from sync callers (started on first use)."""
    global _portal_loop
    with _portal_lock:
        if _portal_loop is None or _portal_loop.is_closed():
            loop = asyncio.new_event_loop()
            thread = threading.Thread(target=_portal_run, args=(loop,), name="hermes-portal", daemon=True)
            thread.start()
            _portal_loop = loop
        return _portal_loop


def running_portal() -> asyncio.AbstractEventLoop | None:
    """The background event loop if it was started and is not closed, else None (starts nothing)."""
    loop = _portal_loop
    return loop if loop is not None and not loop.is_closed() else None


def _portal_run(loop: asyncio.AbstractEventLoop) -> None:
    leave_sigint_to_the_main_thread()
    loop.run_forever()


def on_portal() -> bool:
    """Whether the caller runs on the background loop itself (where waiting synchronously for it
    would deadlock)."""
    loop = _portal_loop
    if loop is None:
        return False
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False


def run_coroutine(awaitable: Awaitable[T], timeout: float | None = None) -> T:
    """Run `awaitable` to completion from synchronous code and return its result.

    Raises `Overrun` (a `TimeoutError`, after cancelling it) when it takes longer than `timeout` seconds.
    """
    loop = portal()
    if on_portal():
        raise RuntimeError("a coroutine cannot be waited for synchronously from the hermes portal loop; use the async API")

    async def _wrap() -> tuple[T | None, BaseException | None]:
        try:
            return await awaitable, None
        except (KeyboardInterrupt, SystemExit) as exc:  # asyncio would let these stop the portal loop itself
            return None, exc

    future = asyncio.run_coroutine_threadsafe(_wrap(), loop)
    done, _ = concurrent.futures.wait([future], timeout)
    if not done:
        future.cancel()
        raise Overrun(f"did not finish within {timeout:g} s")
    value, raised = future.result()
    if raised is not None:
        raise raised
    return value  # type: ignore[return-value]


class Job:
    """`fn()` handed to a pooled worker by `start`: `wait(timeout)` says whether it finished, then
    `value` or `error` holds what it returned or raised. A lock released once, no `Future`: the
    hand-off costs about what a bare queue round trip to a thread costs."""

    __slots__ = ("fn", "value", "error", "_done")

    def __init__(self, fn: Callable[[], Any]) -> None:
        self.fn: Callable[[], Any] | None = fn
        self.value: Any = None
        self.error: BaseException | None = None
        self._done = threading.Lock()
        self._done.acquire()

    def wait(self, timeout: float | None = None) -> bool:
        """Whether the job finished within `timeout` seconds (None: wait for it)."""
        if timeout is None:
            return self._done.acquire()
        return self._done.acquire(True, max(timeout, 0.0))

    def _run(self) -> None:
        fn, self.fn = self.fn, None
        try:
            self.value = fn() if fn is not None else None
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting caller
            self.error = exc


class _Worker:
    __slots__ = ("inbox",)

    def __init__(self) -> None:
        self.inbox: queue.SimpleQueue[Job] = queue.SimpleQueue()
        threading.Thread(target=self._run, name="hermes-worker", daemon=True).start()

    def _run(self) -> None:
        leave_sigint_to_the_main_thread()
        while True:
            job = self.inbox.get()
            job._run()
            pooled = _release(self)  # back in the pool before the caller hears: its next call reuses this thread
            job._done.release()
            del job
            if not pooled:
                return


_idle: list[_Worker] = []
_idle_lock = threading.Lock()
# Idle workers kept for the next calls. Starting a thread waits until it runs (about a millisecond
# on a loaded machine), on the caller's thread: an async host that takes a burst of sync tool calls
# (`hermes mcp serve` answering 100 at once) would start them one by one on its event loop. An idle
# thread costs its stack's address space, not memory in use.
_MAX_IDLE = 128


def _release(worker: _Worker) -> bool:
    with _idle_lock:
        if len(_idle) >= _MAX_IDLE:
            return False
        _idle.append(worker)
        return True


def start(fn: Callable[[], Any]) -> Job:
    """Run `fn()` on a pooled worker thread, in a copy of the caller's context variables (what a
    host set for this conversation, such as the gateway's session variables, reaches plugin code);
    wait for it with the returned `Job`."""
    with _idle_lock:
        worker = _idle.pop() if _idle else None
    if worker is None:
        worker = _Worker()
    job = Job(functools.partial(contextvars.copy_context().run, fn))
    worker.inbox.put(job)
    return job


def _settle(future: concurrent.futures.Future[T], fn: Callable[[], T]) -> None:
    if future.set_running_or_notify_cancel():
        try:
            future.set_result(fn())
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting caller
            future.set_exception(exc)


def submit(fn: Callable[[], T]) -> concurrent.futures.Future[T]:
    """Run `fn()` on a pooled worker thread; the future holds its result or exception (for
    callers that need a `Future`, such as `asyncio.wrap_future`; else `start` is cheaper)."""
    future: concurrent.futures.Future[T] = concurrent.futures.Future()
    start(functools.partial(_settle, future, fn))
    return future


def is_coroutine_function(fn: Any) -> bool:
    """Whether calling `fn` returns a coroutine (functions, methods, and `async __call__` objects)."""
    import inspect

    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(getattr(fn, "__call__", None))


def is_awaitable(value: Any) -> bool:
    """Whether `value` must be awaited (a plain function may still hand back a coroutine)."""
    import inspect

    return inspect.isawaitable(value)


async def in_thread(fn: Callable[..., T], *args: Any) -> T:
    """`fn(*args)` awaited from a coroutine, on a pooled daemon worker thread, in a copy of this
    context (a conversation's variables, a turn's cancel): a turn still running when its host
    stops never holds the process open (the gateway's turns, the API server's, `hermes acp`'s).
    A pooled thread, not a new one: starting a thread waits until it runs (a millisecond or more
    on a busy machine, every request)."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()

    def settle(outcome: Callable[[], None]) -> None:
        if not future.done():
            outcome()

    def work() -> None:
        try:
            result = fn(*args)
        except BaseException as exc:  # noqa: BLE001 - handed to the awaiting coroutine
            error = exc
            call = lambda: settle(lambda: future.set_exception(error))  # noqa: E731
        else:
            call = lambda: settle(lambda: future.set_result(result))  # noqa: E731
        try:
            loop.call_soon_threadsafe(call)
        except RuntimeError:  # the loop is closed: the host has stopped
            pass

    start(work)  # in a copy of this context
    return await future
