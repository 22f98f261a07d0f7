"""The budgets ledger's writes for async callers (`LedgerThread`), off the event loop.

On SQLite, one thread of their own, and every write waiting when the thread comes round done in
one transaction (100 concurrent calls cost a few commits, not 200: SQLite writes one at a time
anyway). On the shared database, each write a transaction of its own on a few threads, so that
writes wait only for the holders they lock, never for another call's holders batched with them.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import queue
import sqlite3
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from .ledger import Ledger, Reservation

__all__ = ["LedgerThread"]

T = TypeVar("T")
_SHARED_WORKERS = 4  # writes at once to the shared database, per process


class LedgerThread:
    """The ledger's writes for async callers. On SQLite, an operation that raises (a budget's
    refusal) fails alone, before it wrote anything; a SQLite error fails the whole transaction and
    every operation in it. The thread ends after a few idle seconds and starts again on the next
    write. A reservation whose caller was cancelled meanwhile is given back at once rather than
    held until it expires."""

    IDLE = 5.0

    def __init__(self, ledger: Ledger) -> None:
        self._ledger = ledger
        self._queue: queue.SimpleQueue[tuple[Callable[[Any], Any], asyncio.Future[Any]]] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._running = False
        self._pool: concurrent.futures.ThreadPoolExecutor | None = None

    async def write(self, op: Callable[[Any], T]) -> T:
        """`op`'s result, once the transaction it ran in has committed."""
        if self._ledger.dialect != "sqlite":
            return await self._shared(op)
        future: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        self._put(op, future)
        return await future

    async def run(self, call: Callable[[], T]) -> T:
        """`call()` on one of the ledger's threads (a reservation in Redis's counters, a settlement
        through them); a reservation whose caller was cancelled meanwhile is given back."""
        return await self._submit(call)

    async def _shared(self, op: Callable[[Any], T]) -> T:
        return await self._submit(self._ledger.write, op)

    async def _submit(self, fn: Callable[..., T], *args: Any) -> T:
        with self._lock:
            if self._pool is None:
                self._pool = concurrent.futures.ThreadPoolExecutor(_SHARED_WORKERS, thread_name_prefix="hermes-llm-ledger")
        done = self._pool.submit(fn, *args)
        try:
            return await asyncio.wrap_future(done)
        except asyncio.CancelledError:
            done.add_done_callback(self._give_back)
            raise

    def _give_back(self, done: concurrent.futures.Future[Any]) -> None:
        if not done.cancelled() and done.exception() is None and isinstance(done.result(), Reservation):
            assert self._pool is not None
            reservation, counters = done.result(), self._ledger.counters
            if reservation.counted and counters is not None:
                self._pool.submit(counters.settle, reservation, 0, 0.0)
            else:
                self._pool.submit(self._ledger.write, self._ledger.settling(reservation, 0, 0.0))

    def _put(self, op: Callable[[Any], Any], future: asyncio.Future[Any]) -> None:
        self._queue.put((op, future))
        with self._lock:
            if not self._running:
                self._running = True
                threading.Thread(target=self._work, name="hermes-llm-ledger", daemon=True).start()

    def _resolve(self, future: asyncio.Future[Any], outcome: tuple[bool, Any]) -> None:
        """Hand `outcome` to its caller."""
        if future.cancelled():
            if outcome[0] and isinstance(outcome[1], Reservation):
                self._put(self._ledger.settling(outcome[1], 0, 0.0), future.get_loop().create_future())
        elif outcome[0]:
            future.set_result(outcome[1])
        else:
            future.set_exception(outcome[1])

    def _work(self) -> None:
        while True:
            try:
                batch = [self._queue.get(timeout=self.IDLE)]
            except queue.Empty:
                with self._lock:
                    if self._queue.empty():
                        self._running = False
                        return
                continue
            while True:
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            outcomes: list[tuple[bool, Any]] = []
            try:
                self._ledger.catch_up()
                with self._ledger._writing() as db:
                    for op, _ in batch:
                        try:
                            outcomes.append((True, op(db)))
                        except sqlite3.Error:
                            raise
                        except Exception as exc:  # noqa: BLE001 - that operation's own outcome
                            outcomes.append((False, exc))
            except BaseException as exc:  # noqa: BLE001 - the transaction failed: every operation in it did
                outcomes = [(False, exc)] * len(batch)
            for (_, future), outcome in zip(batch, outcomes):
                try:
                    future.get_loop().call_soon_threadsafe(self._resolve, future, outcome)
                except RuntimeError:  # its loop is closed: nobody waits for it any more
                    pass
