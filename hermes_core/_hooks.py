"""Lifecycle hooks: callbacks from `ctx.register_hook` and `@hookimpl`, run in one policy.

Callbacks run in registration order, each isolated (an exception is logged with the plugin
id and the next runs) and under a time limit; each receives only the keyword arguments it
declares. `pre_tool_call` fails closed.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from . import _aio
from ._errors import owner
from .hookspecs import LIFECYCLE_HOOKS

__all__ = ["HookRunner", "ToolDecision"]

log = logging.getLogger("hermes_core.hooks")
Undo = Callable[[], None]


def _accepted(callback: Callable[..., Any]) -> frozenset[str] | None:
    """The keyword names `callback` takes; None when it takes `**kwargs` (everything)."""
    try:
        params = inspect.signature(callback).parameters.values()
    except (TypeError, ValueError):
        return None
    names = set()
    for param in params:
        if param.kind is inspect.Parameter.VAR_KEYWORD:
            return None
        if param.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY):
            names.add(param.name)
    return frozenset(names)


@attrs.frozen
class _Callback:
    hook: str
    fn: Callable[..., Any] = attrs.field(repr=False)
    plugin_id: str | None
    accepts: frozenset[str] | None = attrs.field(repr=False)
    is_async: bool = attrs.field(repr=False)

    def arguments(self, kwargs: Mapping[str, Any]) -> dict[str, Any]:
        if self.accepts is None:
            return dict(kwargs)
        return {k: v for k, v in kwargs.items() if k in self.accepts}

    @property
    def label(self) -> str:
        return f"{self.hook} callback {getattr(self.fn, '__qualname__', self.fn)!s} of {owner(self.plugin_id)}"


@attrs.frozen
class ToolDecision:
    """What the `pre_tool_call` callbacks decided: run with `args`, or block with `message`."""

    blocked: bool
    args: Mapping[str, Any]
    message: str = ""


class _Failure:
    __slots__ = ("exc",)

    def __init__(self, exc: BaseException) -> None:
        self.exc = exc

    def describe(self) -> str:
        if isinstance(self.exc, TimeoutError):
            return f"timed out ({self.exc})"
        return f"raised {type(self.exc).__name__}: {self.exc}"


class HookRunner:
    """The lifecycle hook callbacks of every loaded plugin, and the policy that runs them.

    `timeout()` returns the per-callback limit in seconds (0 means none).
    """

    def __init__(self, timeout: Callable[[], float] = lambda: 30.0) -> None:
        self._callbacks: dict[str, list[_Callback]] = {}
        self._lock = threading.Lock()
        self._timeout = timeout

    def add(self, hook: str, callback: Callable[..., Any], plugin_id: str | None = None) -> Undo:
        """Add `callback` to `hook`; returns the function that removes it again.

        An unknown hook name is kept (for forward compatibility) with a warning.
        """
        if not callable(callback):
            raise TypeError(f"callback for hook {hook!r} is not callable: {callback!r}")
        if hook not in LIFECYCLE_HOOKS:
            log.warning(
                "%s registered a callback for unknown hook %r; it is kept but this version never calls it "
                "(known hooks: %s)", owner(plugin_id), hook, ", ".join(LIFECYCLE_HOOKS),
            )
        entry = _Callback(hook, callback, plugin_id, _accepted(callback), _aio.is_coroutine_function(callback))
        with self._lock:
            self._callbacks.setdefault(hook, []).append(entry)

        def undo() -> None:
            with self._lock:
                entries = self._callbacks.get(hook, [])
                if entry in entries:
                    entries.remove(entry)

        return undo

    def callbacks(self, hook: str) -> list[_Callback]:
        return list(self._callbacks.get(hook, ()))

    # -- running callbacks -----------------------------------------------------------------

    def _call(self, cb: _Callback, kwargs: Mapping[str, Any], limit: float | None) -> Any:
        """One callback, in the current thread; failures come back as `_Failure`."""
        try:
            result = cb.fn(**cb.arguments(kwargs))
            if _aio.is_awaitable(result):
                result = _aio.run_coroutine(result, limit)
            return result
        except (Exception, SystemExit) as exc:
            return self._failed(cb, exc)

    def _sequence(
        self,
        callbacks: list[_Callback],
        kwargs_for: Callable[[], Mapping[str, Any]],
        on_result: Callable[[_Callback, Any], bool],
    ) -> None:
        """Run `callbacks` in order, each under the time limit; `on_result` says whether to go on.

        With a limit, the whole chain runs on one worker thread (one hand-off per hook, not per
        callback) while this thread watches each callback's deadline. A callback that overruns
        is reported as timed out, its worker abandoned, and the rest of the chain goes on in a
        fresh worker.
        """
        limit = self._timeout() or None
        if limit is None:
            for cb in callbacks:
                if not on_result(cb, self._call(cb, kwargs_for(), None)):
                    return
            return
        pending = callbacks
        while pending:
            pending = self._watch(pending, kwargs_for, on_result, limit)

    def _watch(
        self,
        chain: list[_Callback],
        kwargs_for: Callable[[], Mapping[str, Any]],
        on_result: Callable[[_Callback, Any], bool],
        limit: float,
    ) -> list[_Callback]:
        """Run `chain` on a worker; returns what is left to run after a timeout ([] when done)."""
        state = threading.Condition()
        progress = {"index": 0, "started": time.monotonic(), "done": False, "abandoned": False}

        def work() -> None:
            for index, cb in enumerate(chain):
                with state:
                    if progress["abandoned"]:
                        return
                    progress.update(index=index, started=time.monotonic())
                result = self._call(cb, kwargs_for(), limit)
                with state:
                    if progress["abandoned"]:
                        return
                    if not on_result(cb, result):
                        break
            with state:
                progress["done"] = True
                state.notify()

        _aio.submit(work)
        with state:
            while not progress["done"]:
                remaining = progress["started"] + limit - time.monotonic()
                if remaining > 0:
                    state.wait(remaining)
                    continue
                progress["abandoned"] = True
                index = progress["index"]
                timed_out = chain[index]
                go_on = on_result(timed_out, self._failed(timed_out, TimeoutError(f"did not finish within {limit:g} s")))
                return chain[index + 1:] if go_on else []
        return []

    async def _asequence(
        self,
        callbacks: list[_Callback],
        kwargs_for: Callable[[], Mapping[str, Any]],
        on_result: Callable[[_Callback, Any], bool],
    ) -> None:
        """`_sequence` for async callers: async callbacks are awaited on the caller's loop,
        sync ones run on a worker thread so they never block it."""
        limit = self._timeout() or None
        for cb in callbacks:
            if not on_result(cb, await self._acall(cb, kwargs_for(), limit)):
                return

    async def _acall(self, cb: _Callback, kwargs: Mapping[str, Any], limit: float | None) -> Any:
        args = cb.arguments(kwargs)
        try:
            if cb.is_async:
                awaitable = cb.fn(**args)
            else:
                awaitable = asyncio.wrap_future(_aio.submit(lambda: cb.fn(**args)))
            result = await asyncio.wait_for(awaitable, limit)
            if _aio.is_awaitable(result):
                result = await asyncio.wait_for(result, limit)
            return result
        except asyncio.TimeoutError:
            return self._failed(cb, TimeoutError(f"did not finish within {limit:g} s"))
        except (Exception, SystemExit) as exc:
            return self._failed(cb, exc)

    @staticmethod
    def _failed(cb: _Callback, exc: BaseException) -> _Failure:
        failure = _Failure(exc)
        log.error("%s %s", cb.label, failure.describe(), exc_info=None if isinstance(exc, TimeoutError) else exc)
        return failure

    # -- the hooks: each policy once, run by the sync or the async driver ----------------

    def fire(self, hook: str, **kwargs: Any) -> list[Any]:
        """Run every callback of `hook`; returns their non-None results in order."""
        collect = _Collect()
        self._sequence(self.callbacks(hook), lambda: kwargs, collect)
        return collect.results

    async def afire(self, hook: str, **kwargs: Any) -> list[Any]:
        """`fire` for async hosts."""
        collect = _Collect()
        await self._asequence(self.callbacks(hook), lambda: kwargs, collect)
        return collect.results

    def pre_tool_call(self, tool_name: str, args: Mapping[str, Any], **kwargs: Any) -> ToolDecision:
        """Ask the `pre_tool_call` callbacks whether `tool_name` may run, and with what args."""
        gate = _Gate(self, tool_name, args, kwargs)
        self._sequence(self.callbacks("pre_tool_call"), gate.arguments, gate)
        return gate.decision

    async def apre_tool_call(self, tool_name: str, args: Mapping[str, Any], **kwargs: Any) -> ToolDecision:
        """`pre_tool_call` for async hosts."""
        gate = _Gate(self, tool_name, args, kwargs)
        await self._asequence(self.callbacks("pre_tool_call"), gate.arguments, gate)
        return gate.decision

    @staticmethod
    def _decide(cb: _Callback, tool_name: str, args: dict[str, Any], result: Any) -> ToolDecision:
        if isinstance(result, _Failure):
            return ToolDecision(
                True, args, f"Tool call {tool_name!r} blocked: the {cb.label} {result.describe()} (hooks fail closed)"
            )
        if result is None:
            return ToolDecision(False, args)
        action = result.get("action") if isinstance(result, Mapping) else None
        if action == "block":
            message = result.get("message") or f"Tool call {tool_name!r} blocked by the {cb.label}"
            return ToolDecision(True, args, str(message))
        if action == "modify" and isinstance(result.get("args"), Mapping):
            return ToolDecision(False, dict(result["args"]))
        if action == "allow":
            return ToolDecision(False, args)
        log.error("%s returned an invalid decision %r; blocking (hooks fail closed)", cb.label, result)
        return ToolDecision(
            True, args,
            f"Tool call {tool_name!r} blocked: the {cb.label} returned an invalid decision "
            "(expected None, {'action': 'block', 'message': ...} or {'action': 'modify', 'args': {...}})",
        )

    @staticmethod
    def _context(results: list[Any]) -> str | None:
        parts = []
        for result in results:
            if isinstance(result, Mapping):
                result = result.get("context")
            if isinstance(result, str) and result.strip():
                parts.append(result.strip())
        return "\n\n".join(parts) or None

    def pre_llm_call(self, **kwargs: Any) -> str | None:
        """The text the `pre_llm_call` callbacks add to this call's user message, or None."""
        return self._context(self.fire("pre_llm_call", **kwargs))

    async def apre_llm_call(self, **kwargs: Any) -> str | None:
        return self._context(await self.afire("pre_llm_call", **kwargs))

    def transform(self, hook: str, **kwargs: Any) -> str | None:
        """The first non-None string a `transform_*` callback returns, or None."""
        first = _First()
        self._sequence(self.callbacks(hook), lambda: kwargs, first)
        return first.found

    async def atransform(self, hook: str, **kwargs: Any) -> str | None:
        first = _First()
        await self._asequence(self.callbacks(hook), lambda: kwargs, first)
        return first.found


class _Collect:
    """`fire`: keep every non-None result; never stop early."""

    def __init__(self) -> None:
        self.results: list[Any] = []

    def __call__(self, cb: _Callback, result: Any) -> bool:
        if result is not None and not isinstance(result, _Failure):
            self.results.append(result)
        return True


class _First:
    """`transform_*`: stop at the first string."""

    found: str | None = None

    def __call__(self, cb: _Callback, result: Any) -> bool:
        if isinstance(result, str):
            self.found = result
            return False
        return True


class _Gate:
    """`pre_tool_call`: each callback sees the args as modified so far; a block stops the chain."""

    def __init__(self, runner: HookRunner, tool_name: str, args: Mapping[str, Any], extra: Mapping[str, Any]) -> None:
        self._decide = runner._decide
        self._tool_name = tool_name
        self._extra = extra
        self.decision = ToolDecision(False, dict(args))

    def arguments(self) -> Mapping[str, Any]:
        return {"tool_name": self._tool_name, "args": dict(self.decision.args), **self._extra}

    def __call__(self, cb: _Callback, result: Any) -> bool:
        self.decision = self._decide(cb, self._tool_name, dict(self.decision.args), result)
        return not self.decision.blocked
