"""The budgets' hot counters in Redis (`state.redis_url` or `HERMES_REDIS_URL`), the ledger staying the truth.

A call reserves on every holder it has in one Lua script (all of them or none), so a reservation is
one round trip to Redis instead of two to PostgreSQL. Per holder Redis keeps its day's and month's
settled totals (loaded from the ledger), what the calls running now hold (`ht`, `hc`), and each
running call (`:run`, by expiry; `:calls`, what it holds). A settlement first turns the call's
reservation into what it used (still held), then writes the call to the ledger (by its own id, so
that writing it twice counts it once), then moves it from held to settled. A call whose ledger
write is not confirmed (its host was killed) expires with its lease, as a reservation does.

A call waits for one round trip to Redis, its reservation: a sync call's on its own thread, an async
call's from its own event loop (`areserve`: redis-py's asyncio client, the loop never blocked).
It hands its settlement over (`hand_over`): the rest, from the usage replacing the reservation in
Redis to the ledger's write, is done on the counters' own thread, which batches what comes in
meanwhile and waits a few seconds for more before it ends (until then the reservation, an upper
bound, is what Redis holds for the call). A reservation's script run twice with the same ids (a
client retrying after a timeout) holds once.

The counters are rebuilt from the ledger when they are missing (Redis restarted, a new day) and
every `RECONCILE_EVERY` seconds a holder is used, so they never drift for long; the rebuild takes
off what the calls still held have already written to the ledger, so nothing is counted twice, and
reads again when a call it could not see (reserved after it read the calls held) settled before it
was done, and remembers what it takes off as settled (another host's rebuild may have read the
ledger before those calls were written), so nothing is left out either. A refusal is checked against
the ledger first: counters above the truth never refuse a call. Redis out of reach (refusing
connections): the ledger's own reservations are used (PostgreSQL's row checks), and Redis is tried
again a second later. The ledger does not see what Redis holds, so a Redis that is only slow
(timeouts under load) is never taken for gone: a step is asked again for `PATIENCE` seconds, then
the call is told (`Unanswered`) and waits, up to its time limit (`gate.admit`: refused then, or on
the ledger alone with `on_store_error: open`). The scripts name keys they build themselves: a single
Redis server (or a primary with replicas), not a Redis Cluster.
"""

from __future__ import annotations

import asyncio
import functools
import os
import queue
import secrets
import threading
import time
from collections.abc import Awaitable, Callable, Generator, Sequence
from pathlib import Path
from typing import Any, TypeVar

from .. import config_keys as keys
from .._errors import ConfigError, MemoryStoreError
from .._redact import redact_secrets
from . import exiting, onloop
from .onloop import SOCKET_TIMEOUT
from .budget import AMOUNTS, Budget, refused
from .holds import Busy, Hold, Reservation, Unanswered, _iso, _periods, now
from .ledger import _PRUNE_EVERY, Ledger
from .scripts import CONFIRM, REBUILD, RESERVE, SETTLE

__all__ = ["ENV", "Counters", "redis_url"]

T = TypeVar("T")

ENV = "HERMES_REDIS_URL"
PREFIX = "hermes:budgets:"
RECONCILE_EVERY = 2.0  # seconds between two rebuilds of a holder's counters from the ledger, per process
RETRY_AFTER = 1.0  # seconds Redis is left alone after it refused a connection
PATIENCE = 10.0  # seconds a reservation asks a Redis that does not answer, before its call waits and asks again
IDLE = 5.0  # seconds the counters' thread waits for the next settlement before it ends

def redis_url(home: Path | None) -> str | None:
    """`HERMES_REDIS_URL`, else `state.redis_url` in `home`'s config.yaml; None when neither is set."""
    raw = os.environ.get(ENV)
    if not raw:
        from .._config.file import load_config

        raw = load_config(home).read(keys.STATE_REDIS_URL)
    if not raw:
        return None
    if not raw.startswith(("redis://", "rediss://", "unix://")):
        raise ConfigError(f"{ENV if os.environ.get(ENV) else 'state.redis_url'} must be a redis:// URL "
                          f"(got {redact_secrets(raw)!r}); leave it out to keep the budgets' counters in the ledger")
    return raw



class Counters:
    """One process's way to the fleet's counters in Redis at `url`, over `ledger` (the truth)."""

    def __init__(self, url: str, ledger: Ledger) -> None:
        try:
            import redis
            from redis.backoff import NoBackoff
            from redis.retry import Retry
        except ImportError:
            raise ConfigError("state.redis_url is set but redis-py is not installed: pip install "
                              "'hermes-core[redis]' (or leave state.redis_url out)") from None
        self.url, self.ledger = url, ledger
        self._errors = (redis.RedisError, OSError)
        self._slow = (redis.TimeoutError, TimeoutError)  # not answered in time: asked again, never out of reach
        self._client = redis.Redis.from_url(url, socket_timeout=SOCKET_TIMEOUT, socket_connect_timeout=1.0,
                                            retry=Retry(NoBackoff(), 1),
                                            retry_on_error=[redis.ConnectionError, redis.TimeoutError])
        self._reserve = self._client.register_script(RESERVE)
        self._settle = self._client.register_script(SETTLE)
        self._confirm = self._client.register_script(CONFIRM)
        self._rebuild = self._client.register_script(REBUILD)
        self._down_until = 0.0
        self._rebuilt: dict[tuple[str, str], float] = {}  # (holder, day) -> when its counters were last rebuilt
        # settlements to write: the ledger's operation, the call's (prefix, id) pairs in Redis, the SETTLE
        # script's arguments when it is still to run (handed over)
        self._queue: queue.SimpleQueue[tuple[Any, list[Any], list[Any] | None]] = queue.SimpleQueue()
        self._done = threading.Condition()  # guards the counts and `_writing`
        self._queued = self._handled = 0  # settlements put on the queue, and handled (written or kept for later)
        self._writing = False

    @property
    def up(self) -> bool:
        """False for `RETRY_AFTER` seconds after Redis could not be reached."""
        return time.monotonic() >= self._down_until

    def _failed(self, error: BaseException) -> None:
        if not isinstance(error, self._slow):  # refused, reset: out of reach (a timeout is only slow)
            self._down_until = time.monotonic() + RETRY_AFTER

    def _patiently(self, call: Callable[[], T]) -> T:
        """`call` (a script or a rebuild: each does its work once however often it runs) again after
        each timeout, for up to `PATIENCE` seconds: then `Unanswered`."""
        deadline = time.monotonic() + PATIENCE
        while True:
            try:
                return call()
            except self._slow as exc:
                if time.monotonic() >= deadline:
                    raise self._unanswered(exc) from None

    def _unanswered(self, error: BaseException) -> Unanswered:
        return Unanswered(f"Redis ({redact_secrets(self.url)}) did not answer for {PATIENCE:.0f} s ({error})")

    async def _apatiently(self, call: Callable[[], Awaitable[T]]) -> T:
        deadline = time.monotonic() + PATIENCE
        while True:
            try:
                return await call()
            except self._slow as exc:
                if time.monotonic() >= deadline:
                    raise self._unanswered(exc) from None

    # -- reserving -------------------------------------------------------------------------------

    def reserve(self, budgets: Sequence[Budget], tokens: int, cost: float, lease: float) -> Reservation | Busy | None:
        """The call's reservation on every holder of `budgets` (or `Busy`, or the refusal raised, as
        `Ledger.reserving` answers); None when Redis refuses connections (use the ledger); `Unanswered`
        when it does not answer for `PATIENCE` seconds (the call waits, and asks again)."""
        if not self.up:
            return None
        steps = self._reserving(budgets, tokens, cost, lease)
        given: Any = None
        try:
            while True:
                try:
                    step = steps.send(given)
                except StopIteration as done:
                    return done.value  # type: ignore[no-any-return]
                given = self._patiently(functools.partial(self._reserve, args=step) if isinstance(step, list)
                                        else functools.partial(self.rebuild, *step))
        except self._errors as exc:
            self._failed(exc)
            return None

    async def areserve(self, budgets: Sequence[Budget], tokens: int, cost: float,
                       lease: float) -> Reservation | Busy | None:
        """`reserve` from the caller's event loop: the script on the loop's own connection to Redis
        (awaited, never blocking the loop), the counters' rebuild from the ledger (every few seconds)
        on a thread. A caller cancelled meanwhile gives back what was reserved."""
        if not self.up:
            return None
        task = asyncio.ensure_future(self._areserve(budgets, tokens, cost, lease))
        try:
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            task.add_done_callback(self._give_back)
            raise

    async def _areserve(self, budgets: Sequence[Budget], tokens: int, cost: float,
                        lease: float) -> Reservation | Busy | None:
        steps = self._reserving(budgets, tokens, cost, lease)
        given: Any = None
        try:
            reserve = await onloop.script(self.url, RESERVE)
            while True:
                try:
                    step = steps.send(given)
                except StopIteration as done:
                    return done.value  # type: ignore[no-any-return]
                if isinstance(step, list):
                    given = await self._apatiently(functools.partial(reserve, args=step))
                else:
                    given = await self._apatiently(functools.partial(asyncio.to_thread, self.rebuild, *step))
        except self._errors as exc:
            self._failed(exc)
            return None

    def _give_back(self, task: asyncio.Future[Any]) -> None:
        if not task.cancelled() and task.exception() is None and isinstance(task.result(), Reservation):
            self.hand_over(task.result(), 0, 0.0)

    def _reserving(self, budgets: Sequence[Budget], tokens: int, cost: float,
                   lease: float) -> Generator[list[Any] | tuple[Budget, tuple[str, str, str, str]], Any,
                                              Reservation | Busy]:
        """`reserve`, written once for both kinds of caller: it yields the reservation script's
        arguments (to be sent its answer) or a holder to rebuild (`rebuild`'s arguments)."""
        moment = now()
        periods = [_periods(moment, budget.timezone) for budget in budgets]
        for budget, found in zip(budgets, periods):
            if time.monotonic() - self._rebuilt.get((budget.who, found[0]), float("-inf")) >= RECONCILE_EVERY:
                yield budget, found
        checked = False  # a refusal read from the counters is checked against the ledger once
        for _ in range(3):
            base = -secrets.randbits(62) - len(budgets)
            holds = [Hold(base + index, budget.who, found[0], found[1], moment)
                     for index, (budget, found) in enumerate(zip(budgets, periods))]
            args: list[Any] = [moment, tokens, cost, moment + lease, len(budgets)]
            for budget, hold in zip(budgets, holds):
                args += [PREFIX + budget.who, hold.id, hold.day, hold.month,
                         *("" if (value := getattr(budget, name)) is None else value
                           for name in (*AMOUNTS, "requests_per_minute", "max_concurrent"))]
            answer = [item.decode() if isinstance(item, bytes) else item for item in (yield args)]
            if answer[0] == "ok":
                return Reservation(tuple(holds), counted=True)
            budget, found = budgets[int(answer[1])], periods[int(answer[1])]
            if answer[0] == "load":
                yield budget, found
                continue
            if answer[0] == "refused":  # checked against the truth first: stale counters never refuse
                if not checked:
                    checked = True
                    yield budget, found
                    continue
                name = answer[2]
                asked = tokens if name == "tokens_per_day" else cost
                raise refused(budget, name, float(answer[3]), asked, float(getattr(budget, name)),
                              found[3] if name == "cost_per_month" else found[2])
            return self._busy(budget, found, answer, tokens, cost)
        # the counters could not be loaded (settlements kept coming in): wait a moment and try again (the
        # ledger's own reservations would not see the calls Redis holds)
        budget = budgets[0]
        name, limit = next(iter(budget.limits()), ("tokens_per_day", 0.0))
        return Busy(budget, name, 0.0, limit, None, periods[0][2], reserved=True, asked=tokens)

    def _busy(self, budget: Budget, found: tuple[str, str, str, str], answer: list[Any], tokens: int,
              cost: float) -> Busy:
        name, used, retry, reserved = answer[2], float(answer[3]), float(answer[4]), answer[5] == "1"
        limit = float(getattr(budget, name))
        if reserved:
            return Busy(budget, name, used, limit, None, found[3] if name == "cost_per_month" else found[2],
                        reserved=True, asked=tokens if name == "tokens_per_day" else cost)
        if name == "requests_per_minute" and retry > 0 and retry != float("inf"):
            return Busy(budget, name, used, limit, retry, _iso(now() + retry, budget.timezone))
        return Busy(budget, name, used, limit, None if retry < 0 else retry, "")

    def rebuild(self, budget: Budget, periods: tuple[str, str, str, str]) -> bool:
        """`budget`'s holder's counters of its day and month set to the ledger's: whether they changed
        by more than a rounding (a refusal read from counters above the truth is then tried again).
        A ledger out of reach leaves counters that are there as they are."""
        who, (day, month) = budget.who, periods[:2]
        prefix = PREFIX + who
        self._rebuilt[(who, day)] = time.monotonic()
        for _ in range(5):
            with self._client.pipeline(transaction=True) as pipe:  # one moment: the calls held, and how many settled
                pipe.hkeys(prefix + ":calls")
                pipe.hmget(prefix + ":" + day, "t", "c")
                pipe.get(prefix + ":cseq")
                ids, before, seq = pipe.execute()
            held = [item.decode() if isinstance(item, bytes) else str(item) for item in ids]
            try:
                figures, written = self._truth(who, day, month, held)
            except MemoryStoreError:
                if self._client.hexists(prefix + ":" + day, "ok") and self._client.hexists(prefix + ":" + month, "ok"):
                    return False  # Redis carries on alone until the ledger is back
                raise
            if self._rebuild(args=[prefix, day, month, int(seq or 0), time.time(), *figures, len(held), *held,
                                   *written]):
                if now() - self.ledger._pruned.get(who, float("-inf")) >= _PRUNE_EVERY:  # the ledger's old calls
                    self.ledger.write(lambda db: self.ledger._prune(db, [budget], now()))
                tokens, cost = (float(value or 0) for value in before)
                return abs(tokens - figures[0]) > 0.5 or abs(cost - float(figures[1])) > 1e-9
        return False

    def _truth(self, who: str, day: str, month: str, held: list[str]) -> tuple[list[Any], list[str]]:
        """The ledger's totals of `who`'s day and month, and which of the calls `held` it has: in one
        statement, so one snapshot (a settlement committed between two reads would count once too few)."""
        ledger = self.ledger
        sql = f"SELECT period, tokens, cost, requests FROM {ledger.totals} WHERE who = ? AND period IN (?, ?)"
        params: list[Any] = [who, day, month]
        if held:
            sql += (f" UNION ALL SELECT CAST(id AS TEXT), 0, 0, -1 FROM {ledger.calls} WHERE id IN "
                    f"({', '.join('?' * len(held))})")
            params += [int(ident) for ident in held]
        with ledger._reading() as db:
            found = [] if db is None else db.execute(sql, params).fetchall()
        rows = {str(period): (int(tokens), float(cost), int(requests)) for period, tokens, cost, requests in found
                if requests != -1}
        written = [str(row[0]) for row in found if row[3] == -1]
        d, m = rows.get(day, (0, 0.0, 0)), rows.get(month, (0, 0.0, 0))
        return [d[0], repr(d[1]), repr(m[1]), d[2]], written

    def held(self, who: str, zone: str, period: str) -> tuple[int, float]:
        """What `who`'s running calls (unexpired) hold in Redis now, in its current `period` ("day" or
        "month") of time zone `zone`: tokens and cost; nothing when Redis cannot be reached."""
        moment = now()
        wanted = _periods(moment, zone)[0 if period == "day" else 1]
        try:
            ids: list[Any] = list(self._client.zrangebyscore(f"{PREFIX}{who}:run", f"({moment}", "+inf"))
            found = self._client.hmget(f"{PREFIX}{who}:calls", ids) if ids else []
        except self._errors:
            return 0, 0.0
        tokens, cost = 0, 0.0
        for entry in found:
            parts = entry.decode().split() if isinstance(entry, bytes) else []
            if len(parts) == 5 and wanted in (parts[3], parts[4]):
                tokens, cost = tokens + round(float(parts[1])), cost + float(parts[2])
        return tokens, cost

    # -- settling --------------------------------------------------------------------------------

    def hand_over(self, reservation: Reservation, tokens: int, cost: float) -> None:
        """The call's settlement, with nothing for the caller to wait for: on the counters' own thread
        its usage replaces its reservation in Redis (still held), then it is written to the ledger (the
        truth; kept for later when it is out of reach), then settled in Redis. Until then the
        reservation, an upper bound, is what Redis holds for the call."""
        pairs = [value for hold in reservation.holds for value in (PREFIX + hold.who, hold.id)]
        self._put((self.ledger.settling(reservation, tokens, cost), pairs, [tokens, cost, *pairs]))

    def _put(self, item: tuple[Any, list[Any], list[Any] | None]) -> None:
        with self._done:
            if not self._queued:
                exiting.watch(self.ledger)  # a host that exits writes what its calls used first
            self._queued += 1
            self._queue.put(item)
            if not self._writing:
                self._writing = True
                threading.Thread(target=self._write, name="hermes-llm-counters", daemon=True).start()

    def _write(self) -> None:
        """The settlements waiting: those handed over settled in Redis first, then all written to the
        ledger together, then settled in Redis together; the ledger's settlements kept for later
        retried every half second. The thread stays for `IDLE` seconds with nothing to do (starting
        one is most of what a settlement costs), then ends."""
        idle = time.monotonic()
        while True:
            try:
                batch = [self._queue.get(timeout=0.5)]
            except queue.Empty:
                batch = []
            while True:
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            if batch or self.ledger.pending():
                self._written(batch)
                idle = time.monotonic()
            with self._done:
                self._handled += len(batch)
                self._done.notify_all()
                if self._queue.empty() and not self.ledger.pending() and time.monotonic() - idle >= IDLE:
                    self._writing = False
                    return

    def _written(self, batch: list[tuple[Any, list[Any], list[Any] | None]]) -> None:
        for index, (op, pairs, settling) in enumerate(batch):
            if settling is not None:
                try:
                    self._settle(args=settling)
                except self._errors as exc:
                    self._failed(exc)
                    batch[index] = (op, [], None)  # the next rebuild counts it from the ledger
        try:
            if batch:
                self.ledger.write(lambda db: [op(db) for op, _, _ in batch])
            else:
                self.ledger.catch_up()
        except MemoryStoreError:
            for op, _, _ in batch:
                self.ledger.later(op)  # held in Redis until their lease ends; counted once the ledger has them
            return
        pairs = [value for _, found, _ in batch for value in found]
        if pairs:
            try:
                self._confirm(args=[time.time(), *pairs])
            except self._errors as exc:
                self._failed(exc)

    def flush(self, timeout: float = 10.0) -> bool:
        """Wait until every settlement made so far is written, or kept for later when the ledger is out
        of reach (`Ledger.pending`): whether it was within `timeout` seconds."""
        with self._done:
            target = self._queued
            return self._done.wait_for(lambda: self._handled >= target, timeout)

    def unhandled(self) -> int:
        """How many settlements are still to be written (or kept for later)."""
        with self._done:
            return self._queued - self._handled

    def close(self) -> None:
        self.flush()
        self._client.close()
