"""How the callbacks of one hook call combine: each hook's policy, written once.

A chain says which keyword arguments each callback is offered, what each callback's result
does (go on, stop, change the arguments of the next), and what the call returns. The
`HookRunner`'s sync and async drivers run the callbacks; the chain is the same for both.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any, Generic, Protocol, TypeVar

import attrs

from .._runtime.invoke import Failure

__all__ = [
    "FAILOVER_REASONS", "Chain", "Classification", "Collect", "Context", "FirstDirective", "FirstText", "Gate",
    "LastFields", "Notify", "SpeechDecision", "SpeechGate", "ToolDecision",
]

log = logging.getLogger("hermes_core.hooks")
R = TypeVar("R")


class Callback(Protocol):
    """What a chain knows of the callback whose result it takes: how to name it."""

    @property
    def name(self) -> str: ...

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

    @property
    def blocked(self) -> bool:
        """Whether a block ended the call (the result that stopped it said no), rather than an
        answer (`FirstText`'s string): what a trace line calls `blocked`."""
        return False


class Notify(Chain[None]):
    """Every callback runs; results are ignored (`on_session_start`, `post_tool_call`, ...)."""

    __slots__ = ()

    def take(self, cb: Callback, result: Any) -> bool:
        return True

    @property
    def result(self) -> None:
        return None


class Collect(Chain[list[Any]]):
    """Every callback runs; the non-None results are kept in order (Hermes' `invoke_hook`)."""

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
    """`transform_*`: the first string a callback returns wins and ends the chain. With
    `empty=False` (`transform_llm_output`, as Hermes does) an empty string does not count."""

    __slots__ = ("_found", "_empty")

    def __init__(self, kwargs: Mapping[str, Any], *, empty: bool = True) -> None:
        super().__init__(kwargs)
        self._found: str | None = None
        self._empty = empty

    def take(self, cb: Callback, result: Any) -> bool:
        if isinstance(result, str) and (result or self._empty):
            self._found = result
            return False
        return True

    @property
    def result(self) -> str | None:
        return self._found


@attrs.frozen
class ToolDecision:
    """What the `pre_tool_call` callbacks decided: run with `args`, or block with `message`. A
    call a callback put to a human (`approve`) is blocked unless the host's approver lets it run:
    `asks` is that callback's reason, `rule_key` its rule."""

    blocked: bool
    args: Mapping[str, Any]
    message: str = ""
    asks: str | None = None
    rule_key: str = ""


class Gate(Chain[ToolDecision]):
    """`pre_tool_call`: each callback sees the arguments as modified so far; a block ends the
    chain, and wins over an earlier request for approval (block > approve > none, whatever the
    order, as in Hermes). Fails closed: a callback that raises (with Hermes' message), times out
    or answers nonsense blocks."""

    __slots__ = ("_tool_name", "_decision", "_approval")

    def __init__(self, tool_name: str, args: Mapping[str, Any], kwargs: Mapping[str, Any]) -> None:
        super().__init__(kwargs)
        self._tool_name = tool_name
        self._decision = ToolDecision(False, dict(args))
        self._approval: ToolDecision | None = None  # an `approve` seen: refused at the end unless a block comes

    def arguments(self) -> Mapping[str, Any]:
        return {"tool_name": self._tool_name, "args": dict(self._decision.args), **self.kwargs}

    def take(self, cb: Callback, result: Any) -> bool:
        args = dict(self._decision.args)
        if isinstance(result, Mapping) and result.get("action") == "approve":
            self._approval = self._approval or self._decide(cb, args, result)
            return True
        self._decision = self._decide(cb, args, result)
        return not self._decision.blocked

    @property
    def result(self) -> ToolDecision:
        return self._decision if self._decision.blocked or self._approval is None else self._approval

    @property
    def blocked(self) -> bool:
        return self._decision.blocked

    def _decide(self, cb: Callback, args: dict[str, Any], result: Any) -> ToolDecision:
        name = self._tool_name
        if isinstance(result, Failure) and not result.timed_out:
            error = result.error
            return ToolDecision(True, args, f"pre_tool_call plugin callback {cb.name} raised "
                                            f"{type(error).__name__}: {str(error)[:200]}")
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
            return ToolDecision(False, {**args, **result["args"]})  # merged in, as Hermes does
        if action == "allow":
            return ToolDecision(False, args)
        if action == "approve":  # Hermes' escalation to a human: blocked unless the host's approver says yes
            asked = str(result.get("message") or "it asked for approval")
            rule = result.get("rule_key")
            return ToolDecision(True, args, f"Tool call {name!r} blocked: the {cb.label} requires a human's "
                                            f"approval ({asked}), and no one here can give it", asks=asked,
                                rule_key=rule if isinstance(rule, str) else "")
        log.error("%s returned an invalid decision %r; blocking (hooks fail closed)", cb.label, result)
        return ToolDecision(
            True, args,
            f"Tool call {name!r} blocked: the {cb.label} returned an invalid decision "
            "(expected None, {'action': 'block', 'message': ...} or {'action': 'modify', 'args': {...}})",
        )


class FirstDirective(Chain["dict[str, Any] | None"]):
    """The first dict result that `recognised` accepts wins and ends the chain; others are
    passed over (`pre_gateway_dispatch`, `pre_verify`, `pre_response_delivery`)."""

    __slots__ = ("_recognised", "_found")

    def __init__(self, kwargs: Mapping[str, Any], recognised: Callable[[Mapping[str, Any]], bool]) -> None:
        super().__init__(kwargs)
        self._recognised = recognised
        self._found: dict[str, Any] | None = None

    def take(self, cb: Callback, result: Any) -> bool:
        if isinstance(result, Mapping) and self._recognised(result):
            self._found = dict(result)
            return False
        return True

    @property
    def result(self) -> dict[str, Any] | None:
        return self._found

    @property
    def blocked(self) -> bool:
        return self._found is not None and "block" in (self._found.get("action"), self._found.get("decision"))


# Hermes' `FailoverReason` values: what `transform_api_error_classification` may answer.
FAILOVER_REASONS = frozenset({
    "auth", "auth_permanent", "billing", "rate_limit", "overloaded", "server_error", "timeout",
    "context_overflow", "payload_too_large", "image_too_large", "model_not_found", "provider_policy_blocked",
    "content_policy_blocked", "format_error", "invalid_encrypted_content", "multimodal_tool_content_unsupported",
    "thinking_signature", "long_context_tier", "oauth_long_context_beta_forbidden", "llama_cpp_grammar_pattern",
    "provider_unavailable", "unknown",
})
_CLASSIFICATION_FLAGS = ("retryable", "should_compress", "should_rotate_credential", "should_fallback")


class Classification(Chain["dict[str, Any] | None"]):
    """`transform_api_error_classification`: every callback runs; the first dict with a valid
    `reason` wins (normalised: flags as bools, `message` cut to 500 characters); a later
    valid answer is logged and ignored."""

    __slots__ = ("_found", "_by")

    def __init__(self, kwargs: Mapping[str, Any]) -> None:
        super().__init__(kwargs)
        self._found: dict[str, Any] | None = None
        self._by = ""

    def take(self, cb: Callback, result: Any) -> bool:
        if not isinstance(result, Mapping):
            return True
        reason = result.get("reason")
        reason = getattr(reason, "value", reason)
        if not isinstance(reason, str) or reason not in FAILOVER_REASONS:
            log.warning("%s returned no valid reason (one of %s); ignored", cb.label, ", ".join(sorted(FAILOVER_REASONS)))
            return True
        if self._found is not None:
            log.warning("%s also classified the error (as %r); the %s came first", cb.label, reason, self._by)
            return True
        found: dict[str, Any] = {"reason": reason}
        found.update({flag: bool(result[flag]) for flag in _CLASSIFICATION_FLAGS if flag in result})
        if isinstance(result.get("message"), str):
            found["message"] = result["message"][:500]
        if isinstance(result.get("error_context"), Mapping):
            found["error_context"] = dict(result["error_context"])
        self._found, self._by = found, cb.label
        return True

    @property
    def result(self) -> dict[str, Any] | None:
        return self._found


class LastFields(Chain["dict[str, str]"]):
    """`pre_transcription`: string values of `fields` in dict results, applied in order (the
    last callback to set a field wins)."""

    __slots__ = ("_fields", "_found")

    def __init__(self, kwargs: Mapping[str, Any], fields: tuple[str, ...]) -> None:
        super().__init__(kwargs)
        self._fields = fields
        self._found: dict[str, str] = {}

    def take(self, cb: Callback, result: Any) -> bool:
        if isinstance(result, Mapping):
            self._found.update({k: v for k, v in result.items() if k in self._fields and isinstance(v, str)})
        return True

    @property
    def result(self) -> dict[str, str]:
        return self._found


@attrs.frozen
class SpeechDecision:
    """What the `pre_tts_synthesis` callbacks decided: speak `text`, or refuse with `message`."""

    blocked: bool
    text: str
    message: str = ""


class SpeechGate(Chain[SpeechDecision]):
    """`pre_tts_synthesis`: fails closed. Each callback sees the script so far; a block, a
    failure or an answer that is no directive refuses; `{"text": ...}` rewrites it, once (a
    second rewrite refuses)."""

    __slots__ = ("_decision", "_rewritten")

    def __init__(self, kwargs: Mapping[str, Any]) -> None:
        super().__init__(kwargs)
        self._decision = SpeechDecision(False, str(kwargs.get("text", "")))
        self._rewritten = False

    def arguments(self) -> Mapping[str, Any]:
        return {**self.kwargs, "text": self._decision.text}

    def take(self, cb: Callback, result: Any) -> bool:
        text = self._decision.text
        if result is None:
            return True
        if isinstance(result, Failure):
            self._decision = SpeechDecision(True, text, f"speech refused: the {cb.label} {result.describe()}")
        elif isinstance(result, Mapping) and result.get("action") == "block":
            self._decision = SpeechDecision(True, text, str(result.get("message") or f"refused by the {cb.label}"))
        elif isinstance(result, Mapping) and set(result) == {"text"} and isinstance(result["text"], str) \
                and result["text"].strip() and not self._rewritten:
            self._rewritten = True
            self._decision = SpeechDecision(False, result["text"])
        else:
            self._decision = SpeechDecision(True, text, f"speech refused: the {cb.label} returned {result!r} "
                                                        "(expected None, a block or one text rewrite)")
        return not self._decision.blocked

    @property
    def result(self) -> SpeechDecision:
        return self._decision

    @property
    def blocked(self) -> bool:
        return self._decision.blocked
