"""The calls a session makes into its context engine and memory provider, typed and isolated.

`EngineCalls` and `MemoryCalls` name each method of the `ContextEngine` and `MemoryProvider`
ABCs the host calls, so a renamed ABC method is a type error here rather than a call that
quietly falls back to a default. Every call goes through one `Guard`: an engine that raises,
or answers with the wrong type, is logged and noted in the session's problems, and the
default stands in. An engine never takes the host down.

An engine accepted by its shape may lack an optional member (its base was a stand-in class
that could not be adapted): the ABC's default stands in for it, silently. Optional keyword
arguments (`sync_turn(messages=)`, `on_turn_start(model=)`, ...) go only to methods whose
signature accepts them, as Hermes' host does.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from .._messages import Message, Messages
from .._runtime.invoke import contained, describe_error
from .._slots.context_engine import ContextEngine, accepted_kwargs, automatic_compaction_status_message
from .._slots.memory import MemoryProvider
from .._slots.registry import SlotProvider

if TYPE_CHECKING:
    from .._slots.recall import RecallStatus

__all__ = ["EngineCalls", "Guard", "MemoryCalls", "start_kwargs"]

log = logging.getLogger("hermes_core.session")
T = TypeVar("T")


def start_kwargs(home: Path, given: Mapping[str, Any]) -> dict[str, Any]:
    """What a session's memory provider `initialize` and context engine `on_session_start` get
    (`session_id` aside), as Hermes' agent hands them: `hermes_home`, `agent_context` ("primary"),
    `agent_identity` (the profile's name: "default" for the root home), `agent_workspace`
    ("hermes"), then `given` (the model, the platform, who and where: its values win)."""
    return {"hermes_home": str(home), "agent_context": "primary", "agent_identity": _profile_of(home),
            "agent_workspace": "hermes", **given}


@functools.lru_cache(maxsize=16)
def _profile_of(home: Path) -> str:
    """`profile_of(home)`, once per home and process: it resolves two paths (a stat per part), and
    a server opens a session per request on the same home."""
    from .._profiles.names import profile_of

    return profile_of(home)


class Guard:
    """Runs one call into an engine for session `session_id`; noting what goes wrong in `problems`."""

    __slots__ = ("session_id", "problems")

    def __init__(self, session_id: str, problems: list[str]) -> None:
        self.session_id = session_id
        self.problems = problems

    def note(self, problem: str) -> None:
        log.warning("session %s: %s", self.session_id, problem)
        self.problems.append(problem)

    def __call__(self, what: str, call: Callable[[], Any], default: T, expect: type | tuple[type, ...] | None = None) -> T:
        """`call()`, or `default` when it raises, or when its value is not an `expect`."""
        try:
            value = call()
        except BaseException as exc:
            contained(exc)
            problem = f"{what} raised {describe_error(exc)}"
            log.warning("session %s: %s", self.session_id, problem, exc_info=True)
            self.problems.append(problem)
            return default
        if expect is not None and not isinstance(value, expect):
            return default
        return value  # type: ignore[no-any-return]

    def optional(self, target: Any, member: str, what: str, default: T, /, *args: Any,
                 expect: type | tuple[type, ...] | None = None, **kwargs: Any) -> T:
        """`target.member(*args, **kwargs)` with only the keyword arguments its signature takes;
        `default` when the target has no such member."""
        method = self(f"{what}.{member}", lambda: getattr(target, member, None), None)
        if not callable(method):
            return default
        return self(f"{what}.{member}()", lambda: method(*args, **accepted_kwargs(method, kwargs)), default, expect)


class EngineCalls:
    """The session's context engine (`engine`), and every call the host makes into it."""

    __slots__ = ("engine", "entry", "_guard", "_who")

    def __init__(self, engine: ContextEngine, entry: SlotProvider, guard: Guard) -> None:
        self.engine, self.entry, self._guard = engine, entry, guard
        self._who = f"context engine {entry.name!r}"

    @classmethod
    def start(
        cls, entry: SlotProvider, guard: Guard, session_id: str, start: Mapping[str, Any],
        summariser: Callable[[], Any] | None = None,
    ) -> EngineCalls | None:
        """A new engine for one session, started (`on_session_start(session_id, **start)`, then
        `update_model` with `start`'s model and context length); None when it cannot be.
        An engine with `bind_summariser` (the built-in compressor and its subclasses) is given
        `summariser()` first."""
        engine: ContextEngine | None = guard(f"creating context engine {entry.name!r}", entry.new_instance, None)
        if engine is None:
            return None
        calls = cls(engine, entry, guard)
        if summariser is not None:
            guard.optional(engine, "bind_summariser", calls._who, None, summariser())

        def on_session_start() -> bool:
            engine.on_session_start(session_id, **start)
            return True

        if not guard(f"{calls._who}.on_session_start()", on_session_start, False):
            entry.release(engine)
            return None
        calls.update_model(start["model"], start["context_length"])
        return calls

    def update_from_response(self, usage: Mapping[str, Any]) -> None:
        self._guard(f"{self._who}.update_from_response()", lambda: self.engine.update_from_response(usage), None)

    def should_compress(self, prompt_tokens: int | None) -> bool:
        """`should_compress_info` (whose default asks `should_compress`); a reason it gives for
        holding back is logged."""
        if not callable(getattr(self.engine, "should_compress_info", None)):
            return self._guard(f"{self._who}.should_compress()", lambda: self.engine.should_compress(prompt_tokens),
                               False, bool) is True
        info = self._guard(f"{self._who}.should_compress_info()",
                           lambda: self.engine.should_compress_info(prompt_tokens), None, (tuple, list))
        if info is None or len(info) != 2 or not isinstance(info[0], bool):
            return False
        if not info[0] and info[1]:
            log.info("session %s: %s holds compression back: %s", self._guard.session_id, self._who, info[1])
        return info[0]

    def should_compress_preflight(self, messages: Messages) -> bool:
        return self._guard.optional(self.engine, "should_compress_preflight", self._who, False, messages,
                                    expect=bool) is True

    def should_defer_preflight_to_real_usage(self, rough_tokens: int) -> bool:
        return self._guard.optional(self.engine, "should_defer_preflight_to_real_usage", self._who, False,
                                    rough_tokens, expect=bool) is True

    def has_content_to_compress(self, messages: Messages) -> bool:
        return self._guard.optional(self.engine, "has_content_to_compress", self._who, True, messages,
                                    expect=bool) is not False

    def compress(self, messages: Messages, kwargs: Mapping[str, Any]) -> Any:
        """What the engine made of `messages` (unchecked: the session validates it), or None.

        An engine that offers Hermes' optional `prepare_compression_operation(messages, *,
        session_id=None, attempt_generation=None)` is asked first; when it answers
        `("sanitize", claim)`, `compress` gets `operation_claim=claim` and its `(messages, claim)`
        answer is taken for its messages (None, or anything else, is no claim)."""
        claimed = self._guard.optional(self.engine, "prepare_compression_operation", self._who, None, messages,
                                       session_id=self._guard.session_id, attempt_generation=None)
        if not (isinstance(claimed, tuple) and len(claimed) == 2 and claimed[0] == "sanitize"):
            return self._guard(f"{self._who}.compress()", lambda: self.engine.compress(messages, **kwargs), None)
        claim = claimed[1]
        result = self._guard(f"{self._who}.compress()",
                             lambda: self.engine.compress(messages, **kwargs, operation_claim=claim), None)
        if isinstance(result, tuple) and len(result) == 2:
            return result[0]
        return result

    def prune_tool_results_only(self, messages: Messages, current_tokens: int | None) -> Any:
        """`(messages, count)` as the engine returned it (unchecked), or None."""
        return self._guard.optional(self.engine, "prune_tool_results_only", self._who, None, messages,
                                    current_tokens=current_tokens)

    def select_context(self, request: Messages, conversation: Messages, incoming: dict[str, Any] | None,
                       budget_tokens: int) -> Any:
        """The engine's replacement for this request (unchecked), or None."""
        return self._guard.optional(self.engine, "select_context", self._who, None, request,
                                    conversation_messages=conversation, incoming_message=incoming,
                                    budget_tokens=budget_tokens)

    def on_turn_complete(self, messages: Messages, usage: Mapping[str, Any] | None, **kwargs: Any) -> None:
        self._guard.optional(self.engine, "on_turn_complete", self._who, None, messages, usage=usage, **kwargs)

    @property
    def who(self) -> str:
        return self._who

    def should_prepare_async_compression(self, prompt_tokens: int | None, messages: Messages) -> bool:
        return self._guard.optional(self.engine, "should_prepare_async_compression", self._who, False,
                                    prompt_tokens, messages, expect=bool) is True

    def prepare_async_compression(self, messages: Messages, current_tokens: int | None) -> Any:
        """The engine's candidate (unchecked), or None."""
        return self._guard.optional(self.engine, "prepare_async_compression", self._who, None, messages,
                                    current_tokens=current_tokens)

    def on_async_compression_applied(self, candidate: Any, **kwargs: Any) -> None:
        self._guard.optional(self.engine, "on_async_compression_applied", self._who, None, candidate, **kwargs)

    def on_async_compression_discarded(self, candidate: Any, reason: str) -> None:
        self._guard.optional(self.engine, "on_async_compression_discarded", self._who, None, candidate, reason)

    def automatic_status(self, phase: str, default_message: str, **context: Any) -> str | None:
        """The note for an automatic compaction, as the engine words it (None: say nothing)."""
        return self._guard(
            f"{self._who}.get_automatic_compaction_status_message()",
            lambda: automatic_compaction_status_message(self.engine, phase=phase, default_message=default_message,
                                                        **context),
            default_message, (str, type(None)))

    def update_model(self, model: str, context_length: int, **kwargs: Any) -> None:
        self._guard(f"{self._who}.update_model()", lambda: self.engine.update_model(model, context_length, **kwargs),
                    None)

    def get_status(self) -> dict[str, Any]:
        return dict(self._guard(f"{self._who}.get_status()", self.engine.get_status, {}, dict))

    def on_session_reset(self) -> None:
        self._guard(f"{self._who}.on_session_reset()", self.engine.on_session_reset, None)

    def on_session_end(self, session_id: str, messages: Messages) -> None:
        """The engine's `on_session_end`; the session is then done with it."""
        self._guard(f"{self._who}.on_session_end()", lambda: self.engine.on_session_end(session_id, messages), None)
        self.entry.release(self.engine)


class MemoryCalls:
    """The session's memory provider (`provider`), and every call the host makes into it."""

    __slots__ = ("provider", "entry", "_guard", "_who")

    def __init__(self, provider: MemoryProvider, entry: SlotProvider, guard: Guard) -> None:
        self.provider, self.entry, self._guard = provider, entry, guard
        self._who = f"memory provider {entry.name!r}"

    @classmethod
    def start(cls, entry: SlotProvider, guard: Guard, session_id: str, start: Mapping[str, Any]) -> MemoryCalls | None:
        """A new provider for one session: available here and `initialize(session_id, **start)`d; None otherwise."""
        provider: MemoryProvider | None = guard(f"creating memory provider {entry.name!r}", entry.new_instance, None)
        if provider is None:
            return None
        calls = cls(provider, entry, guard)
        if guard(f"{calls._who}.is_available()", provider.is_available, False) is not True:
            reason = guard.optional(provider, "unavailable_reason", calls._who, "", expect=str).strip()
            guard.note(f"{calls._who} is not available here{f' ({reason})' if reason else ''}; "
                       "this session has no memory")
            entry.release(provider)
            return None

        def initialize() -> bool:
            provider.initialize(session_id, **start)
            return True

        if guard(f"{calls._who}.initialize()", initialize, False):
            return calls
        calls.shutdown()
        return None

    def system_prompt_block(self) -> str:
        return self._guard.optional(self.provider, "system_prompt_block", self._who, "", expect=str)

    def on_turn_start(self, turn_number: int, message: str, **kwargs: Any) -> None:
        self._guard.optional(self.provider, "on_turn_start", self._who, None, turn_number, message, **kwargs)

    def prefetch(self, query: str, session_id: str) -> str:
        """The provider's text for this turn (a `MemoryPrefetchResult` gives its `context`)."""
        from .._slots.provider_helpers import prefetch_context

        result = self._guard.optional(self.provider, "prefetch", self._who, "", query, session_id=session_id)
        return self._guard(f"{self._who}.prefetch()", lambda: prefetch_context(result), "", str)

    def recall_status(self) -> RecallStatus | None:
        """The provider's status, as hermes-core's `RecallStatus` (a stand-in class of the same
        shape is accepted); None for none or for anything else."""
        from .._slots.recall import INDICATOR_GLYPH, RecallStatus

        status = self._guard.optional(self.provider, "recall_status", self._who, None)
        label, count = getattr(status, "provider_label", None), getattr(status, "count", None)
        if status is None or not isinstance(label, str) or not isinstance(count, int) or isinstance(count, bool):
            return None
        glyph = getattr(status, "glyph", INDICATOR_GLYPH)
        return RecallStatus(label, count, glyph if isinstance(glyph, str) else INDICATOR_GLYPH)

    def queue_prefetch(self, query: str, session_id: str) -> None:
        self._guard.optional(self.provider, "queue_prefetch", self._who, None, query, session_id=session_id)

    def sync_turn(self, user_content: str, assistant_content: str, session_id: str,
                  messages: Messages | None = None) -> None:
        extra: dict[str, Any] = {} if messages is None else {"messages": messages}
        self._guard.optional(self.provider, "sync_turn", self._who, None, user_content, assistant_content,
                             session_id=session_id, **extra)

    def on_session_switch(self, new_session_id: str, **kwargs: Any) -> None:
        self._guard.optional(self.provider, "on_session_switch", self._who, None, new_session_id, **kwargs)

    def on_pre_compress(self, messages: Sequence[Message]) -> str:
        return self._guard.optional(self.provider, "on_pre_compress", self._who, "", messages, expect=str)

    def on_memory_write(self, action: str, target: str, content: str, metadata: dict[str, Any] | None) -> None:
        extra: dict[str, Any] = {} if metadata is None else {"metadata": metadata}
        self._guard.optional(self.provider, "on_memory_write", self._who, None, action, target, content, **extra)

    def on_delegation(self, task: str, result: str, **kwargs: Any) -> None:
        self._guard.optional(self.provider, "on_delegation", self._who, None, task, result, **kwargs)

    def on_session_end(self, messages: Sequence[Message]) -> None:
        self._guard.optional(self.provider, "on_session_end", self._who, None, messages)

    def shutdown(self) -> None:
        """The provider's `shutdown`; the session is then done with it."""
        self._guard.optional(self.provider, "shutdown", self._who, None)
        self.entry.release(self.provider)
