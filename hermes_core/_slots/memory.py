"""`MemoryProvider`: the base class of the `memory` slot's engines (SPEC §9).

It has Hermes' `agent.memory_provider.MemoryProvider` members, with Hermes' names, signatures
and defaults, so a provider written for Hermes runs here unchanged. Imports only `abc` and
`typing` up front: the slot declarations (read on the listing path) name this class.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .._messages import Message, Messages
    from .recall import RecallStatus

__all__ = ["MemoryProvider"]


class MemoryProvider(ABC):
    """Long-term memory for an agent: what it offers the model (tools, a system prompt block)
    and what the host tells it around each turn.

    One provider is active at a time, chosen by `memory.provider` (`builtin` by default).
    The host creates one instance per agent session and calls, in order:
    `is_available()`, `initialize(session_id, hermes_home=..., **kwargs)`, then per turn
    `on_turn_start(turn, message)`, `prefetch(query)` and `recall_status()` before and
    `sync_turn(user, assistant, messages=...)` and `queue_prefetch(query)` after, and at the
    end `on_session_end(messages)` and `shutdown()`. docs/engines.md lists every member and
    when the reference host calls it.

    >>> class Notes(MemoryProvider):
    ...     name = "notes"
    ...     def is_available(self): return True
    ...     def initialize(self, session_id, **kwargs): self.notes = []
    ...     def get_tool_schemas(self): return []
    """

    # 1: `on_pre_compress` is best effort. 2 opts into a host that requires a checkpoint
    # before it compresses (the reference host does not).
    pre_compress_checkpoint_api_version: int = 1

    @property
    @abstractmethod
    def name(self) -> str:
        """The name `memory.provider` selects this provider by."""

    @abstractmethod
    def is_available(self) -> bool:
        """Whether this provider can run here (installed, configured). Must not touch the network."""

    @abstractmethod
    def initialize(self, session_id: str, **kwargs: Any) -> None:
        """Prepare for one agent session. `kwargs` include `hermes_home` (a path string) and
        `platform` (`"cli"` in the reference host), and `user_id` when the host serves several
        people (an API caller, a gateway sender): keep each one's memories apart by it."""

    def initialize_for_inspection(self, session_id: str, **kwargs: Any) -> None:
        """Prepare only what `system_prompt_block()` and `get_tool_schemas()` need, for a host
        that inspects rather than converses (no network, no workers). By default: `initialize`."""
        self.initialize(session_id=session_id, **kwargs)

    def unavailable_reason(self) -> str:
        """Why `is_available()` is False, as a hint for the user (what to install or set); "" for none."""
        return ""

    @abstractmethod
    def get_tool_schemas(self) -> list[dict[str, Any]]:
        """The OpenAI function objects of the tools this provider offers (may be empty)."""

    def system_prompt_block(self) -> str:
        """Text for the system prompt (what is remembered, how to use the tools); "" for none."""
        return ""

    def prefetch(self, query: str, *, session_id: str = "") -> str:
        """Memories relevant to `query`, as text to add to this turn's context; "" for none.
        Be quick: return what a `queue_prefetch` gathered in the background."""
        return ""

    def queue_prefetch(self, query: str, *, session_id: str = "") -> None:
        """A turn is over: start recalling for the next one (its result is for the next `prefetch`)."""

    def recall_status(self) -> RecallStatus | None:
        """What the last `prefetch` injected, for a status line ("🧠 notes — recalled 3
        memories"); None when it injected nothing or wants no line."""
        return None

    def sync_turn(
        self, user_content: str, assistant_content: str, *, session_id: str = "",
        messages: Messages | None = None, turn_author: dict[str, Any] | None = None,
    ) -> None:
        """Called after each completed turn, to store what should be kept. `messages` is the
        conversation as of that turn (tool calls and results included); `turn_author` who wrote
        the user's message (`{"id", "name", "is_bot"}`) where the host knows. Keep it quick."""

    def handle_tool_call(self, tool_name: str, args: dict[str, Any], **kwargs: Any) -> str:
        """Answer a call of one of this provider's tools with a JSON string."""
        import json

        return json.dumps({"error": f"memory provider {self.name!r} has no tool {tool_name!r}"})

    def identity_signature(self) -> dict[str, Any]:
        """What makes this provider's view of a user differ (an account, a workspace): a host
        keeping agents between messages starts a new one when it changes. Called without
        `initialize`; {} for nothing."""
        return {}

    def cache_busting_signature(self) -> dict[str, Any] | None:
        """The older name of `identity_signature`: None for nothing."""
        return None

    def shutdown(self) -> None:
        """Release what the provider holds (connections, files). Called once per session."""

    def on_turn_start(self, turn_number: int, message: str, **kwargs: Any) -> None:
        """A turn starts with the user's `message`; `kwargs` may include `model`, `platform`, `tool_count`."""

    def on_session_end(self, messages: Sequence[Message]) -> None:
        """The session is over; `messages` is its final message list."""

    def on_session_switch(
        self, new_session_id: str, *, parent_session_id: str = "", reset: bool = False, rewound: bool = False,
        **kwargs: Any,
    ) -> None:
        """The conversation continues under `new_session_id` without a new provider: a resume,
        a branch, a `/reset` (`reset=True`: a new conversation; flush per-conversation buffers),
        or the same id with a shortened transcript (`rewound=True`)."""

    def on_pre_compress(self, messages: Sequence[Message]) -> str:
        """The context is about to be compressed; return text worth keeping from `messages`."""
        return ""

    def on_delegation(self, task: str, result: str, *, child_session_id: str = "", **kwargs: Any) -> None:
        """A subagent finished `task` with `result` (called on the parent's provider)."""

    def get_config_schema(self) -> list[dict[str, Any]]:
        """The settings this provider needs, for a setup wizard: dicts with `key`,
        `description`, and optionally `secret`, `required`, `default`, `choices`, `env_var`, ..."""
        return []

    def save_config(self, values: dict[str, Any], hermes_home: str) -> None:
        """Write the non-secret settings a setup wizard collected where the provider reads them."""

    def on_memory_write(
        self, action: str, target: str, content: str, metadata: dict[str, Any] | None = None
    ) -> None:
        """The host's own memory tool wrote an entry (`action`: add, replace, remove); mirror it."""

    def backup_paths(self) -> list[str]:
        """Absolute paths outside `$HERMES_HOME` where this provider keeps data, for a backup.
        Callable without `initialize` and without network."""
        return []
