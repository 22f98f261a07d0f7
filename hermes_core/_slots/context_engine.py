"""`ContextEngine`: the base class of the `context_engine` slot's engines (SPEC §8).

It has Hermes' `agent.context_engine.ContextEngine` members, with Hermes' names, signatures
and defaults, so an engine written for Hermes runs here unchanged. Imports only `abc` and
`typing` up front: the slot declarations (read on the listing path) name this class.
"""

from __future__ import annotations

import functools

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .._messages import Message, Messages

__all__ = ["ContextCompressionCandidate", "ContextEngine", "accepted_kwargs", "automatic_compaction_status_message", "compress_kwargs",
           "resolve_model_threshold"]


@dataclass
class ContextCompressionCandidate:
    """A compression an engine prepared in the background (Hermes' `agent.context_engine` name):
    `messages` stand for the first `base_message_count` messages of the window it was prepared
    from (None: all of them), whose digest is `base_digest` ("" until the host fills it in)."""

    messages: list[dict[str, Any]]
    base_message_count: int | None = None
    base_digest: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)


class ContextEngine(ABC):
    """Decides when a conversation is too long for the model and makes it shorter.

    One engine is active at a time, chosen by `context.engine` (`compressor` by default).
    The host creates one instance per agent session and calls `on_session_start`,
    `update_model`, then after every LLM call `update_from_response(usage)`, before every
    request `should_compress(prompt_tokens)` and, when it says so, `compress(messages)`,
    after every turn `on_turn_complete`, and at the end `on_session_end`. docs/engines.md
    lists every member and when the reference host calls it.

    The counters and the compaction parameters are class attributes, so a subclass that never
    calls `super().__init__()` still has them. `threshold_percent` (0.75), `protect_first_n`
    (3, after the system prompt) and `protect_last_n` (6) are Hermes' defaults for any engine;
    the built-in `compressor` sets its own from `compression.*` (0.50, 3, 20).

    >>> class Truncate(ContextEngine):
    ...     name = "truncate"
    ...     def update_from_response(self, usage): self.last_prompt_tokens = usage.get("prompt_tokens", 0)
    ...     def should_compress(self, prompt_tokens=None): return False
    ...     def compress(self, messages, current_tokens=None, focus_topic=None): return messages
    """

    last_prompt_tokens: int = 0
    last_completion_tokens: int = 0
    last_total_tokens: int = 0
    threshold_tokens: int = 0
    context_length: int = 0
    compression_count: int = 0
    threshold_percent: float = 0.75  # of the context window, used by the default `update_model`
    protect_first_n: int = 3  # messages kept at the start, after the system prompt
    protect_last_n: int = 6  # messages kept at the end
    emit_automatic_compaction_status: bool = True  # False: automatic compactions pass without a note

    @property
    @abstractmethod
    def name(self) -> str:
        """The name `context.engine` selects this engine by."""

    @abstractmethod
    def update_from_response(self, usage: Mapping[str, Any]) -> None:
        """Called after every LLM call with its `usage`; update the `last_*_tokens` counters."""

    @abstractmethod
    def should_compress(self, prompt_tokens: int | None = None) -> bool:
        """Whether the next request should be compressed first (`prompt_tokens`, or the last seen)."""

    def should_compress_info(self, prompt_tokens: int | None = None) -> tuple[bool, str | None]:
        """`(should_compress, reason)`: an engine that holds compression back (a cooldown, a guard
        against thrashing) says why, so the host can tell rather than skip silently."""
        return self.should_compress(prompt_tokens), None

    @abstractmethod
    def compress(
        self, messages: Messages, current_tokens: int | None = None, focus_topic: str | None = None,
        force: bool = False, memory_context: str = "",
    ) -> Messages:
        """A shorter, valid OpenAI-format message list standing for `messages`.

        `focus_topic` (from a manual `/compress <topic>`) says what to keep in most detail;
        `force` (a manual `/compress`) asks to bypass an engine's own cooldown; `memory_context`
        is what the memory provider wants kept. The host passes only the keyword arguments the
        engine's signature accepts, so an older signature keeps working.
        """

    def prune_tool_results_only(
        self, messages: Messages, current_tokens: int | None = None
    ) -> tuple[Messages, int]:
        """Shrink old tool results without an LLM call: `(messages, how many were pruned)`.
        The host calls it after tool results arrive, independent of `should_compress`."""
        return messages, 0

    def select_context(
        self, request_messages: Messages, *, conversation_messages: Messages | None = None,
        incoming_message: Message | None = None, budget_tokens: int = 0,
    ) -> Messages | None:
        """Replace the messages of this one request (retrieval, topic routing), or None to leave
        them. The stored conversation is not changed; `budget_tokens` is the context length."""
        return None

    def on_turn_complete(
        self, messages: Messages, usage: Mapping[str, Any] | None = None, **kwargs: Any
    ) -> None:
        """A turn ended (best effort): `messages` is a copy of the window, `usage` the last LLM
        call's (None when none was made); `kwargs` may include `api_call_count`,
        `interrupted`, `turn_exit_reason`."""
        return None

    def should_compress_preflight(self, messages: Sequence[Message]) -> bool:
        """A cheap check before a request, from the messages alone (False by default)."""
        return False

    def pending_compression_operation(self, messages: Messages) -> str | None:
        """`"sanitize"` when the next automatic `compress(messages)` is sure to only tidy the
        list; None (any other value) means an ordinary compression."""
        return None

    def should_defer_preflight_to_real_usage(self, rough_tokens: int) -> bool:
        """True when the preflight check should trust the last real token count over the rough
        estimate `rough_tokens` (so a compressed conversation is not compressed again at once)."""
        return False

    def get_automatic_compaction_status_message(
        self, *, phase: str, default_message: str, **context: Any
    ) -> str | None:
        """What the user is told after an automatic compaction (`phase` is `"preflight"` or
        `"compress"`), or None to say nothing. Manual `/compress` is not governed by this."""
        return default_message if self.emit_automatic_compaction_status else None

    def should_prepare_async_compression(self, prompt_tokens: int | None = None,
                                         messages: Messages | None = None) -> bool:
        """After a turn: whether the host should prepare a compression in the background (False:
        never, the default, which costs the host nothing)."""
        return False

    def prepare_async_compression(self, messages: Messages, current_tokens: int | None = None,
                                  focus_topic: str | None = None) -> Any:
        """In a thread of the host's, for a copy of the window: a `ContextCompressionCandidate`
        (or a plain message list standing for all of `messages`); None prepares nothing."""
        return None

    def on_async_compression_applied(self, candidate: Any, **kwargs: Any) -> None:
        """A prepared candidate replaced the messages it stands for, before a request."""

    def on_async_compression_discarded(self, candidate: Any, reason: str, **kwargs: Any) -> None:
        """A prepared candidate was dropped: `stale_digest` (the conversation moved on),
        `invalid_messages`, `superseded`, `session_reset` or `session_closed`."""

    def has_content_to_compress(self, messages: Messages) -> bool:
        """False when a manual `/compress` has nothing to do (all of it protected): the host
        then says so without calling `compress`."""
        return True

    def on_session_start(self, session_id: str, **kwargs: Any) -> None:
        """A conversation starts; `kwargs` include `hermes_home`, `model`, `context_length`, `platform`."""

    def on_session_end(self, session_id: str, messages: Sequence[Message]) -> None:
        """The conversation ended (exit, `/reset`, expiry) with these messages."""

    def on_session_reset(self) -> None:
        """Forget this session's per-conversation state: zero the counters."""
        self.last_prompt_tokens = self.last_completion_tokens = self.last_total_tokens = 0
        self.compression_count = 0

    def update_model(
        self, model: str, context_length: int, base_url: str = "", api_key: str = "", provider: str = "",
        api_mode: str = "",
    ) -> None:
        """The model (and so the context window) changed: recompute `threshold_tokens`.

        With `model_thresholds` set on the engine (`{"model substring": percent}`, or
        `"provider:substring"`), the longest match decides the percent for this model; the
        percent configured before the first switch is the fallback."""
        self.context_length = int(context_length)
        thresholds = getattr(self, "model_thresholds", None)
        if thresholds:
            if getattr(self, "_config_threshold_percent", None) is None:
                self._config_threshold_percent = self.threshold_percent
            self.threshold_percent = resolve_model_threshold(
                model, thresholds, float(self._config_threshold_percent), provider)
        self.threshold_tokens = int(self.context_length * self.threshold_percent)

    def get_tool_schemas(self) -> list[dict[str, Any]]:
        """The OpenAI function objects of tools this engine offers the model (none by default)."""
        return []

    def handle_tool_call(self, name: str, args: dict[str, Any], **kwargs: Any) -> str:
        """Answer a call of one of this engine's tools with a JSON string (`kwargs` may include `messages`)."""
        import json

        return json.dumps({"error": f"context engine {self.name!r} has no tool {name!r}"})

    def cache_plan(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], **kwargs: Any) -> Any:
        """Hermes' optional prompt-cache plan: where an engine wants the request's cache
        breakpoints. The default, None, leaves the placement to the host; hermes-core places
        no cache breakpoints and does not call it."""
        return None

    def get_status(self) -> dict[str, Any]:
        """Token counts and the threshold, for display; `usage_percent` is within 0..100."""
        last_prompt = max(self.last_prompt_tokens, 0)  # -1 means "compressed, no usage seen yet"
        limit = self.context_length or 0
        percent = 100.0 * last_prompt / limit if limit > 0 else 0.0
        return {
            "engine": self.name,
            "last_prompt_tokens": last_prompt,
            "last_completion_tokens": self.last_completion_tokens,
            "last_total_tokens": self.last_total_tokens,
            "threshold_tokens": self.threshold_tokens,
            "context_length": self.context_length,
            "compression_count": self.compression_count,
            "usage_percent": round(min(max(percent, 0.0), 100.0), 1),
        }


def resolve_model_threshold(model: str, thresholds: Mapping[str, Any], default: float, provider: str = "") -> float:
    """The threshold percent for `model`: the value of the longest key of `thresholds` found in
    the model name (a `"provider:substring"` key counts only on that provider, and beats a bare
    key of the same substring), else `default`."""
    model_name, provider_name = (model or "").lower(), (provider or "").lower()
    best: tuple[int, int, float] | None = None
    for key, value in thresholds.items():
        text = str(key).lower()
        scope, _, substring = text.partition(":")
        if not (substring and scope == provider_name and substring in model_name):
            scope, substring = "", text  # a bare key (a model name may hold a colon too)
        if not substring or substring not in model_name:
            continue
        try:
            percent = float(value)
        except (TypeError, ValueError):
            continue
        rank = (len(substring), 1 if scope else 0, percent)
        if best is None or rank[:2] > best[:2]:
            best = rank
    return best[2] if best is not None else default


def automatic_compaction_status_message(
    engine: Any, *, phase: str, default_message: str, **context: Any
) -> str | None:
    """What to show the user after an automatic compaction by `engine`: None when the engine
    keeps quiet (`emit_automatic_compaction_status = False`, or its
    `get_automatic_compaction_status_message` returns None or blank)."""
    if not getattr(engine, "emit_automatic_compaction_status", True):
        return None
    formatter = getattr(engine, "get_automatic_compaction_status_message", None)
    message = formatter(phase=phase, default_message=default_message, **context) if callable(formatter) \
        else default_message
    return (str(message).strip() or None) if message is not None else None


def accepted_kwargs(function: Any, offered: Mapping[str, Any]) -> dict[str, Any]:
    """The keyword arguments of `offered` that `function` accepts (all of them when it takes
    `**kwargs`; none when its signature cannot be read), so that plugin code written for an
    older signature keeps working. A function's signature is read once (a session calls the
    same engine methods every turn)."""
    underlying = getattr(function, "__func__", function)  # a bound method: its function's signature
    try:
        names = _keywords(underlying)
    except TypeError:  # unhashable: read it each time
        names = _keywords.__wrapped__(underlying)
    if names is None:
        return dict(offered)
    return {k: v for k, v in offered.items() if k in names}


@functools.lru_cache(maxsize=1024)
def _keywords(function: Any) -> frozenset[str] | None:
    """The keyword names `function` takes (None: any, it has `**kwargs`; none when unreadable)."""
    import inspect

    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return frozenset()
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        return None
    return frozenset(p.name for p in parameters if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY))


def compress_kwargs(engine: Any, offered: Mapping[str, Any]) -> dict[str, Any]:
    """The keyword arguments of `offered` that `engine.compress` accepts."""
    return accepted_kwargs(engine.compress, offered)
