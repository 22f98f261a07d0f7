"""`AgentSession`: one conversation's engines, and the calls a host loop makes around each turn.

A host opens one per conversation (`manager.open_session()`): it gets its own context
engine and memory provider instances (the ones the config selects), their tools offered
next to the plugins' tools, and one place to call them from. Every call into an engine is
isolated: an engine that raises is logged and noted in `problems`, never raised to the host.

>>> with manager.open_session("s1") as session:
...     system = base_prompt + "\\n\\n" + session.system_prompt_block()
...     context = session.prefetch(user_text)
...     result = session.dispatch_tool("memory_save", {"content": "likes tea"})
...     session.sync_turn(user_text, answer)
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from . import _dispatch
from ._slots import SlotProvider
from ._tools import ToolInfo, ToolRegistry

if TYPE_CHECKING:
    from ._manager import PluginManager

__all__ = ["AgentSession"]

log = logging.getLogger("hermes_core.session")
T = TypeVar("T")


class AgentSession:
    """The engines of one agent conversation: `context_engine` and `memory` (either may be None)."""

    def __init__(self, manager: PluginManager, session_id: str | None = None, **kwargs: Any) -> None:
        self.session_id = session_id or uuid.uuid4().hex
        self.problems: list[str] = []
        self._manager = manager
        self._hooks = manager.hooks
        self._closed = False
        self._tools = ToolRegistry()
        start = {"hermes_home": str(manager.home), **kwargs}
        self.memory_provider: SlotProvider | None = manager.select("memory")
        self.memory: Any = self._start_memory(start)
        self._attach(self.memory, self.memory_provider)

    def __repr__(self) -> str:
        memory = self.memory_provider.name if self.memory is not None and self.memory_provider else None
        return f"<AgentSession {self.session_id!r} memory={memory!r}>"

    def __enter__(self) -> AgentSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- isolation ------------------------------------------------------------------------

    def _guard(self, what: str, call: Callable[[], T], default: T) -> T:
        """Run one call into an engine; if it raises, log it, note it, and return `default`."""
        try:
            return call()
        except Exception as exc:  # noqa: BLE001 - an engine never takes the host down
            problem = f"{what} raised {type(exc).__name__}: {exc}"
            log.warning("session %s: %s", self.session_id, problem, exc_info=True)
            self.problems.append(problem)
            return default

    def _start_memory(self, start: dict[str, Any]) -> Any:
        if self.memory_provider is None:
            return None
        provider = self.memory_provider.new_instance()
        who = f"memory provider {self.memory_provider.name!r}"
        if self._guard(f"{who}.is_available()", provider.is_available, False) is not True:
            self.problems.append(f"{who} is not available here; this session has no memory")
            log.warning("session %s: %s is not available; no memory", self.session_id, who)
            return None
        if self._guard(f"{who}.initialize()", lambda: provider.initialize(self.session_id, **start) or True, False):
            return provider
        self._guard(f"{who}.shutdown()", provider.shutdown, None)
        return None

    def _attach(self, engine: Any, entry: SlotProvider | None) -> None:
        """Offer `engine`'s tools in this session; a name a plugin tool already has is left out."""
        if engine is not None and entry is not None:
            taken = self._manager.tools.get
            self.problems += self._tools.attach(
                engine, entry.plugin_id, f"{entry.slot}:{entry.name}", taken=lambda name: taken(name) is not None
            )

    def _memory_call(self, method: str, default: T, *args: Any, **kwargs: Any) -> T:
        if self.memory is None:
            return default
        name = self.memory_provider.name if self.memory_provider else "?"
        value = self._guard(f"memory provider {name!r}.{method}()", lambda: getattr(self.memory, method)(*args, **kwargs),
                            default)
        return value if isinstance(value, type(default)) or default is None else default

    # -- tools ----------------------------------------------------------------------------

    def tool_infos(self) -> list[ToolInfo]:
        """The plugins' tools and the active engines' tools, with availability."""
        return self._manager.tools.infos() + self._tools.infos()

    def tool_schemas(self) -> list[dict[str, Any]]:
        """The OpenAI `tools` list for a request of this session."""
        return self._manager.tools.schemas() + self._tools.schemas()

    def has_tool(self, name: str) -> bool:
        return self._tools.get(name) is not None or self._manager.tools.get(name) is not None

    def dispatch_tool(self, name: str, args: Any, *, tool_call_id: str = "", **kwargs: Any) -> str:
        """Run a plugin's or an engine's tool with the lifecycle hooks around it; never raises."""
        registry = self._tools if self._tools.get(name) is not None else self._manager.tools
        return _dispatch.dispatch(self._hooks, registry, name, args, self.session_id, tool_call_id, kwargs)

    async def adispatch_tool(self, name: str, args: Any, *, tool_call_id: str = "", **kwargs: Any) -> str:
        """`dispatch_tool` for async hosts."""
        registry = self._tools if self._tools.get(name) is not None else self._manager.tools
        return await _dispatch.adispatch(self._hooks, registry, name, args, self.session_id, tool_call_id, kwargs)

    # -- memory around each turn ----------------------------------------------------------

    def system_prompt_block(self) -> str:
        """The memory provider's block for the system prompt ("" without memory)."""
        return self._memory_call("system_prompt_block", "")

    def prefetch(self, query: str) -> str:
        """Memories relevant to the user's message, to add to this turn's context ("" for none)."""
        return self._memory_call("prefetch", "", query, session_id=self.session_id)

    def sync_turn(self, user_content: str, assistant_content: str) -> None:
        """Tell the memory provider a turn is complete."""
        self._memory_call("sync_turn", None, user_content, assistant_content, session_id=self.session_id)

    def on_pre_compress(self, messages: Sequence[dict[str, Any]]) -> str:
        """What the memory provider wants kept from messages about to be compressed."""
        return self._memory_call("on_pre_compress", "", list(messages))

    # -- the end --------------------------------------------------------------------------

    def close(self, messages: Sequence[dict[str, Any]] = ()) -> None:
        """End the session: the engines' `on_session_end`, then `shutdown`. Idempotent."""
        if self._closed:
            return
        self._closed = True
        self._memory_call("on_session_end", None, list(messages))
        self._memory_call("shutdown", None)
