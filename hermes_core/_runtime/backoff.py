"""Waiting longer after each failure: `Backoff`, the doubling delays every reconnect and retry uses
(an MCP server's connection, a messaging platform's, a send). Public as `hermes_core.hosting.Backoff`."""

from __future__ import annotations

import math

__all__ = ["Backoff"]


class Backoff:
    """Doubling waits between attempts: `first`, then twice that, and so on, never over `cap` (but
    for `first` itself); `reset()` starts from `first` again (after a success).

    >>> backoff = Backoff(1, 5)
    >>> [backoff.next() for _ in range(5)]
    [1.0, 2.0, 4.0, 5.0, 5.0]
    """

    __slots__ = ("first", "cap", "_next")

    def __init__(self, first: float, cap: float = math.inf) -> None:
        if not (first >= 0 and cap >= 0):
            raise ValueError(f"a backoff's delays are seconds from 0 up, not first={first!r}, cap={cap!r}")
        self.first, self.cap = float(first), float(cap)
        self._next = self.first

    def next(self) -> float:
        """The wait before the next attempt (the one after it is twice as long, up to `cap`)."""
        delay = self._next
        self._next = min(delay * 2, self.cap)
        return delay

    def reset(self) -> None:
        """Start from `first` again."""
        self._next = self.first

    def __repr__(self) -> str:
        return f"Backoff(first={self.first:g}, cap={self.cap:g}, next={self._next:g})"
