"""Calling plugin code from host code, and policies written once for sync and async callers.

A plugin's handler or callback may be sync or async and may fail in any way. `call()` (from
synchronous code) and `acall()` (from a coroutine) run it and hand back its value, or a
`Failure` holding what it raised or saying that it ran past its time limit.

A policy that calls plugin code (a tool call, a slash command) is written once, as a
generator that yields `Step`s and is sent each step's result; `drive()` runs it from
synchronous code and `adrive()` from a coroutine. Only the drivers know whether to wait or
to await, so parsing, checks, hooks and error wrapping exist once.

>>> def shout(handler, text):
...     result = yield Invoke(handler, (text,))
...     return "failed" if isinstance(result, Failure) else str(result).upper()
>>> drive(shout(lambda text: text, "hi"))
'HI'
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import time
from collections.abc import Awaitable, Callable, Generator, Mapping
from typing import Any, Protocol, TypeVar, final

from .._errors import describe_memory_error
from .._quote import MESSAGE_LIMIT, clip
from .interrupts import is_plugin_fault
from .workers import Overrun, run_coroutine, start, submit

__all__ = [
    "Failure", "Invoke", "Policy", "Step", "acall", "adrive", "call", "call_within", "contained", "drive", "failed",
    "Resolvable", "failed_call", "is_plugin_fault", "keeps_own_limit", "keeping_own_limit", "overran", "settled",
    "tagged",
]

R = TypeVar("R")
T_co = TypeVar("T_co", covariant=True)

_NO_KWARGS: Mapping[str, Any] = {}
# Results that are never awaitable, known by one type test (`inspect.isawaitable` costs ~1 µs on
# a plain value: it asks the `Awaitable` ABC).
_PLAIN = frozenset({str, bytes, int, float, bool, dict, list, tuple})


@final
class Failure:
    """What plugin code did instead of answering: raised `error`, or ran past its time limit."""

    __slots__ = ("error", "timed_out")

    def __init__(self, error: BaseException, *, timed_out: bool = False) -> None:
        self.error = error
        self.timed_out = timed_out

    def __repr__(self) -> str:
        return f"<Failure {self.describe()}>"

    def describe(self) -> str:
        """`timed out (did not finish within 2 s)` or `raised ValueError: bad input` (a long
        message cut, see `clip`)."""
        if self.timed_out:
            return f"timed out ({self.error})"
        return f"raised {describe_error(self.error)}"


def describe_error(exc: BaseException) -> str:
    """`ValueError: bad input`, or `KeyboardInterrupt` for an exception without a message; the
    message cut to a line's worth (`clip`)."""
    message = str(exc)
    said = describe_memory_error(exc)
    if said:
        return said
    return f"{type(exc).__name__}: {clip(message, MESSAGE_LIMIT)}" if message else type(exc).__name__


def contained(exc: BaseException) -> Failure:
    """`exc`, which left plugin code, as that plugin's `Failure`; raised on when it is the
    user's Ctrl-C or the host cancelling the call (see `interrupts`). Every place that calls
    plugin code without `call()` handles what it raises with this:

        try:
            plugin_code()
        except BaseException as exc:
            failure = contained(exc)
    """
    if not is_plugin_fault(exc):
        raise exc
    return Failure(exc)


def overran(limit: float | None) -> Failure:
    """The `Failure` of plugin code stopped waiting for after `limit` seconds."""
    return Failure(Overrun(f"did not finish within {limit:g} s"), timed_out=True)


_OWN_LIMIT = "__hermes_keeps_own_limit__"


def keeping_own_limit(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Mark `fn` as enforcing its time limit itself (an isolated plugin's stand-in kills its process
    at the limit and says so): the tool, command and hook drivers then wait for it, never abandon it."""
    setattr(fn, _OWN_LIMIT, True)
    return fn


def keeps_own_limit(fn: Any) -> bool:
    """Whether `fn` enforces its time limit itself (`keeping_own_limit`)."""
    return getattr(fn, _OWN_LIMIT, False) is True


class Resolvable:
    """A handler that stands in for another until it is resolved (a plugin imported when first
    needed: `_standins.deferred`). The tool and command call paths `resolve()` it before the call
    (on a worker for an async caller, since resolving may import code) and call what it resolved to."""

    __slots__ = ()

    def resolve(self) -> Callable[..., Any]:
        raise NotImplementedError


def failed(exc: BaseException) -> Failure:
    """What `call()` makes of `exc` raised by plugin code: its `Failure` (timed out when it is
    the portal's `Overrun`), or `exc` raised on (see `contained`)."""
    if isinstance(exc, Overrun):
        return Failure(exc, timed_out=True)
    return contained(exc)


def settled(value: Any, limit: float | None) -> Any:
    """`value` as plugin code answered it: awaited on the portal loop (within `limit` seconds)
    when it is awaitable, the `Failure` when that raises or overruns; else `value` itself."""
    if type(value) in _PLAIN or not inspect.isawaitable(value):
        return value
    try:
        return run_coroutine(value, limit)
    except BaseException as exc:
        return failed(exc)


def call(fn: Callable[..., Any], args: tuple[Any, ...] = (), kwargs: Mapping[str, Any] = _NO_KWARGS,
         limit: float | None = None) -> Any:
    """`fn(*args, **kwargs)` from synchronous code, or the `Failure`. An awaitable result is
    awaited on the portal loop, within `limit` seconds."""
    try:
        value = fn(*args, **kwargs)
    except BaseException as exc:
        return failed(exc)
    return value if value is None else settled(value, limit)


def call_within(fn: Callable[..., Any], args: tuple[Any, ...] = (), kwargs: Mapping[str, Any] = _NO_KWARGS,
                limit: float | None = None) -> Any:
    """`call()`, with `limit` holding for synchronous code too: `fn` runs on a worker thread,
    and past the limit its `Failure` says so and the worker is abandoned (never joined)."""
    if limit is None:
        return call(fn, args, kwargs)
    started = time.monotonic()
    job = start(functools.partial(fn, *args, **kwargs))
    if not job.wait(limit):
        return overran(limit)
    error = job.error
    if error is not None:
        return overran(limit) if isinstance(error, Overrun) else contained(error)
    value = job.value
    if value is None or type(value) in _PLAIN or not inspect.isawaitable(value):
        return value
    try:
        return run_coroutine(value, max(limit - (time.monotonic() - started), 0.001))
    except Overrun:
        return overran(limit)
    except BaseException as exc:
        return contained(exc)


async def _settle(awaitable: Awaitable[Any]) -> Any:
    try:
        value = await awaitable
        if value is not None and inspect.isawaitable(value):
            value = await value
    except BaseException as exc:
        return contained(exc)
    return value


async def acall(fn: Callable[..., Any], args: tuple[Any, ...] = (), kwargs: Mapping[str, Any] = _NO_KWARGS,
                is_async: bool = False, limit: float | None = None) -> Any:
    """`fn(*args, **kwargs)` from a coroutine, or the `Failure`: awaited when `is_async`, else
    run on a worker thread so it never blocks the loop; within `limit` seconds."""
    try:
        if is_async:
            awaitable = fn(*args, **kwargs)
            if not inspect.isawaitable(awaitable):  # flagged async, answered at once
                return awaitable
        else:
            awaitable = asyncio.wrap_future(submit(functools.partial(fn, *args, **kwargs)))
    except BaseException as exc:
        return contained(exc)
    if limit is None:
        return await _settle(awaitable)
    task = asyncio.ensure_future(_settle(awaitable))
    try:
        done, _ = await asyncio.wait({task}, timeout=limit)
    except asyncio.CancelledError:  # the caller was cancelled: so is the plugin code it waited for
        task.cancel()
        raise
    if not done:  # cancelled, and not waited for: plugin code that ignores the cancel cannot hold the caller
        task.cancel()
        return overran(limit)
    return task.result()


_TAG = "_hermes_failed_call"


def tagged(label: str, action: Callable[[], R]) -> R:
    """Run `action` (a plugin's registration, a call it makes into the host); an exception
    leaving it is marked with `label` (the innermost wins), so a failure names the exact call
    that failed, even one a plugin caught and went past."""
    try:
        return action()
    except BaseException as exc:
        if not hasattr(exc, _TAG):
            try:
                setattr(exc, _TAG, label)
            except (AttributeError, TypeError):  # pragma: no cover - exceptions without a __dict__
                pass
        raise


def failed_call(exc: BaseException) -> str | None:
    """The label of the call `exc` left (see `tagged`), if it left one."""
    label = getattr(exc, _TAG, None)
    return label if isinstance(label, str) else None


class Step(Protocol[T_co]):
    """One thing a policy waits for: `run()` from synchronous code, `arun()` from a coroutine."""

    def run(self) -> T_co: ...

    def arun(self) -> Awaitable[T_co]: ...


Policy = Generator["Step[Any]", Any, R]


@final
class Invoke:
    """A step that calls plugin code: its result is the value, or a `Failure`."""

    __slots__ = ("fn", "args", "kwargs", "is_async", "limit")

    def __init__(self, fn: Callable[..., Any], args: tuple[Any, ...] = (), kwargs: Mapping[str, Any] = _NO_KWARGS,
                 *, is_async: bool = False, limit: float | None = None) -> None:
        self.fn, self.args, self.kwargs, self.is_async, self.limit = fn, args, kwargs, is_async, limit

    def run(self) -> Any:
        return call_within(self.fn, self.args, self.kwargs, self.limit)

    async def arun(self) -> Any:
        return await acall(self.fn, self.args, self.kwargs, self.is_async, self.limit)


def drive(policy: Policy[R]) -> R:
    """Run `policy` from synchronous code: each step it yields is run and its result sent back."""
    value: Any = None
    while True:
        try:
            step = policy.send(value)
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]
        value = step.run()


async def adrive(policy: Policy[R]) -> R:
    """Run `policy` from a coroutine: each step it yields is awaited and its result sent back."""
    value: Any = None
    while True:
        try:
            step = policy.send(value)
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]
        value = await step.arun()
