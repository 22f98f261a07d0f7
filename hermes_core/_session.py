"""`AgentSession`: one conversation's engines, and the calls a host loop makes around each turn.

A host opens one per conversation (`manager.open_session()`): it gets its own context
engine and memory provider instances (the ones the config selects), their tools offered
next to the plugins' tools, and one place to call them from. Every call into an engine is
isolated: an engine that raises is logged and noted in `problems`, never raised to the host.

>>> with manager.open_session("s1", model="gpt-4o", context_length=128_000) as session:
...     system = base_prompt + "\\n\\n" + session.system_prompt_block()
...     context = session.prefetch(user_text)
...     messages = session.before_request(messages)          # compressed when the engine says so
...     reply = call_the_model(messages, tools=session.tool_schemas())
...     session.after_response(reply.usage)
...     result = session.dispatch_tool("memory_save", {"content": "likes tea"}, tool_call_id="c1")
...     session.sync_turn(user_text, answer)
...     session.close(messages)                                # or leave the `with` block
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from . import _dispatch
from ._context_engine import compress_kwargs
from ._messages import estimate_tokens, message_problems, repair_tool_pairing
from ._slots import SlotProvider
from ._tools import ToolInfo, ToolRegistry

if TYPE_CHECKING:
    from ._manager import PluginManager

__all__ = ["AgentSession"]

log = logging.getLogger("hermes_core.session")
T = TypeVar("T")


DEFAULT_CONTEXT_LENGTH = 128_000


class AgentSession:
    """The engines of one agent conversation: `context_engine` and `memory` (either may be None).

    Opening it fires the plugins' `on_session_start` hook and starts the engines; `close()`
    ends them and fires `on_session_end`. Raises `UnknownProviderError` when the config
    names an engine that nothing provides; an engine that cannot be created or started
    leaves the session without it (noted in `problems`).
    """

    def __init__(
        self,
        manager: PluginManager,
        session_id: str | None = None,
        *,
        model: str | None = None,
        context_length: int | None = None,
        platform: str = "cli",
        announce: bool = True,
        **kwargs: Any,
    ) -> None:
        self.session_id = session_id or uuid.uuid4().hex
        self.problems: list[str] = []
        self._manager = manager
        self._hooks = manager.hooks
        self._announce = announce  # fire the plugins' session hooks (not for the manager's default session)
        self._closed = False
        self._tools = ToolRegistry()
        config = manager.config
        self.model = model if model is not None else str(config.get("model.model") or "")
        self.context_length = int(context_length or config.number("model.context_length", DEFAULT_CONTEXT_LENGTH))
        start = {"hermes_home": str(manager.home), "model": self.model, "context_length": self.context_length,
                 "platform": platform, **kwargs}
        self.engine_provider: SlotProvider | None = manager.select("context_engine")
        self.memory_provider: SlotProvider | None = manager.select("memory")
        self.context_engine: Any = self._start_engine(start)
        self.memory: Any = self._start_memory(start)
        self._attach(self.context_engine, self.engine_provider)
        self._attach(self.memory, self.memory_provider)
        if announce:
            self._hooks.fire("on_session_start", session_id=self.session_id, model=self.model, platform=platform)

    def __repr__(self) -> str:
        engine = self.engine_provider.name if self.context_engine is not None and self.engine_provider else None
        memory = self.memory_provider.name if self.memory is not None and self.memory_provider else None
        return f"<AgentSession {self.session_id!r} context_engine={engine!r} memory={memory!r}>"

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

    def _start_engine(self, start: dict[str, Any]) -> Any:
        entry = self.engine_provider
        if entry is None:
            return None
        engine = self._guard(f"creating context engine {entry.name!r}", entry.new_instance, None)
        if engine is None:
            return None
        if self._manager._is_builtin(entry.plugin_id):
            # The host's own summariser and settings go to its built-in engines only; a plugin's
            # engine uses its plugin's gated ctx.llm.
            start = {**start, "config": self._manager.config, "auxiliary": self._manager.auxiliary_llm("compression")}
        who = f"context engine {entry.name!r}"
        if not self._guard(f"{who}.on_session_start()", lambda: engine.on_session_start(self.session_id, **start)
                           or True, False):
            return None
        self._guard(f"{who}.update_model()", lambda: engine.update_model(self.model, self.context_length), None)
        return engine

    def _engine_call(self, method: str, default: T, *args: Any, **kwargs: Any) -> T:
        return self._call(self.context_engine, self.engine_provider, "context engine", method, default, *args,
                          **kwargs)

    def _start_memory(self, start: dict[str, Any]) -> Any:
        if self.memory_provider is None:
            return None
        provider = self._guard(f"creating memory provider {self.memory_provider.name!r}",
                               self.memory_provider.new_instance, None)
        if provider is None:
            return None
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
        return self._call(self.memory, self.memory_provider, "memory provider", method, default, *args, **kwargs)

    def _call(self, engine: Any, entry: SlotProvider | None, kind: str, method: str, default: T, *args: Any,
              **kwargs: Any) -> T:
        """`engine.method(...)`, isolated; `default` without an engine, when it raises, or when it
        returns something of another type than a non-None `default`."""
        if engine is None:
            return default
        name = entry.name if entry else "?"
        value = self._guard(f"{kind} {name!r}.{method}()", lambda: getattr(engine, method)(*args, **kwargs), default)
        return value if default is None or isinstance(value, type(default)) else default

    # -- tools ----------------------------------------------------------------------------

    def tool_infos(self) -> list[ToolInfo]:
        """The plugins' tools and the active engines' tools, with availability."""
        return self._manager.tools.infos() + self._tools.infos()

    def tool_schemas(self) -> list[dict[str, Any]]:
        """The OpenAI `tools` list for a request of this session."""
        return self._manager.tools.schemas() + self._tools.schemas()

    def has_tool(self, name: str) -> bool:
        return self._tools.get(name) is not None or self._manager.tools.get(name) is not None

    def _registry(self, name: str) -> ToolRegistry:
        return self._tools if self._tools.get(name) is not None else self._manager.tools

    def dispatch_tool(self, name: str, args: Any, *, tool_call_id: str = "", **kwargs: Any) -> str:
        """Run a plugin's or an engine's tool with the lifecycle hooks around it; never raises."""
        return _dispatch.dispatch(self._hooks, self._registry(name), name, args, self.session_id, tool_call_id, kwargs)

    async def adispatch_tool(self, name: str, args: Any, *, tool_call_id: str = "", **kwargs: Any) -> str:
        """`dispatch_tool` for async hosts."""
        return await _dispatch.adispatch(self._hooks, self._registry(name), name, args, self.session_id,
                                         tool_call_id, kwargs)

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

    # -- the context engine around each request ---------------------------------------------

    def after_response(self, usage: Any) -> None:
        """After every LLM call: hand its `usage` (a dict, or an object with attributes) to the engine."""
        if usage is not None and not isinstance(usage, dict):
            usage = {k: getattr(usage, k) for k in ("prompt_tokens", "completion_tokens", "total_tokens",
                                                    "input_tokens", "output_tokens") if hasattr(usage, k)}
        self._engine_call("update_from_response", None, usage or {})

    def should_compress(self, messages: Sequence[dict[str, Any]], prompt_tokens: int | None = None) -> bool:
        """Whether the engine wants `messages` compressed before the next request."""
        if self._engine_call("should_compress_preflight", False, list(messages)) is True:
            return True
        return self._engine_call("should_compress", False, prompt_tokens) is True

    def before_request(
        self, messages: list[dict[str, Any]], prompt_tokens: int | None = None
    ) -> list[dict[str, Any]]:
        """Before every request: the messages to send, compressed first when the engine says so."""
        if self.context_engine is None or not self.should_compress(messages, prompt_tokens):
            return messages
        return self.compress(messages, current_tokens=prompt_tokens)

    def compress(
        self, messages: list[dict[str, Any]], *, current_tokens: int | None = None, focus_topic: str | None = None
    ) -> list[dict[str, Any]]:
        """Compress now (a manual `/compress [topic]`, or from `before_request`). Always returns
        a valid list: an engine that raises or returns an invalid one leaves `messages` as they
        were (or repaired, when only the tool pairing was wrong), and says so in `problems`."""
        if self.context_engine is None:
            return messages
        offered = {"current_tokens": current_tokens if current_tokens is not None else estimate_tokens(messages),
                   "focus_topic": focus_topic, "memory_context": self.on_pre_compress(messages) or None}
        kwargs = compress_kwargs(self.context_engine, offered)
        result = self._engine_call("compress", None, list(messages), **kwargs)
        if result is None:
            return messages
        problems = message_problems(result)
        if not problems:
            return result  # type: ignore[no-any-return]
        name = self.engine_provider.name if self.engine_provider else "?"
        repaired = repair_tool_pairing(result) if isinstance(result, list) and all(
            isinstance(m, dict) for m in result) else None
        fixed = repaired is not None and not message_problems(repaired)
        self.problems.append(f"context engine {name!r}.compress() returned an invalid message list "
                             f"({'; '.join(problems[:3])}); {'repaired its tool pairing' if fixed else 'kept the original'}")
        log.warning("session %s: %s", self.session_id, self.problems[-1])
        return repaired if fixed and repaired is not None else messages

    def update_model(self, model: str, context_length: int, **kwargs: Any) -> None:
        """The model changed: the engine recomputes its threshold."""
        self.model, self.context_length = model, int(context_length)
        self._engine_call("update_model", None, model, self.context_length, **kwargs)

    def status(self) -> dict[str, Any]:
        """The engine's token/threshold status (`usage_percent` within 0..100); {} without one."""
        status: Any = self._engine_call("get_status", {})
        return dict(status) if isinstance(status, dict) else {}

    def reset(self) -> None:
        """A `/reset` or `/new`: the engine forgets this conversation's state; plugins hear `on_session_reset`."""
        self._engine_call("on_session_reset", None)
        if self._announce:
            self._hooks.fire("on_session_reset", session_id=self.session_id)

    # -- the end --------------------------------------------------------------------------

    def close(self, messages: Sequence[dict[str, Any]] = ()) -> None:
        """End the session: the engines' `on_session_end`, the memory's `shutdown`, and the
        plugins' `on_session_end` hook. Idempotent."""
        if self._closed:
            return
        self._closed = True
        self._engine_call("on_session_end", None, self.session_id, list(messages))
        self._memory_call("on_session_end", None, list(messages))
        self._memory_call("shutdown", None)
        if self._announce:
            self._hooks.fire("on_session_end", session_id=self.session_id, messages=list(messages))
