"""A ledger's settlements that could not be written (the ledger out of reach), kept in the process
for the next write that can, and at exit for `exiting` to try once more and say what was left."""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

from . import exiting

__all__ = ["KeptForLater"]


class KeptForLater:
    """What `Ledger` keeps for later: `later`, `kept`, `pending` and `catch_up`, over the ledger's
    `_statements` (a transaction on SQLite; statements that each commit on the shared database)."""

    _pg: Any

    def _keep_for_later(self) -> None:
        self._later: list[Callable[[Any], None]] = []  # settlements made while the ledger was out of reach
        self._later_lock = threading.Lock()
        self._catching = threading.Lock()
        self._trying: list[Callable[[Any], None]] = []  # the settlements `catch_up` is writing now

    def _statements(self) -> AbstractContextManager[Any]:
        raise NotImplementedError

    def later(self, op: Callable[[Any], None]) -> None:
        """Keep `op` (a settlement that could not be written) for the next write that can (or, at
        the process's exit, for `exiting` to try once more and say what was left)."""
        exiting.watch(self)
        with self._later_lock:
            self._later.append(op)

    def kept(self) -> list[Callable[[Any], None]]:
        """The settlements kept for later, not written yet (those being written now included)."""
        with self._later_lock:
            return [*self._trying, *self._later]

    def pending(self) -> int:
        """How many settlements wait for the ledger to be back."""
        with self._later_lock:
            return len(self._later)

    def catch_up(self) -> int:
        """Write the settlements left for later: how many; a `MemoryStoreError` (those not written are
        kept) when the ledger is still out of reach."""
        if not self._later:
            return 0
        with self._catching:  # one at a time, so that `kept` knows what is being written
            with self._later_lock:
                pending, self._later = self._later, []
                self._trying = pending
            if not pending:
                return 0
            written = 0  # on the shared database each settlement commits by itself; SQLite's roll back together
            try:
                with self._statements() as db:
                    for op in pending:
                        op(db)
                        written += self._pg is not None
            except BaseException:
                with self._later_lock:
                    self._later[:0] = pending[written:]
                raise
            finally:
                with self._later_lock:
                    self._trying = []
            return len(pending)

