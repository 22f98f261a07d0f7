"""The session a host's tool calls outside any conversation run in: opened on first use, closed on demand."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .session import AgentSession

__all__ = ["DefaultSession"]


class DefaultSession:
    """`get()` opens the session with `open()` the first time and hands back the same one until
    `close()`; it is not a conversation, so `open` announces nothing to the plugins."""

    __slots__ = ("_open", "_session", "_lock")

    def __init__(self, open: Callable[[], AgentSession]) -> None:  # noqa: A002 - what it does
        self._open = open
        self._session: AgentSession | None = None
        self._lock = threading.RLock()

    def get(self) -> AgentSession:
        with self._lock:
            if self._session is None:
                self._session = self._open()
            return self._session

    def close(self) -> None:
        """Close the session (its engines' `on_session_end` and `shutdown`), if open."""
        with self._lock:
            session, self._session = self._session, None
        if session is not None:
            session.close()
