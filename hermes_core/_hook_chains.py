"""How the callbacks of one hook call combine: each hook's policy, written once.

A chain says which keyword arguments each callback is offered, what each callback's result
does (go on, stop, change the arguments of the next), and what the call returns. The
`HookRunner`'s sync and async drivers run the callbacks; the chain is the same for both.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, Generic, Protocol, TypeVar

import attrs

from ._invoke import Failure

__all__ = ["Chain", "Collect", "Context", "FirstText", "Gate", "Notify", "ToolDecision"]

log = logging.getLogger("hermes_core.hooks")
R = TypeVar("R")


class Callback(Protocol):
    """What a chain knows of the callback whose result it takes: how to name it."""

    @property
    def label(self) -> str: ...


class Chain(Generic[R]):
    """One hook call's policy. `take(cb, result)` is called with each callback's result (a
    `Failure` when it raised or timed out) and says whether to go on; `result` is the call's."""

    __slots__ = ("kwargs",)

    def __init__(self, kwargs: Mapping[str, Any]) -> None:
        self.kwargs = kwargs

    def arguments(self) -> Mapping[str, Any]:
        """The keyword arguments offered to the next callback."""
        return self.kwargs

    def take(self, cb: Callback, result: Any) -> bool:
        raise NotImplementedError

    @property
    def result(self) -> R:
        raise NotImplementedError


class Notify(Chain[None]):
    """Every callback runs; results are ignored (`on_session_start`, `post_tool_call`, ...)."""

    __slots__ = ()

    def take(self, cb: Callback, result: Any) -> bool:
        return True

    @property
    def result(self) -> None:
        return None


class Collect(Chain[list[Any]]):
    """Every callback runs; the non-None results are kept in order (`HookRunner.fire`)."""

    __slots__ = ("_results",)

    def __init__(self, kwargs: Mapping[str, Any]) -> None:
        super().__init__(kwargs)
        self._results: list[Any] = []

    def take(self, cb: Callback, result: Any) -> bool:
        if result is not None and not isinstance(result, Failure):
            self._results.append(result)
        return True

    @property
    def result(self) -> list[Any]:
        return self._results


class Context(Chain["str | None"]):
    """`pre_llm_call`: the texts (or `{"context": text}`) callbacks return, joined; None for none."""

    __slots__ = ("_parts",)

    def __init__(self, kwargs: Mapping[str, Any]) -> None:
        super().__init__(kwargs)
        self._parts: list[str] = []

    def take(self, cb: Callback, result: Any) -> bool:
        if isinstance(result, Mapping):
            result = result.get("context")
        if isinstance(result, str) and result.strip():
            self._parts.append(result.strip())
        return True

    @property
    def result(self) -> str | None:
        return "\n\n".join(self._parts) or None


class FirstText(Chain["str | None"]):
    """`transform_*`: the first string a callback returns wins and ends the chain."""

    __slots__ = ("_found",)

    def __init__(self, kwargs: Mapping[str, Any]) -> None:
        super().__init__(kwargs)
        self._found: str | None = None

    def take(self, cb: Callback, result: Any) -> bool:
        if isinstance(result, str):
            self._found = result
            return False
        return True

    @property
    def result(self) -> str | None:
        return self._found


@attrs.frozen
class ToolDecision:
    """What the `pre_tool_call` callbacks decided: run with `args`, or block with `message`."""

    blocked: bool
    args: Mapping[str, Any]
    message: str = ""


class Gate(Chain[ToolDecision]):
    """`pre_tool_call`: each callback sees the arguments as modified so far; a block ends the
    chain. Fails closed: a callback that raises, times out or answers nonsense blocks."""

    __slots__ = ("_tool_name", "_decision")

    def __init__(self, tool_name: str, args: Mapping[str, Any], kwargs: Mapping[str, Any]) -> None:
        super().__init__(kwargs)
        self._tool_name = tool_name
        self._decision = ToolDecision(False, dict(args))

    def arguments(self) -> Mapping[str, Any]:
        return {"tool_name": self._tool_name, "args": dict(self._decision.args), **self.kwargs}

    def take(self, cb: Callback, result: Any) -> bool:
        self._decision = self._decide(cb, dict(self._decision.args), result)
        return not self._decision.blocked

    @property
    def result(self) -> ToolDecision:
        return self._decision

    def _decide(self, cb: Callback, args: dict[str, Any], result: Any) -> ToolDecision:
        name = self._tool_name
        if isinstance(result, Failure):
            return ToolDecision(True, args, f"Tool call {name!r} blocked: the {cb.label} {result.describe()} "
                                            "(hooks fail closed)")
        if result is None:
            return ToolDecision(False, args)
        action = result.get("action") if isinstance(result, Mapping) else None
        if action == "block":
            message = result.get("message") or f"Tool call {name!r} blocked by the {cb.label}"
            return ToolDecision(True, args, str(message))
        if action == "modify" and isinstance(result.get("args"), Mapping):
            return ToolDecision(False, dict(result["args"]))
        if action == "allow":
            return ToolDecision(False, args)
        log.error("%s returned an invalid decision %r; blocking (hooks fail closed)", cb.label, result)
        return ToolDecision(
            True, args,
            f"Tool call {name!r} blocked: the {cb.label} returned an invalid decision "
            "(expected None, {'action': 'block', 'message': ...} or {'action': 'modify', 'args': {...}})",
        )
