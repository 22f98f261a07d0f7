"""`ContextEngine`: the base class of the `context_engine` slot's engines (SPEC §8).

Imports only `abc` and `typing` up front: the slot declarations (read on the listing path) name
this class.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["ContextEngine", "compress_kwargs"]


class ContextEngine(ABC):
    """Decides when a conversation is too long for the model and makes it shorter.

    One engine is active at a time, chosen by `context.engine` (`compressor` by default).
    The host creates one instance per agent session and calls `on_session_start`,
    `update_model`, then after every LLM call `update_from_response(usage)`, before every
    request `should_compress(prompt_tokens)` and, when it says so, `compress(messages)`,
    and at the end `on_session_end`.

    The counters are class attributes, so a subclass that never calls `super().__init__()`
    still has them.

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
    threshold_percent: float = 0.50  # of the context window, used by the default `update_model`

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

    @abstractmethod
    def compress(
        self, messages: list[dict[str, Any]], current_tokens: int | None = None, focus_topic: str | None = None
    ) -> list[dict[str, Any]]:
        """A shorter, valid OpenAI-format message list standing for `messages`.

        `focus_topic` (from a manual `/compress <topic>`) says what to keep in most detail.
        """

    def on_session_start(self, session_id: str, **kwargs: Any) -> None:
        """A conversation starts; `kwargs` include `hermes_home`, `model`, `context_length`."""

    def on_session_end(self, session_id: str, messages: Sequence[dict[str, Any]]) -> None:
        """The conversation ended (exit, `/reset`, expiry) with these messages."""

    def on_session_reset(self) -> None:
        """Forget this session's per-conversation state: zero the counters."""
        self.last_prompt_tokens = self.last_completion_tokens = self.last_total_tokens = 0
        self.compression_count = 0

    def update_model(self, model: str, context_length: int, **kwargs: Any) -> None:
        """The model (and so the context window) changed: recompute `threshold_tokens`."""
        self.context_length = int(context_length)
        self.threshold_tokens = int(self.context_length * self.threshold_percent)

    def get_tool_schemas(self) -> list[dict[str, Any]]:
        """The OpenAI function objects of tools this engine offers the model (none by default)."""
        return []

    def handle_tool_call(self, name: str, args: dict[str, Any], **kwargs: Any) -> str:
        """Answer a call of one of this engine's tools with a JSON string."""
        import json

        return json.dumps({"error": f"context engine {self.name!r} has no tool {name!r}"})

    def should_compress_preflight(self, messages: Sequence[dict[str, Any]]) -> bool:
        """A cheap check before a request, from the messages alone (False by default)."""
        return False

    def get_status(self) -> dict[str, Any]:
        """Token counts and the threshold, for display; `usage_percent` is within 0..100."""
        limit = self.context_length or 0
        percent = 100.0 * self.last_prompt_tokens / limit if limit > 0 else 0.0
        return {
            "engine": self.name,
            "last_prompt_tokens": self.last_prompt_tokens,
            "last_completion_tokens": self.last_completion_tokens,
            "last_total_tokens": self.last_total_tokens,
            "threshold_tokens": self.threshold_tokens,
            "context_length": self.context_length,
            "compression_count": self.compression_count,
            "usage_percent": round(min(max(percent, 0.0), 100.0), 1),
        }


def compress_kwargs(engine: Any, offered: Mapping[str, Any]) -> dict[str, Any]:
    """The keyword arguments of `offered` that `engine.compress` accepts (all, with `**kwargs`),
    so engines written for an older signature keep working."""
    import inspect

    try:
        parameters = inspect.signature(engine.compress).parameters.values()
    except (TypeError, ValueError):
        return {}
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        return dict(offered)
    names = {p.name for p in parameters if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    return {k: v for k, v in offered.items() if k in names}
