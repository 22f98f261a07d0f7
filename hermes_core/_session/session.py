"""`AgentSession`: one conversation's engines, and the calls a host loop makes around each turn.

A host opens one per conversation (`manager.open_session()`): it gets its own context
engine and memory provider instances (the ones the config selects), their tools offered
next to the plugins' tools, and one place to call them from. Every call into an engine is
isolated: an engine that raises is logged and noted in `problems`, never raised to the host.

>>> with manager.open_session("s1", model="gpt-4o", context_length=128_000) as session:
...     system = base_prompt + "\\n\\n" + session.system_prompt_block()
...     session.on_turn_start(turn_number, user_text)
...     context = session.prefetch(user_text)                 # then show session.recall_line()
...     messages = session.before_request(messages)          # pruned/compressed when the engine says so
...     request = session.select_context([system_message, *messages], messages)
...     reply = call_the_model(request, tools=session.tool_schemas())
...     session.after_response(reply.usage)
...     result = session.dispatch_tool("memory_save", {"content": "likes tea"}, tool_call_id="c1")
...     session.sync_turn(user_text, answer, messages=messages)
...     session.queue_prefetch(user_text)
...     session.on_turn_complete(messages)                   # may prepare a compression off the turn
...     session.close(messages)                                # or leave the `with` block
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from .. import config_keys as keys
from .._messages import Message, Messages, estimate_tokens, message_problems
from .._redact import sanitize_memory_context
from .._slots.context_engine import compress_kwargs
from .._slots.recall import is_trivial_prompt
from .._slots.registry import SlotProvider
from .._tools import call as tool_call
from .._tools.call import ToolOutcome
from .._tools.checked import SchemaMemory
from .._tools.registry import ToolRegistry, time_limits
from .._tools.tool import ToolInfo
from .async_compression import AsyncCompression
from .checked import checked_messages
from .engines import EngineCalls, Guard, MemoryCalls, start_kwargs

if TYPE_CHECKING:
    from .._config.config import Config
    from .._hooks.calls import LifecycleHooks
    from .._llm.auxiliary import AuxiliaryLlm
    from .._slots.recall import RecallStatus

__all__ = ["AgentSession", "SessionHost"]

log = logging.getLogger("hermes_core.session")


class SessionHost(Protocol):
    """What a session needs of its host (a `PluginManager`): the config, the plugins' tools,
    the lifecycle hooks, the selected slot providers and the host's summariser."""

    home: Path
    config: Config

    @property
    def tools(self) -> ToolRegistry: ...

    @property
    def lifecycle(self) -> LifecycleHooks: ...

    def select(self, slot: str) -> SlotProvider | None: ...

    def auxiliary_llm(self, task: str) -> AuxiliaryLlm: ...


class AgentSession:
    """The engines of one agent conversation: `context_engine` and `memory` (either may be None).

    Opening it fires the plugins' `on_session_start` hook and starts the engines; `reset()`
    fires `on_session_finalize` (`session_boundary`), `on_session_reset` and `on_session_start`
    again; `close()` ends the engines and fires `on_session_finalize` (`shutdown`). The turn
    hooks (`pre_llm_call`, ..., `on_session_end` once per turn) are the host loop's.

    Raises `UnknownProviderError` when the config names an engine that nothing provides; an
    engine that cannot be created or started leaves the session without it (in `problems`).
    """

    def __init__(
        self,
        manager: SessionHost,
        session_id: str | None = None,
        *,
        model: str | None = None,
        context_length: int | None = None,
        platform: str = "cli",
        announce: bool = True,
        memory: bool = True,
        **kwargs: Any,
    ) -> None:
        self.session_id = session_id or uuid.uuid4().hex
        self.problems: list[str] = []
        self._plugin_tools = manager.tools
        self._hooks = manager.lifecycle
        self._announce = announce  # fire the plugins' session hooks (not for the manager's default session)
        self.platform = platform
        self._closed = False
        self._tools = ToolRegistry(limit=time_limits(manager.config), schemas=SchemaMemory.of(manager.home))
        config = manager.config
        self.model = model if model is not None else config.read(keys.MODEL_MODEL)
        self.context_length = int(context_length or config.read(keys.MODEL_CONTEXT_LENGTH))
        start = start_kwargs(manager.home, {"model": self.model, "context_length": self.context_length,
                                            "platform": platform, **kwargs})
        self.engine_provider: SlotProvider | None = manager.select("context_engine")
        self.memory_provider: SlotProvider | None = manager.select("memory") if memory else None
        guard = self._guard = Guard(self.session_id, self.problems)
        self._last_usage: dict[str, Any] = {}
        self.last_compaction_note = ""
        self._engine: EngineCalls | None = None
        if self.engine_provider is not None:
            # The host's settings (`compression.*`, `lcm.*`) go to its built-in engines only. The
            # host's summariser (`auxiliary.compression`, the operator's choice) goes to the
            # built-in compressor and to a plugin's engine derived from it, as in Hermes.
            host = {"config": config} if self.engine_provider.builtin else {}
            self._engine = EngineCalls.start(self.engine_provider, guard, self.session_id, {**start, **host},
                                             summariser=lambda: manager.auxiliary_llm("compression"))
        self._memory: MemoryCalls | None = None
        if self.memory_provider is not None:
            self._memory = MemoryCalls.start(self.memory_provider, guard, self.session_id, start)
        self._async = AsyncCompression(self._engine, guard.note) if self._engine is not None else None
        self._attach(self._engine.engine if self._engine else None, self.engine_provider)
        self._attach(self._memory.provider if self._memory else None, self.memory_provider)
        if announce:
            self._hooks.on_session_start(session_id=self.session_id, model=self.model, platform=platform).run()

    @property
    def context_engine(self) -> Any:
        """This session's context engine instance (None without one)."""
        return self._engine.engine if self._engine is not None else None

    @property
    def memory(self) -> Any:
        """This session's memory provider instance (None without one)."""
        return self._memory.provider if self._memory is not None else None

    def __repr__(self) -> str:
        engine = self._engine.entry.name if self._engine is not None else None
        memory = self._memory.entry.name if self._memory is not None else None
        return f"<AgentSession {self.session_id!r} context_engine={engine!r} memory={memory!r}>"

    def __enter__(self) -> AgentSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _attach(self, engine: Any, entry: SlotProvider | None) -> None:
        """Offer `engine`'s tools in this session; a name a plugin tool already has is left out."""
        if engine is not None and entry is not None:
            taken = self._plugin_tools.get
            self.problems += self._tools.attach(
                engine, entry.plugin_id, f"{entry.slot}:{entry.name}", taken=lambda name: taken(name) is not None
            )

    # -- tools ----------------------------------------------------------------------------

    def tool_infos(self) -> list[ToolInfo]:
        """The plugins' tools and the active engines' tools, with availability."""
        return self._plugin_tools.infos() + self._tools.infos()

    def tool_schemas(self) -> list[dict[str, Any]]:
        """The OpenAI `tools` list for a request of this session."""
        return self._plugin_tools.schemas() + self._tools.schemas()

    def has_tool(self, name: str) -> bool:
        return self._tools.get(name) is not None or self._plugin_tools.get(name) is not None

    def registry_for(self, name: str) -> ToolRegistry:
        """The registry that answers tool `name` here: the engines' own, else the plugins'."""
        return self._tools if self._tools.get(name) is not None else self._plugin_tools

    def dispatch_tool(
        self, name: str, args: Any, *, tool_call_id: str = "", task_id: str = "", turn_id: str = "",
        api_request_id: str = "", **kwargs: Any,
    ) -> str:
        """Run a plugin's or an engine's tool with the lifecycle hooks around it; never raises.
        `task_id`, `turn_id` and `api_request_id` (the turn and model request that asked for
        the call) go to the hooks; `kwargs` to the handler."""
        return self.run_tool(name, args, tool_call_id=tool_call_id, task_id=task_id, turn_id=turn_id,
                             api_request_id=api_request_id, **kwargs).result

    def run_tool(
        self, name: str, args: Any, *, tool_call_id: str = "", task_id: str = "", turn_id: str = "",
        api_request_id: str = "", **kwargs: Any,
    ) -> ToolOutcome:
        """`dispatch_tool`, telling how the call ended (`status`: ok, error or blocked)."""
        ids = tool_call.ToolCallIds(self.session_id, task_id, turn_id, tool_call_id, api_request_id)
        return tool_call.run(self.registry_for(name), self._hooks, name, args, ids=ids, kwargs=kwargs)

    async def adispatch_tool(
        self, name: str, args: Any, *, tool_call_id: str = "", task_id: str = "", turn_id: str = "",
        api_request_id: str = "", **kwargs: Any,
    ) -> str:
        """`dispatch_tool` for async hosts."""
        ids = tool_call.ToolCallIds(self.session_id, task_id, turn_id, tool_call_id, api_request_id)
        return await tool_call.adispatch(self.registry_for(name), self._hooks, name, args, ids=ids, kwargs=kwargs)

    # -- memory around each turn ----------------------------------------------------------

    def system_prompt_block(self) -> str:
        """The memory provider's block for the system prompt ("" without memory)."""
        return self._memory.system_prompt_block() if self._memory is not None else ""

    def on_turn_start(self, turn_number: int, message: str, **kwargs: Any) -> None:
        """A turn starts (before `prefetch`): the memory provider's `on_turn_start`. The reference
        host passes `model`, `platform` and `tool_count`."""
        if self._memory is not None:
            self._memory.on_turn_start(turn_number, message, **kwargs)

    def prefetch(self, query: str) -> str:
        """Memories relevant to the user's message, to add to this turn's context ("" for none).
        A trivial message (empty, a `/command`, "thanks") recalls nothing, as in Hermes."""
        if self._memory is None or is_trivial_prompt(query):
            return ""
        return self._memory.prefetch(query, self.session_id)

    def recall_status(self) -> RecallStatus | None:
        """What the memory provider says its last `prefetch` injected (None: nothing to show)."""
        return self._memory.recall_status() if self._memory is not None else None

    def recall_line(self) -> str:
        """`recall_status()` as a line for the user ("🧠 notes — recalled 3 memories"), or ""."""
        status = self.recall_status()
        if status is None:
            return ""
        detail = ("recalled 1 memory" if status.count == 1 else f"recalled {status.count} memories"
                  if status.count > 1 else "recalled relevant memory")
        return f"{status.glyph} {status.provider_label} — {detail}"

    def sync_turn(self, user_content: str, assistant_content: str, *,
                  messages: Sequence[Message] | None = None) -> None:
        """Tell the memory provider a turn is complete; `messages` (the conversation as of this
        turn) reach a provider whose `sync_turn` accepts them."""
        if self._memory is not None:
            self._memory.sync_turn(user_content, assistant_content, self.session_id,
                                   None if messages is None else [dict(m) for m in messages])

    def queue_prefetch(self, query: str) -> None:
        """After a turn: let the memory provider start recalling for the next one."""
        if self._memory is not None and not is_trivial_prompt(query):
            self._memory.queue_prefetch(query, self.session_id)

    def on_pre_compress(self, messages: Sequence[Message]) -> str:
        """What the memory provider wants kept from messages about to be compressed."""
        return self._memory.on_pre_compress(list(messages)) if self._memory is not None else ""

    def on_session_switch(self, new_session_id: str | None = None, *, parent_session_id: str = "",
                          reset: bool = False, rewound: bool = False, **kwargs: Any) -> None:
        """The conversation goes on under `new_session_id` (default: this one) with the same
        engines: a resume, a branch, a `/reset` (`reset=True`), a shortened transcript
        (`rewound=True`). The memory provider hears `on_session_switch`."""
        new_id = new_session_id or self.session_id
        self.session_id = self._guard.session_id = new_id
        if self._memory is not None:
            extra = {"rewound": True} if rewound else {}
            self._memory.on_session_switch(new_id, parent_session_id=parent_session_id, reset=reset,
                                           **extra, **kwargs)

    def on_memory_write(self, action: str, target: str, content: str,
                        metadata: dict[str, Any] | None = None) -> None:
        """For a host with a memory tool of its own: mirror a write (`add`, `replace`, `remove`)
        to the memory provider."""
        if self._memory is not None:
            self._memory.on_memory_write(action, target, content, metadata)

    def on_delegation(self, task: str, result: str, *, child_session_id: str = "", **kwargs: Any) -> None:
        """For a host with subagents: a subagent finished `task` with `result`."""
        if self._memory is not None:
            self._memory.on_delegation(task, result, child_session_id=child_session_id, **kwargs)

    # -- the context engine around each request ---------------------------------------------

    def after_response(self, usage: Any) -> None:
        """After every LLM call: hand its `usage` (a dict, or an object with attributes) to the engine."""
        if usage is not None and not isinstance(usage, dict):
            usage = {k: getattr(usage, k) for k in ("prompt_tokens", "completion_tokens", "total_tokens",
                                                    "input_tokens", "output_tokens") if hasattr(usage, k)}
        self._last_usage = dict(usage or {})
        if self._engine is not None:
            self._engine.update_from_response(usage or {})

    def should_compress(self, messages: Sequence[Message], prompt_tokens: int | None = None) -> bool:
        """Whether the engine wants `messages` compressed before the next request: its preflight
        check (unless it defers to the last real token count), or its threshold."""
        if self._engine is None:
            return False
        messages = list(messages)
        if self._engine.should_compress_preflight(messages) and \
                not self._engine.should_defer_preflight_to_real_usage(estimate_tokens(messages)):
            return True
        return self._engine.should_compress(prompt_tokens)

    def before_request(
        self, messages: Messages, prompt_tokens: int | None = None
    ) -> Messages:
        """Before every request: the messages to send. After tool results, the engine may prune
        old ones (`prune_tool_results_only`); then it compresses when it says so. The list is
        returned as it was (the same object) when nothing changed; `last_compaction_note` says
        what to tell the user about an automatic compaction ("" for nothing)."""
        self.last_compaction_note = ""
        if self._engine is None:
            return messages
        if self._async is not None:
            messages = self._async.apply(messages)
        if prompt_tokens is None:  # the last real count, when the engine has seen one
            engine = self._engine.engine
            last = self._guard(f"context engine {self._engine.entry.name!r}.last_prompt_tokens",
                               lambda: getattr(engine, "last_prompt_tokens", 0), 0)
            current = last if isinstance(last, int) and not isinstance(last, bool) and last > 0 else None
        else:
            current = prompt_tokens
        window = messages
        if window and window[-1].get("role") == "tool":
            window = self._pruned(window, current)
        if not self.should_compress(window, prompt_tokens):
            return window
        before = len(window)
        compressed = self.compress(window, current_tokens=current)
        if compressed is not window and compressed != window:
            default = f"context compressed by {self._engine.entry.name}: {before} → {len(compressed)} messages"
            note = self._engine.automatic_status("compress", default, approx_tokens=estimate_tokens(compressed),
                                                 threshold_tokens=self.status().get("threshold_tokens", 0))
            self.last_compaction_note = note or ""
        return compressed

    def _pruned(self, messages: Messages, prompt_tokens: int | None) -> Messages:
        """The engine's `prune_tool_results_only` of `messages`, when it pruned and kept the list valid."""
        assert self._engine is not None
        current = prompt_tokens if prompt_tokens is not None else estimate_tokens(messages)
        result = self._engine.prune_tool_results_only(list(messages), current)
        if not (isinstance(result, (tuple, list)) and len(result) == 2 and isinstance(result[1], int)
                and result[1] > 0 and isinstance(result[0], list)):
            return messages
        if message_problems(result[0]):
            self.problems.append(f"context engine {self._engine.entry.name!r}.prune_tool_results_only() returned an "
                                 "invalid message list; kept the original")
            return messages
        return result[0] if result[0] != messages else messages

    def has_content_to_compress(self, messages: Sequence[Message]) -> bool:
        """Whether a manual `/compress` has anything to do (False without an engine)."""
        return self._engine is not None and self._engine.has_content_to_compress(list(messages))

    def compress(
        self, messages: Messages, *, current_tokens: int | None = None, focus_topic: str | None = None,
        force: bool = False,
    ) -> Messages:
        """Compress now (a manual `/compress [topic]` with `force=True`, or from `before_request`).
        A manual compression the engine has nothing for (`has_content_to_compress`) returns
        `messages` itself. Always returns a valid list: an engine that raises or returns an
        invalid one leaves `messages` as they were (or repaired, when only the tool pairing was
        wrong), and says so in `problems`."""
        if self._engine is None or (force and not self._engine.has_content_to_compress(list(messages))):
            return messages
        memory = self.on_pre_compress(messages)
        offered = {"current_tokens": current_tokens if current_tokens is not None else estimate_tokens(messages),
                   "focus_topic": focus_topic, "force": force,
                   "memory_context": sanitize_memory_context(memory) if memory else ""}
        result = self._engine.compress(list(messages), compress_kwargs(self._engine.engine, offered))
        return checked_messages(result, messages, f"context engine {self._engine.entry.name!r}.compress()",
                                self._guard.note)

    def select_context(self, request: Messages,
                       conversation: Sequence[Message] = ()) -> Messages:
        """The messages of this one request, as the engine selects them (`select_context`);
        `request` itself when it selects nothing or something invalid (noted in `problems`).
        `conversation` is the stored window, for the engine's reference."""
        if self._engine is None:
            return request
        incoming = next((dict(m) for m in reversed(request) if m.get("role") == "user"), None)
        selected = self._engine.select_context([dict(m) for m in request], [dict(m) for m in conversation],
                                               incoming, self.context_length)
        if selected is None:
            return request
        problems = message_problems(selected)
        if problems or not selected:
            self.problems.append(f"context engine {self._engine.entry.name!r}.select_context() returned an invalid "
                                 f"message list ({'; '.join(problems[:3]) or 'empty'}); sent the request as it was")
            log.warning("session %s: %s", self.session_id, self.problems[-1])
            return request
        return selected  # type: ignore[no-any-return]

    def on_turn_complete(self, messages: Sequence[Message], **kwargs: Any) -> None:
        """A turn ended: the engine's `on_turn_complete(messages, usage, **kwargs)` with a copy of
        the window and the last LLM call's usage. The reference host passes `api_call_count`,
        `interrupted` and `turn_exit_reason`."""
        if self._engine is not None:
            self._engine.on_turn_complete([dict(m) for m in messages], self._last_usage or None, **kwargs)
            if self._async is not None and not kwargs.get("interrupted"):
                tokens = self._last_usage.get("prompt_tokens")
                self._async.maybe_prepare(list(messages), tokens if isinstance(tokens, int) else None)

    @property
    def pending_compression(self) -> Any:
        """The compression the engine prepared in the background, waiting for the next request
        (None: none); see `_session.async_compression`."""
        return self._async.pending if self._async is not None else None

    def update_model(self, model: str, context_length: int, **kwargs: Any) -> None:
        """The model changed: the engine recomputes its threshold."""
        self.model, self.context_length = model, int(context_length)
        if self._engine is not None:
            self._engine.update_model(model, self.context_length, **kwargs)

    def status(self) -> dict[str, Any]:
        """The engine's token/threshold status (`usage_percent` within 0..100); {} without one."""
        return self._engine.get_status() if self._engine is not None else {}

    def reset(self) -> None:
        """A `/reset` or `/new`: plugins hear `on_session_finalize` (`session_boundary`), the engine
        forgets this conversation's state, the memory provider hears `on_session_switch(reset=True)`,
        plugins hear `on_session_reset` (`new_session`) and, as the conversation starts afresh,
        `on_session_start`."""
        if self._announce:
            self._hooks.on_session_finalize(session_id=self.session_id, platform=self.platform,
                                            reason="session_boundary").run()
        if self._async is not None:
            self._async.discard("session_reset")
        if self._engine is not None:
            self._engine.on_session_reset()
        self.on_session_switch(self.session_id, reset=True)
        if self._announce:
            self._hooks.on_session_reset(session_id=self.session_id, platform=self.platform, reason="new_session").run()
            self._hooks.on_session_start(session_id=self.session_id, model=self.model, platform=self.platform).run()

    # -- the end --------------------------------------------------------------------------

    def close(self, messages: Sequence[Message] = ()) -> None:
        """End the session: the engines' `on_session_end`, the memory's `shutdown`, and the
        plugins' `on_session_finalize` hook (`reason="shutdown"`). Idempotent."""
        if self._closed:
            return
        self._closed = True
        if self._async is not None:
            self._async.discard("session_closed")
        if self._engine is not None:
            self._engine.on_session_end(self.session_id, list(messages))
        if self._memory is not None:
            self._memory.on_session_end(list(messages))
            self._memory.shutdown()
        if self._announce:
            self._hooks.on_session_finalize(session_id=self.session_id, platform=self.platform, reason="shutdown").run()
