"""`MemoryProvider`: the base class of the `memory` slot's engines (SPEC §9).

Imports only `abc` and `typing` up front: the slot declarations (read on the listing path) name
this class.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any

__all__ = ["MemoryProvider"]


class MemoryProvider(ABC):
    """Long-term memory for an agent: what it offers the model (tools, a system prompt block)
    and what the host tells it around each turn.

    One provider is active at a time, chosen by `memory.provider` (`builtin` by default).
    The host creates one instance per agent session and calls, in order:
    `is_available()`, `initialize(session_id, hermes_home=..., **kwargs)`, then per turn
    `prefetch(query)` before and `sync_turn(user, assistant)` after, and at the end
    `on_session_end(messages)` and `shutdown()`.

    >>> class Notes(MemoryProvider):
    ...     name = "notes"
    ...     def is_available(self): return True
    ...     def initialize(self, session_id, **kwargs): self.notes = []
    ...     def get_tool_schemas(self): return []
    """

    @property
    @abstractmethod
    def name(self) -> str:
        """The name `memory.provider` selects this provider by."""

    @abstractmethod
    def is_available(self) -> bool:
        """Whether this provider can run here (installed, configured). Must not touch the network."""

    @abstractmethod
    def initialize(self, session_id: str, **kwargs: Any) -> None:
        """Prepare for one agent session. `kwargs` include `hermes_home` (a path string)."""

    @abstractmethod
    def get_tool_schemas(self) -> list[dict[str, Any]]:
        """The OpenAI function objects of the tools this provider offers (may be empty)."""

    def system_prompt_block(self) -> str:
        """Text for the system prompt (what is remembered, how to use the tools); "" for none."""
        return ""

    def prefetch(self, query: str, *, session_id: str = "") -> str:
        """Memories relevant to `query`, as text to add to this turn's context; "" for none."""
        return ""

    def sync_turn(self, user_content: str, assistant_content: str, *, session_id: str = "") -> None:
        """Called after each completed turn, to store what should be kept."""

    def handle_tool_call(self, name: str, args: dict[str, Any], **kwargs: Any) -> str:
        """Answer a call of one of this provider's tools with a JSON string."""
        import json

        return json.dumps({"error": f"memory provider {self.name!r} has no tool {name!r}"})

    def on_session_end(self, messages: Sequence[dict[str, Any]]) -> None:
        """The session is over; `messages` is its final message list."""

    def on_pre_compress(self, messages: Sequence[dict[str, Any]]) -> str:
        """The context is about to be compressed; return text worth keeping from `messages`."""
        return ""

    def shutdown(self) -> None:
        """Release what the provider holds (connections, files). Called once per session."""
