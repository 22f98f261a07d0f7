"""Lifecycle hooks: the callbacks plugins registered, and the two drivers that run them.

Callbacks run in registration order, each isolated (what it raises is logged with the plugin
id and the next one runs; a failure that repeats is logged once) and under a time limit;
each receives only the keyword arguments it declares, worked out once when it is added, and
every call carries `telemetry_schema_version` as Hermes' do. How their results combine is
the hook's chain (`chains`), the same for the sync and the async driver. A host calls hooks
through the typed layer (`LifecycleHooks`), one method per hook. With tracing on (`tracing`,
`HERMES_TRACE_HOOKS`), each callback call is also one line on stderr.
"""

from __future__ import annotations

import functools
import inspect
import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Generic, TypeVar, final

import attrs

from .. import _telemetry
from .._errors import owner
from .._runtime import workers
from .._runtime.invoke import Failure, acall, failed, keeps_own_limit, overran, settled
from .._undo import Undo
from ..config_keys import HOOK_CALLBACK_TIMEOUT
from ..hookspecs import LIFECYCLE_HOOKS, TELEMETRY_SCHEMA_VERSION, UNVERSIONED_HOOKS, hook_arguments
from . import tracing
from .kept import HookCallLog
from .chains import Chain

__all__ = ["HookCall", "HookCallback", "HookRunner"]

log = logging.getLogger("hermes_core.hooks")
R = TypeVar("R")


def _signature(callback: Callable[..., Any]) -> tuple[frozenset[str] | None, tuple[str, ...]]:
    """The keyword names `callback` takes (None when it takes `**kwargs`: everything, or when
    its signature cannot be read), and those it requires. Positional-only parameters never
    receive a value, as in Hermes."""
    try:
        params = inspect.signature(callback).parameters.values()
    except (TypeError, ValueError):
        return None, ()
    names: set[str] = set()
    required: list[str] = []
    anything = False
    for param in params:
        if param.kind is inspect.Parameter.VAR_KEYWORD:
            anything = True
        elif param.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY):
            names.add(param.name)
            if param.default is inspect.Parameter.empty:
                required.append(param.name)
    return (None if anything else frozenset(names)), tuple(required)


@attrs.frozen
class HookCallback:
    """A callback registered for a lifecycle hook: its plugin, and the keyword arguments it takes
    (`accepts`, None for `**kwargs`), worked out once when it was added; `own_limit`: it enforces the
    time limit itself (`keeping_own_limit`), so the drivers wait for it."""

    hook: str
    fn: Callable[..., Any] = attrs.field(repr=False)
    plugin_id: str | None
    accepts: frozenset[str] | None = attrs.field(repr=False)
    is_async: bool = attrs.field(repr=False)
    own_limit: bool = attrs.field(default=False, repr=False)

    def arguments(self, kwargs: Mapping[str, Any]) -> dict[str, Any]:
        if self.accepts is None:
            return dict(kwargs)
        return {k: kwargs[k] for k in self.accepts if k in kwargs}

    @property
    def name(self) -> str:
        """The callback's qualified name (`Guard.check`), as Hermes names it in messages."""
        return str(getattr(self.fn, "__qualname__", self.fn))

    @property
    def label(self) -> str:
        return f"{self.hook} callback {self.name} of {owner(self.plugin_id)}"


class _Progress:
    """Where a watched chain is: `current` is (index, started) of the callback running, None
    between callbacks (one attribute, so the watcher never reads half of it); `abandoned` once the
    watcher gave up on it."""

    __slots__ = ("current", "abandoned")

    def __init__(self) -> None:
        self.current: tuple[int, float] | None = None
        self.abandoned = False


@final
class HookCall(Generic[R]):
    """One call of a hook with its arguments, ready to run: `run()` from synchronous code,
    `await arun()` from a coroutine. What it returns is the hook's chain's result."""

    __slots__ = ("_runner", "_hook", "_chain")

    def __init__(self, runner: HookRunner, hook: str, chain: Chain[R]) -> None:
        self._runner, self._hook, self._chain = runner, hook, chain

    def __repr__(self) -> str:
        return f"<HookCall {self._hook}>"

    def run(self) -> R:
        self._runner._run(self._hook, self._chain)
        return self._chain.result

    async def arun(self) -> R:
        await self._runner._arun(self._hook, self._chain)
        return self._chain.result


class HookRunner:
    """The lifecycle hook callbacks of every loaded plugin, and the drivers that run them.

    `timeout()` returns the per-callback limit in seconds (0 means none). `trace`: write a line
    on stderr for each callback call (`tracing`); None (the default) reads `HERMES_TRACE_HOOKS`, now.
    `kept`: where slow and failing calls are kept (the dashboard's hook calls page), when given.
    """

    def __init__(self, timeout: Callable[[], float] = lambda: HOOK_CALLBACK_TIMEOUT.default, *,
                 trace: bool | None = None, kept: HookCallLog | None = None) -> None:
        self._callbacks: dict[str, tuple[HookCallback, ...]] = {}  # replaced, never changed: a call reads it unlocked
        self._lock = threading.Lock()
        self._timeout = timeout
        self._trace = tracing.from_environment() if trace is None else trace
        self._reported: set[tuple[int, str, str]] = set()
        self.kept = kept  # where slow and failing calls are kept (`kept`), when set

    def add(self, hook: str, callback: Callable[..., Any], plugin_id: str | None = None) -> Undo:
        """Add `callback` to `hook`; returns the function that removes it again.

        An unknown hook name is kept (for forward compatibility) with a warning.
        """
        if not callable(callback):
            raise TypeError(f"callback for hook {hook!r} of {owner(plugin_id)} is not callable: {callback!r}")
        if hook not in LIFECYCLE_HOOKS:
            import difflib

            close = difflib.get_close_matches(hook, LIFECYCLE_HOOKS, 1)
            log.warning(
                "%s registered a callback for unknown hook %r; it is kept but this version never calls it (%s)",
                owner(plugin_id), hook, f"did you mean {close[0]!r}?" if close else
                f"known hooks: {', '.join(LIFECYCLE_HOOKS)}",
            )
        accepts, required = _signature(callback)
        offered = hook_arguments(hook)
        missing = [name for name in required if offered and name not in offered]
        if missing:
            log.warning(
                "%s registered a callback for %s that requires %s, which the hook never passes "
                "(it passes: %s); every call of it will fail: give %s a default or take **kwargs",
                owner(plugin_id), hook, ", ".join(missing), ", ".join(offered), "it" if len(missing) == 1 else "them",
            )
        entry = HookCallback(hook, callback, plugin_id, accepts, workers.is_coroutine_function(callback),
                             keeps_own_limit(callback))
        with self._lock:
            self._callbacks[hook] = (*self._callbacks.get(hook, ()), entry)

        def undo() -> None:
            with self._lock:
                entries = self._callbacks.get(hook, ())
                if entry in entries:
                    self._callbacks[hook] = tuple(e for e in entries if e is not entry)

        return undo

    def limit(self) -> float | None:
        """The seconds a callback may run now (`plugins.hook_callback_timeout`; None: no limit)."""
        return self._timeout() or None

    def callbacks(self, hook: str) -> list[HookCallback]:
        """The callbacks of `hook`, in the order they run."""
        return list(self._callbacks.get(hook, ()))

    def has(self, hook: str) -> bool:
        """Whether any callback is registered for `hook` (to skip building a costly payload)."""
        return bool(self._callbacks.get(hook))

    def hooks(self) -> list[str]:
        """The hook names with at least one callback, in the order they were first registered."""
        return [hook for hook, entries in self._callbacks.items() if entries]

    def call(self, hook: str, chain: Chain[R]) -> HookCall[R]:
        """The call of `hook` whose callbacks combine by `chain`, to `run()` or `await arun()`;
        the arguments get `telemetry_schema_version` unless the caller set it (or the hook is
        one Hermes leaves it out of)."""
        if hook not in UNVERSIONED_HOOKS and "telemetry_schema_version" not in chain.kwargs:
            chain.kwargs = {**chain.kwargs, "telemetry_schema_version": TELEMETRY_SCHEMA_VERSION}
        telemetry = _telemetry.ACTIVE
        if telemetry is not None:
            return HookCall(self, hook, tracing.Traced(hook, chain, lines=self._trace, report=telemetry.hooks(hook)))
        return HookCall(self, hook, tracing.Traced(hook, chain) if self._trace else chain)

    # -- the drivers ---------------------------------------------------------------------------

    def _slow(self, cb: HookCallback, seconds: float) -> None:
        kept = self.kept
        if kept is not None and seconds > kept.slow:
            kept.add(cb.hook, cb.plugin_id, cb.name, seconds, "slow")

    def _report(self, cb: HookCallback, failure: Failure, seconds: float | None = None) -> Failure:
        """Log what a callback did instead of answering: the first time at ERROR (a callback that
        cannot take what the hook passes names what it does pass), repeats at DEBUG; and keep it."""
        kept = self.kept
        if kept is not None:
            kept.add(cb.hook, cb.plugin_id, cb.name, seconds or 0.0,
                     "timed out" if failure.timed_out else f"raised {type(failure.error).__name__}",
                     str(failure.error))
        key = (id(cb), type(failure.error).__name__, str(failure.error))
        first = key not in self._reported
        if first:
            if len(self._reported) > 1000:  # failures whose messages never repeat: keep the memory bounded
                self._reported.clear()
            self._reported.add(key)
        detail = ""
        if type(failure.error) is TypeError and "argument" in str(failure.error):
            detail = f" (the {cb.hook} hook passes: {', '.join(hook_arguments(cb.hook)) or 'its own arguments'})"
        log.log(logging.ERROR if first else logging.DEBUG, "%s %s%s", cb.label, failure.describe(), detail,
                exc_info=None if failure.timed_out else failure.error)
        return failure

    def _each(self, callbacks: Sequence[HookCallback], chain: Chain[Any], limit: float | None = None,
              watched: tuple[_Progress, threading.Lock] | None = None) -> None:
        """The callbacks in order on this thread: the hot path, so what `_call` does is written
        out here. Callbacks that declare the same keyword names share one filtered dict while
        the chain's arguments stay the same object. `watched`: this is a worker whose watcher
        may give up on a late callback; each callback's start is marked, and its result taken
        only if the watcher has not given up on it."""
        offered: Mapping[str, Any] | None = None
        picked: dict[frozenset[str], dict[str, Any]] = {}
        monotonic = time.monotonic
        for position, cb in enumerate(callbacks):
            kwargs = chain.arguments()
            if kwargs is not offered:
                offered, picked = kwargs, {}
            accepts = cb.accepts
            if accepts is not None:
                given = picked.get(accepts)
                if given is None:
                    given = picked[accepts] = {k: kwargs[k] for k in accepts if k in kwargs}
                kwargs = given
            started = monotonic()
            if watched is not None:
                watched[0].current = (position, started)
            try:
                result = cb.fn(**kwargs)
            except BaseException as exc:
                result = failed(exc)
            else:
                if result is not None:
                    result = settled(result, None if cb.own_limit else limit)
            if type(result) is Failure:
                self._report(cb, result, monotonic() - started)
            elif self.kept is not None:
                self._slow(cb, monotonic() - started)
            if watched is None:
                if not chain.take(cb, result):
                    return
                continue
            progress, mutex = watched
            with mutex:
                if progress.abandoned:
                    return
                progress.current = None
                if not chain.take(cb, result):
                    return

    def _run(self, hook: str, chain: Chain[Any]) -> None:
        """The sync driver: `hook`'s callbacks in order, each under the time limit.

        With a limit, the whole chain runs on one worker thread (one hand-off per hook, not per
        callback) while this thread watches each callback's deadline. A callback that overruns
        is reported as timed out, its worker abandoned, and the rest of the chain goes on in a
        fresh worker.
        """
        callbacks = self._callbacks.get(hook)
        if not callbacks:
            return
        limit = self._timeout() or None
        if limit is None:
            self._each(callbacks, chain)
            return
        rest: Sequence[HookCallback] = callbacks
        while rest:
            rest = self._watch(rest, chain, limit)

    def _watch(self, callbacks: Sequence[HookCallback], chain: Chain[Any], limit: float) -> Sequence[HookCallback]:
        """Run `callbacks` on a worker; returns what is left to run after a timeout ([] when done).

        The worker marks each callback's start; `mutex` makes taking a result and giving up on
        a late callback exclusive, so a callback's result is taken once, by one of them."""
        mutex = threading.Lock()
        progress = _Progress()
        monotonic = time.monotonic
        progress.current = (0, monotonic())  # the first callback's clock runs from the hand-off

        job = workers.start(functools.partial(self._each, callbacks, chain, limit, (progress, mutex)))
        timeout = limit
        while not job.wait(timeout):
            with mutex:
                current = progress.current
                if current is None:  # between two callbacks: the next one starts its own clock
                    timeout = limit
                    continue
                index, started = current
                if callbacks[index].own_limit:  # it stops itself at the limit, and says how
                    timeout = limit
                    continue
                timeout = started + limit - monotonic()
                if timeout > 0:
                    continue
                progress.abandoned = True
            late = callbacks[index]
            go_on = chain.take(late, self._report(late, overran(limit), monotonic() - started))
            return callbacks[index + 1:] if go_on else ()
        if job.error is not None:  # the host's own code failed (the callbacks' failures are contained)
            log.error("%s: the hook call failed", callbacks[0].hook, exc_info=job.error)
        return ()

    async def _arun(self, hook: str, chain: Chain[Any]) -> None:
        """The async driver: async callbacks are awaited on the caller's loop, sync ones run on
        a worker thread so they never block it."""
        callbacks = self._callbacks.get(hook)
        if not callbacks:
            return
        limit = self._timeout() or None
        for cb in callbacks:
            started = time.monotonic()
            result = await acall(cb.fn, (), cb.arguments(chain.arguments()), cb.is_async,
                                 None if cb.own_limit else limit)
            if type(result) is Failure:
                self._report(cb, result, time.monotonic() - started)
            elif self.kept is not None:
                self._slow(cb, time.monotonic() - started)
            if not chain.take(cb, result):
                return
