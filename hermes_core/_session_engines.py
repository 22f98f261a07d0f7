"""The calls a session makes into its context engine and memory provider, typed and isolated.

`EngineCalls` and `MemoryCalls` name each method of the `ContextEngine` and `MemoryProvider`
ABCs the host calls, so a renamed ABC method is a type error here rather than a call that
quietly falls back to a default. Every call goes through one `Guard`: an engine that raises,
or answers with the wrong type, is logged and noted in the session's problems, and the
default stands in. An engine never takes the host down.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from ._context_engine import ContextEngine
from ._invoke import PLUGIN_FAULTS
from ._memory import MemoryProvider
from ._slots import SlotProvider

__all__ = ["EngineCalls", "Guard", "MemoryCalls"]

log = logging.getLogger("hermes_core.session")
T = TypeVar("T")
Messages = list[dict[str, Any]]


class Guard:
    """Runs one call into an engine for session `session_id`; noting what goes wrong in `problems`."""

    __slots__ = ("session_id", "problems")

    def __init__(self, session_id: str, problems: list[str]) -> None:
        self.session_id = session_id
        self.problems = problems

    def note(self, problem: str) -> None:
        log.warning("session %s: %s", self.session_id, problem)
        self.problems.append(problem)

    def __call__(self, what: str, call: Callable[[], Any], default: T, expect: type | None = None) -> T:
        """`call()`, or `default` when it raises, or when its value is not an `expect`."""
        try:
            value = call()
        except PLUGIN_FAULTS as exc:
            problem = f"{what} raised {type(exc).__name__}: {exc}"
            log.warning("session %s: %s", self.session_id, problem, exc_info=True)
            self.problems.append(problem)
            return default
        if expect is not None and not isinstance(value, expect):
            return default
        return value  # type: ignore[no-any-return]


class EngineCalls:
    """The session's context engine (`engine`), and every call the host makes into it."""

    __slots__ = ("engine", "entry", "_guard", "_who")

    def __init__(self, engine: ContextEngine, entry: SlotProvider, guard: Guard) -> None:
        self.engine, self.entry, self._guard = engine, entry, guard
        self._who = f"context engine {entry.name!r}"

    @classmethod
    def start(cls, entry: SlotProvider, guard: Guard, session_id: str, start: Mapping[str, Any]) -> EngineCalls | None:
        """A new engine for one session, started (`on_session_start(session_id, **start)`, then
        `update_model` with `start`'s model and context length); None when it cannot be."""
        engine: ContextEngine | None = guard(f"creating context engine {entry.name!r}", entry.new_instance, None)
        if engine is None:
            return None
        calls = cls(engine, entry, guard)
        def on_session_start() -> bool:
            engine.on_session_start(session_id, **start)
            return True

        if not guard(f"{calls._who}.on_session_start()", on_session_start, False):
            return None
        calls.update_model(start["model"], start["context_length"])
        return calls

    def update_from_response(self, usage: Mapping[str, Any]) -> None:
        self._guard(f"{self._who}.update_from_response()", lambda: self.engine.update_from_response(usage), None)

    def should_compress(self, prompt_tokens: int | None) -> bool:
        return self._guard(f"{self._who}.should_compress()", lambda: self.engine.should_compress(prompt_tokens),
                           False, bool) is True

    def should_compress_preflight(self, messages: Messages) -> bool:
        return self._guard(f"{self._who}.should_compress_preflight()",
                           lambda: self.engine.should_compress_preflight(messages), False, bool) is True

    def compress(self, messages: Messages, kwargs: Mapping[str, Any]) -> Any:
        """What the engine made of `messages` (unchecked: the session validates it), or None."""
        return self._guard(f"{self._who}.compress()", lambda: self.engine.compress(messages, **kwargs), None)

    def update_model(self, model: str, context_length: int, **kwargs: Any) -> None:
        self._guard(f"{self._who}.update_model()", lambda: self.engine.update_model(model, context_length, **kwargs),
                    None)

    def get_status(self) -> dict[str, Any]:
        return dict(self._guard(f"{self._who}.get_status()", self.engine.get_status, {}, dict))

    def on_session_reset(self) -> None:
        self._guard(f"{self._who}.on_session_reset()", self.engine.on_session_reset, None)

    def on_session_end(self, session_id: str, messages: Messages) -> None:
        self._guard(f"{self._who}.on_session_end()", lambda: self.engine.on_session_end(session_id, messages), None)


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
            guard.note(f"{calls._who} is not available here; this session has no memory")
            return None
        def initialize() -> bool:
            provider.initialize(session_id, **start)
            return True

        if guard(f"{calls._who}.initialize()", initialize, False):
            return calls
        calls.shutdown()
        return None

    def system_prompt_block(self) -> str:
        return self._guard(f"{self._who}.system_prompt_block()", self.provider.system_prompt_block, "", str)

    def prefetch(self, query: str, session_id: str) -> str:
        return self._guard(f"{self._who}.prefetch()", lambda: self.provider.prefetch(query, session_id=session_id),
                           "", str)

    def sync_turn(self, user_content: str, assistant_content: str, session_id: str) -> None:
        self._guard(f"{self._who}.sync_turn()",
                    lambda: self.provider.sync_turn(user_content, assistant_content, session_id=session_id), None)

    def on_pre_compress(self, messages: Sequence[dict[str, Any]]) -> str:
        return self._guard(f"{self._who}.on_pre_compress()", lambda: self.provider.on_pre_compress(messages), "", str)

    def on_session_end(self, messages: Sequence[dict[str, Any]]) -> None:
        self._guard(f"{self._who}.on_session_end()", lambda: self.provider.on_session_end(messages), None)

    def shutdown(self) -> None:
        self._guard(f"{self._who}.shutdown()", self.provider.shutdown, None)
