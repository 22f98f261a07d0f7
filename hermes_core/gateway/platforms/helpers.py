"""`gateway.platforms.helpers`, the helpers Hermes' adapters share: dropping a message seen
twice, plain text for platforms without markdown, remembering the threads the agent took part
in, a phone number fit for a log line, cancelling a task."""

from __future__ import annotations

import asyncio
import contextlib
import re
import time
from collections.abc import MutableMapping
from typing import Any

from hermes_core import hermes_home
from hermes_core.hosting import read_json, write_json

__all__ = ["MessageDeduplicator", "ThreadParticipationTracker", "strip_markdown", "redact_phone", "cancel_task",
           "bounded_put"]


class MessageDeduplicator:
    """Message ids seen in the last `ttl_seconds` (at most `max_size`): `is_duplicate(id)` says
    whether one came before, and remembers it."""

    def __init__(self, max_size: int = 2000, ttl_seconds: float = 300) -> None:
        self._seen: dict[str, float] = {}
        self._max_size = max_size
        self._ttl = ttl_seconds

    def is_duplicate(self, msg_id: str) -> bool:
        if not msg_id:
            return False
        now = time.time()
        if self.contains(msg_id):
            return True
        self._seen[msg_id] = now
        if len(self._seen) > self._max_size:
            fresh = {k: at for k, at in self._seen.items() if now - at < self._ttl}
            newest = sorted(fresh.items(), key=lambda item: item[1])[-self._max_size:]
            self._seen = dict(newest)
        return False

    def contains(self, msg_id: str) -> bool:
        """Whether `msg_id` was seen within the window (without remembering it)."""
        seen = self._seen.get(msg_id) if msg_id else None
        if seen is None:
            return False
        if time.time() - seen < self._ttl:
            return True
        del self._seen[msg_id]
        return False

    def discard(self, msg_id: str) -> None:
        self._seen.pop(msg_id, None)

    def clear(self) -> None:
        self._seen.clear()


_MARKDOWN = (
    (re.compile(r"\*\*(.+?)\*\*", re.S), r"\1"),
    (re.compile(r"\*(.+?)\*", re.S), r"\1"),
    (re.compile(r"\b__(?![\s_])(.+?)(?<![\s_])__\b", re.S), r"\1"),
    (re.compile(r"\b_(?![\s_])(.+?)(?<![\s_])_\b", re.S), r"\1"),
    (re.compile(r"```[\w+-]*\n?"), ""),
    (re.compile(r"`(.+?)`"), r"\1"),
    (re.compile(r"^#{1,6}\s+", re.M), ""),
    (re.compile(r"\[([^\]]+)\]\([^)]+\)"), r"\1"),
    (re.compile(r"\n{3,}"), "\n\n"),
)


def strip_markdown(text: str) -> str:
    """`text` without markdown (emphasis, code marks, headings, links: their text stays)."""
    for pattern, replacement in _MARKDOWN:
        text = pattern.sub(replacement, text)
    return text.strip()


def redact_phone(phone: str) -> str:
    """A phone number for a log line: its first and last digits only."""
    if not phone:
        return "<none>"
    if len(phone) <= 4:
        return "****"
    if len(phone) <= 8:
        return f"{phone[:2]}****{phone[-2:]}"
    return f"{phone[:4]}****{phone[-4:]}"


class ThreadParticipationTracker:
    """The threads the agent took part in on a platform, kept in
    `$HERMES_HOME/<platform>_threads.json` (the latest `max_tracked`): `thread_id in tracker`,
    `tracker.mark(thread_id)`."""

    def __init__(self, platform_name: str, max_tracked: int = 500) -> None:
        self._path = hermes_home() / f"{platform_name}_threads.json"
        self._max = max_tracked
        try:
            stored = read_json(self._path)
        except (OSError, ValueError):
            stored = []
        self._threads: dict[str, None] = dict.fromkeys(str(t) for t in stored) if isinstance(stored, list) else {}

    def mark(self, thread_id: str) -> None:
        if thread_id in self._threads:
            return
        self._threads[thread_id] = None
        while len(self._threads) > self._max:
            del self._threads[next(iter(self._threads))]
        write_json(self._path, list(self._threads))

    def __contains__(self, thread_id: object) -> bool:
        return thread_id in self._threads

    def clear(self) -> None:
        self._threads.clear()


async def cancel_task(task: asyncio.Task[Any] | None) -> None:
    """Cancel `task` and wait until it has ended (its exception, if any, is dropped)."""
    if task is None or task.done():
        return
    task.cancel()
    if task is not asyncio.current_task():
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task


def bounded_put(store: MutableMapping[str, Any], key: str, value: Any, cap: int) -> None:
    """`store[key] = value` as the newest entry, the oldest dropped beyond `cap`."""
    store.pop(key, None)
    store[key] = value
    while len(store) > cap:
        del store[next(iter(store))]
