"""Compression prepared off the turn's path, as Hermes' agent runs an engine that offers it.

After a turn, an engine whose `should_prepare_async_compression(prompt_tokens, messages)` says
so is asked, in a thread of its own, for `prepare_async_compression(snapshot, current_tokens=...)`
of a copy of the window: a list of messages or a `ContextCompressionCandidate` standing for its
first `base_message_count` messages (all of the snapshot when it does not say). At most one is
prepared at a time. Before the next request the candidate is checked: when the window still
starts with the messages it was prepared from (the same digest), the window becomes the
candidate's messages and what came since, and the engine hears `on_async_compression_applied`;
otherwise it is dropped with `on_async_compression_discarded(candidate, reason)`: `stale_digest`
(the conversation moved on), `invalid_messages`, `session_reset` or `session_closed`.
"""

from __future__ import annotations

import copy
import hashlib
import json
import threading
from typing import Any

from .._messages import Messages, message_problems
from .._slots.context_engine import ContextCompressionCandidate

__all__ = ["AsyncCompression", "messages_digest"]


def messages_digest(messages: Messages) -> str:
    """SHA-256 of the messages as sent (keys starting with `_` are bookkeeping, left out)."""
    view = [{k: v for k, v in m.items() if not str(k).startswith("_")} if isinstance(m, dict) else repr(m)
            for m in messages]
    text = json.dumps(view, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=repr)
    return hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()


class AsyncCompression:
    """One session's prepared candidate. `engine` is the session's `EngineCalls`."""

    def __init__(self, engine: Any, note: Any) -> None:
        self._engine = engine
        self._note = note  # the session's Guard: what goes wrong is noted, never raised
        self._lock = threading.Lock()
        self._generation = 0
        self._thread: threading.Thread | None = None
        self.pending: ContextCompressionCandidate | None = None

    @property
    def preparing(self) -> bool:
        thread = self._thread
        return thread is not None and thread.is_alive()

    def maybe_prepare(self, messages: Messages, prompt_tokens: int | None) -> bool:
        """After a turn: start preparing a candidate when the engine asks for one (and none is
        being prepared); whether one was started."""
        if self.preparing or not messages:
            return False
        if not self._engine.should_prepare_async_compression(prompt_tokens, [dict(m) for m in messages]):
            return False
        snapshot = copy.deepcopy(list(messages))
        with self._lock:
            self._generation += 1
            generation = self._generation
        thread = threading.Thread(target=self._prepare, args=(snapshot, prompt_tokens, generation),
                                  name="hermes-async-compression", daemon=True)
        self._thread = thread
        thread.start()
        return True

    def _prepare(self, snapshot: Messages, prompt_tokens: int | None, generation: int) -> None:
        result = self._engine.prepare_async_compression(copy.deepcopy(snapshot), prompt_tokens)
        candidate = self._candidate(result, snapshot)
        if candidate is None:
            return
        stale: ContextCompressionCandidate | None = candidate
        with self._lock:
            if generation == self._generation:  # not reset or superseded meanwhile
                stale, self.pending = self.pending, candidate
        if stale is not None:
            self._engine.on_async_compression_discarded(stale, "superseded" if stale is not candidate
                                                        else "session_reset")

    @staticmethod
    def _candidate(result: Any, snapshot: Messages) -> ContextCompressionCandidate | None:
        """The engine's answer as a candidate with its base filled in (None: nothing prepared)."""
        if isinstance(result, list):
            result = ContextCompressionCandidate(messages=result)
        messages = getattr(result, "messages", None)
        if not isinstance(messages, list):
            return None
        count = getattr(result, "base_message_count", None)
        if not isinstance(count, int) or isinstance(count, bool) or not 0 < count <= len(snapshot):
            count = len(snapshot)
        digest = getattr(result, "base_digest", "") or messages_digest(snapshot[:count])
        if isinstance(result, ContextCompressionCandidate):
            result.base_message_count, result.base_digest = count, digest
            return result
        metadata = getattr(result, "metadata", None)
        return ContextCompressionCandidate(messages=messages, base_message_count=count, base_digest=digest,
                                           metadata=dict(metadata) if isinstance(metadata, dict) else {})

    def apply(self, messages: Messages) -> Messages:
        """Before a request: the window with the pending candidate applied when it is still valid
        (else `messages`, the same object)."""
        with self._lock:
            candidate, self.pending = self.pending, None
        if candidate is None:
            return messages
        count = candidate.base_message_count or 0
        if count > len(messages) or messages_digest(messages[:count]) != candidate.base_digest:
            self._engine.on_async_compression_discarded(candidate, "stale_digest")
            return messages
        applied = [dict(m) for m in candidate.messages] + list(messages[count:])
        if message_problems(applied):
            self._note(f"{self._engine.who}.prepare_async_compression() gave an invalid message list; dropped it")
            self._engine.on_async_compression_discarded(candidate, "invalid_messages")
            return messages
        self._engine.on_async_compression_applied(candidate, base_message_count=count,
                                                  suffix_message_count=len(messages) - count)
        return applied

    def discard(self, reason: str) -> None:
        """Drop the pending candidate and any being prepared (`session_reset`, `session_closed`)."""
        with self._lock:
            self._generation += 1
            candidate, self.pending = self.pending, None
        if candidate is not None:
            self._engine.on_async_compression_discarded(candidate, reason)
