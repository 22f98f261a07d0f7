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
from collections.abc import Awaitable, Callable, Generator, Mapping
from typing import Any, Protocol, TypeVar, final

from ._workers import Overrun, run_coroutine, submit

__all__ = [
    "PLUGIN_FAULTS", "Failure", "Invoke", "Policy", "Step", "acall", "adrive", "call", "drive", "failed_call",
    "overran", "tagged",
]

R = TypeVar("R")
T_co = TypeVar("T_co", covariant=True)

# What plugin code raising counts as that plugin's failure (contained, reported, never raised to the host).
PLUGIN_FAULTS: tuple[type[BaseException], ...] = (Exception, SystemExit)
_NO_KWARGS: Mapping[str, Any] = {}


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
        """`timed out (did not finish within 2 s)` or `raised ValueError: bad input`."""
        if self.timed_out:
            return f"timed out ({self.error})"
        return f"raised {type(self.error).__name__}: {self.error}"


def overran(limit: float | None) -> Failure:
    """The `Failure` of plugin code stopped waiting for after `limit` seconds."""
    return Failure(Overrun(f"did not finish within {limit:g} s"), timed_out=True)


def call(fn: Callable[..., Any], args: tuple[Any, ...] = (), kwargs: Mapping[str, Any] = _NO_KWARGS,
         limit: float | None = None) -> Any:
    """`fn(*args, **kwargs)` from synchronous code, or the `Failure`. An awaitable result is
    awaited on the portal loop, within `limit` seconds."""
    try:
        value = fn(*args, **kwargs)
        if value is not None and inspect.isawaitable(value):
            value = run_coroutine(value, limit)
    except Overrun as exc:
        return Failure(exc, timed_out=True)
    except PLUGIN_FAULTS as exc:
        return Failure(exc)
    return value


async def _settle(awaitable: Awaitable[Any]) -> Any:
    try:
        value = await awaitable
        if value is not None and inspect.isawaitable(value):
            value = await value
    except PLUGIN_FAULTS as exc:
        return Failure(exc)
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
    except PLUGIN_FAULTS as exc:
        return Failure(exc)
    if limit is None:
        return await _settle(awaitable)
    try:
        return await asyncio.wait_for(_settle(awaitable), limit)
    except asyncio.TimeoutError:  # _settle holds the plugin's own exceptions: this is the limit
        return overran(limit)


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
        return call(self.fn, self.args, self.kwargs, self.limit)

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
