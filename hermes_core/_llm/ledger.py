"""`$HERMES_HOME/llm-usage.db`: every budgeted call's tokens and cost, by who made it, day and
month, shared by every `hermes` process on the machine.

A call first reserves its worst case in one short transaction that also checks its budget, so two
calls (or two processes) can never both take the last of it; the answer's real usage then replaces
the reservation, and a failed call gives it back (its row stays, as a request that was made). A
process killed between the two leaves a reservation that expires (the call's time limit plus a
minute) instead of holding the budget for good. Commits do not wait for the disk (WAL, synchronous
NORMAL): they survive a crash of the process, and a power loss can forget the last few.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import os
import queue
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from typing import Any, TypeVar

import attrs

from .._sqlite import SqliteFile
from .._config.config import Config
from .budget import AMOUNTS, HOST, Budget, shown, budget_for, refused

__all__ = ["Busy", "Ledger", "LedgerThread", "Reservation", "NOW_VARIABLE", "nearly_spent", "now"]

NOW_VARIABLE = "HERMES_LLM_BUDGET_NOW"  # a fixed clock (UNIX seconds) for tests of period boundaries
T = TypeVar("T")
_HOLD = 60.0  # seconds a reservation outlives its call's time limit
_MINUTE = 60.0


def now() -> float:
    fixed = os.environ.get(NOW_VARIABLE)
    return float(fixed) if fixed else time.time()


def _periods(moment: float, zone: str) -> tuple[str, str, str, str]:
    """The day and month of `moment` in `zone`, and when each ends (ISO 8601)."""
    from zoneinfo import ZoneInfo

    local = dt.datetime.fromtimestamp(moment, ZoneInfo(zone))
    day_end = dt.datetime.combine(local.date() + dt.timedelta(days=1), dt.time(), local.tzinfo)
    month_end = dt.datetime(local.year + local.month // 12, local.month % 12 + 1, 1, tzinfo=local.tzinfo)
    return local.strftime("%Y-%m-%d"), local.strftime("%Y-%m"), day_end.isoformat(), month_end.isoformat()


def _iso(moment: float, zone: str) -> str:
    from zoneinfo import ZoneInfo

    return dt.datetime.fromtimestamp(moment, ZoneInfo(zone)).isoformat(timespec="seconds")


@attrs.frozen
class Reservation:
    """What one call holds of its budget until it settles: its row, and the day and month it counts in."""

    id: int
    who: str
    day: str
    month: str


@attrs.frozen
class Busy:
    """A limit has no room for the call now: `retry_in` seconds until it may have (None: when a
    running call ends, unknown), and the refusal should the call not wait. `reserved`: an amount
    that the calls running now have reserved stands in the way (what was spent leaves room), so
    the call waits for them to settle whatever `on_limit` says (it governs rates)."""

    name: str
    used: float
    limit: float
    retry_in: float | None
    resets: str
    reserved: bool = False
    asked: float = 1  # what the call asks of the limit

    def error(self, budget: Budget, waited: float | None = None) -> Exception:
        return refused(budget, self.name, self.used, self.asked, self.limit, self.resets, waited)


_NOTHING = dict.fromkeys(("tokens_per_day", "cost_per_day", "cost_per_month", "requests_per_minute",
                          "max_concurrent"), 0.0)


class Ledger(SqliteFile):
    """What each plugin (and the host) spent. `totals` holds each one's settled tokens, cost and
    requests per day and per month; `calls` only the calls of the last minute and those still
    running (their reservations), so that no query reads more rows than that, however long the
    ledger has been kept."""

    what = "LLM usage ledger"
    schema_version = 3
    synchronous = "NORMAL"
    schema = """
        DROP TABLE IF EXISTS spend;
        DROP TABLE IF EXISTS calls;
        CREATE TABLE totals (who TEXT NOT NULL, period TEXT NOT NULL, tokens INTEGER NOT NULL DEFAULT 0,
                             cost REAL NOT NULL DEFAULT 0, requests INTEGER NOT NULL DEFAULT 0,
                             PRIMARY KEY (who, period)) WITHOUT ROWID;
        CREATE TABLE calls (id INTEGER PRIMARY KEY, who TEXT NOT NULL, day TEXT NOT NULL, month TEXT NOT NULL,
                            started REAL NOT NULL, tokens INTEGER NOT NULL, cost REAL NOT NULL, expires REAL);
        CREATE INDEX calls_started ON calls (who, started);
        CREATE INDEX calls_running ON calls (who, expires) WHERE expires IS NOT NULL;
    """

    def __init__(self, home: Path) -> None:
        super().__init__(home / "llm-usage.db")

    def write(self, op: Callable[[sqlite3.Connection], T]) -> T:
        """`op` in a write transaction of its own."""
        with self._writing() as db:
            return op(db)

    def reserving(self, budget: Budget, tokens: int, cost: float, seconds: float) -> Callable[[sqlite3.Connection],
                                                                                                Reservation | Busy]:
        """The operation (for `write`, or a `LedgerThread`) that reserves `tokens` and `cost` for a call
        of `budget`'s owner that may take `seconds`: it answers the reservation, or `Busy` when a
        rate limit has no room now, and raises `PluginLlmBudgetError` when the call would pass an
        amount (nothing is reserved then)."""
        def op(db: sqlite3.Connection) -> Reservation | Busy:
            moment = now()
            day, month, day_end, month_end = _periods(moment, budget.timezone)
            limits = budget.limits()
            # what no query needs any more: calls over a minute old that settled, or whose reservation expired
            db.execute("DELETE FROM calls WHERE who = ? AND started <= ? AND (expires IS NULL OR expires <= ?)",
                       (budget.who, moment - _MINUTE, moment))
            if limits:
                used = self._used(db, budget.who, day, month, moment, {name for name, _ in limits})
                asked = {"tokens_per_day": tokens, "cost_per_day": cost, "cost_per_month": cost}
                spent: dict[str, float] | None = None
                for name, limit in limits:
                    if name in AMOUNTS and used[name] + asked[name] > limit:
                        resets = month_end if name == "cost_per_month" else day_end
                        spent = spent if spent is not None else self._spent(db, budget.who, day, month)
                        if spent[name] + asked[name] > limit:  # it cannot fit even once the others settle
                            raise refused(budget, name, spent[name], asked[name], limit, resets)
                        return Busy(name, used[name], limit, None, resets, reserved=True, asked=asked[name])
                for name, limit in limits:
                    if name not in AMOUNTS and used[name] + 1 > limit:
                        return self._busy(db, budget, name, used[name], limit, moment)
            row = db.execute(
                "INSERT INTO calls (who, day, month, started, tokens, cost, expires) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (budget.who, day, month, moment, tokens, cost, moment + seconds + _HOLD)).lastrowid
            return Reservation(int(row or 0), budget.who, day, month)

        return op

    @staticmethod
    def _busy(db: sqlite3.Connection, budget: Budget, name: str, used: float, limit: float, moment: float) -> Busy:
        if name == "max_concurrent" or limit < 1:
            return Busy(name, used, limit, None if limit >= 1 else float("inf"), "")
        # the call fits once enough of the minute's requests are older than a minute
        (oldest,) = db.execute("SELECT started FROM calls WHERE who = ? AND started > ? ORDER BY started "
                               "LIMIT 1 OFFSET ?", (budget.who, moment - _MINUTE, int(used - limit))).fetchone()
        return Busy(name, used, limit, max(oldest + _MINUTE - moment, 0.001), _iso(oldest + _MINUTE, budget.timezone))

    @staticmethod
    def _spent(db: sqlite3.Connection, who: str, day: str, month: str) -> dict[str, float]:
        """What `who`'s settled calls used of each amount (no reservation of a running call counted)."""
        tokens, cost = db.execute("SELECT COALESCE(SUM(tokens), 0), COALESCE(SUM(cost), 0) FROM totals "
                                  "WHERE who = ? AND period = ?", (who, day)).fetchone()
        (monthly,) = db.execute("SELECT COALESCE(SUM(cost), 0) FROM totals WHERE who = ? AND period = ?",
                                (who, month)).fetchone()
        return {"tokens_per_day": float(tokens), "cost_per_day": float(cost), "cost_per_month": float(monthly)}

    @staticmethod
    def _used(db: sqlite3.Connection, who: str, day: str, month: str, moment: float,
              names: set[str] | None = None) -> dict[str, float]:
        """What `who` used of each of `names` (all when None): settled totals and running reservations."""
        out: dict[str, float] = {}
        running = "FROM calls WHERE who = ? AND expires IS NOT NULL AND expires > ?"
        if names is None or names & {"tokens_per_day", "cost_per_day"}:
            tokens, cost = db.execute(
                f"SELECT COALESCE(SUM(tokens), 0), COALESCE(SUM(cost), 0) FROM (SELECT tokens, cost FROM totals "
                f"WHERE who = ? AND period = ? UNION ALL SELECT tokens, cost {running} AND day = ?)",
                (who, day, who, moment, day)).fetchone()
            out.update(tokens_per_day=float(tokens), cost_per_day=float(cost))
        if names is None or "cost_per_month" in names:
            (cost,) = db.execute(
                f"SELECT COALESCE(SUM(cost), 0) FROM (SELECT cost FROM totals WHERE who = ? AND period = ? "
                f"UNION ALL SELECT cost {running} AND month = ?)", (who, month, who, moment, month)).fetchone()
            out["cost_per_month"] = float(cost)
        if names is None or "requests_per_minute" in names:
            (count,) = db.execute("SELECT COUNT(*) FROM calls WHERE who = ? AND started > ?",
                                  (who, moment - _MINUTE)).fetchone()
            out["requests_per_minute"] = float(count)
        if names is None or "max_concurrent" in names:
            (count,) = db.execute(f"SELECT COUNT(*) {running}", (who, moment)).fetchone()
            out["max_concurrent"] = float(count)
        return out

    def used(self, budget: Budget) -> dict[str, float]:
        """What `budget`'s owner has used of each kind of limit now (0 for all before any call)."""
        moment = now()
        day, month, _, _ = _periods(moment, budget.timezone)
        with self._reading() as db:
            return dict(_NOTHING) if db is None else self._used(db, budget.who, day, month, moment)

    def spent(self, who: str, zone: str, period: str) -> dict[str, float]:
        """What `who` used in the current `period` ("day" or "month") of time zone `zone`: tokens, cost
        and requests, counting the reservations of calls still running."""
        moment = now()
        day, month, _, _ = _periods(moment, zone)
        column, value = ("day", day) if period == "day" else ("month", month)
        with self._reading() as db:
            if db is None:
                return {"tokens": 0, "cost": 0.0, "requests": 0}
            tokens, cost, requests = db.execute(
                f"SELECT COALESCE(SUM(tokens), 0), COALESCE(SUM(cost), 0), COALESCE(SUM(requests), 0) FROM "
                f"(SELECT tokens, cost, requests FROM totals WHERE who = ? AND period = ? UNION ALL "
                f"SELECT tokens, cost, 1 FROM calls WHERE who = ? AND {column} = ? AND expires > ?)",
                (who, value, who, value, moment)).fetchone()
        return {"tokens": int(tokens), "cost": float(cost), "requests": int(requests)}

    def days(self, since: str, who: str | None = None) -> list[tuple[str, int, float, int]]:
        """The settled totals of each day from `since` (`YYYY-MM-DD`, in each budget's time zone) on, of
        everyone together or of `who`: (day, tokens, cost, requests), by day."""
        return self._period_totals(since, who, "t.period")

    def holders(self, since: str) -> list[tuple[str, int, float, int]]:
        """Each holder's settled totals over the days from `since` on: (who, tokens, cost, requests), by who."""
        return self._period_totals(since, None, "t.who")

    def _period_totals(self, since: str, who: str | None, by: str) -> list[tuple[str, int, float, int]]:
        # Each holder's days are one range of the primary key (who, period), and the holders are
        # walked along it too: read in one statement, however many days and holders the ledger keeps.
        holders = ("SELECT ? AS w" if who is not None else
                   "WITH RECURSIVE holders(w) AS (SELECT min(who) FROM totals UNION ALL "
                   "SELECT (SELECT min(who) FROM totals WHERE who > w) FROM holders WHERE w IS NOT NULL) "
                   "SELECT w FROM holders WHERE w IS NOT NULL")
        with self._reading() as db:
            if db is None:
                return []
            rows = db.execute(
                f"SELECT {by}, sum(t.tokens), sum(t.cost), sum(t.requests) FROM ({holders}) AS h "
                "JOIN totals AS t ON t.who = h.w AND t.period >= ? AND length(t.period) = 10 "
                f"GROUP BY {by} ORDER BY {by}", (*((who,) if who is not None else ()), since)).fetchall()
        return [(str(r[0]), int(r[1]), float(r[2]), int(r[3])) for r in rows]

    def last_day(self, who: str) -> str | None:
        """The last day `who` made a request the ledger counted (None: none)."""
        with self._reading() as db:
            row = None if db is None else db.execute(
                "SELECT max(period) FROM totals WHERE who = ? AND length(period) = 10 AND requests > 0",
                (who,)).fetchone()
        return str(row[0]) if row and row[0] is not None else None

    def who(self) -> list[str]:
        """Every plugin (and `host`) the ledger has a call of."""
        with self._reading() as db:
            return [] if db is None else [row[0] for row in db.execute(
                "SELECT who FROM totals UNION SELECT who FROM calls ORDER BY who")]

    @staticmethod
    def settling(reservation: Reservation, tokens: int, cost: float) -> Callable[[sqlite3.Connection], None]:
        """The operation (for `write`, or a `LedgerThread`) by which a call's real usage replaces its
        reservation, added to its day's and month's totals (also when the reservation had expired
        meanwhile: what was used is always recorded). A call that got no answer settles to 0 and 0:
        it spent nothing, and still counts as a request."""
        def op(db: sqlite3.Connection) -> None:
            db.execute("UPDATE calls SET expires = NULL, tokens = ?, cost = ? WHERE id = ?",
                       (tokens, cost, reservation.id))
            db.executemany(
                "INSERT INTO totals (who, period, tokens, cost, requests) VALUES (?, ?, ?, ?, 1) ON CONFLICT (who, "
                "period) DO UPDATE SET tokens = tokens + excluded.tokens, cost = cost + excluded.cost, "
                "requests = requests + 1",
                [(reservation.who, period, tokens, cost) for period in (reservation.day, reservation.month)])

        return op


class LedgerThread:
    """The ledger's writes for async callers: on one thread of their own, off the event loop, and
    every write waiting when the thread comes round done in one transaction (100 concurrent calls
    cost a few commits, not 200). An operation that raises (a budget's refusal) fails alone, before
    it wrote anything; a SQLite error fails the whole transaction and every operation in it. The
    thread ends after a few idle seconds and starts again on the next write."""

    IDLE = 5.0

    def __init__(self, ledger: Ledger) -> None:
        self._ledger = ledger
        self._queue: queue.SimpleQueue[tuple[Callable[[sqlite3.Connection], Any], asyncio.Future[Any]]] = \
            queue.SimpleQueue()
        self._lock = threading.Lock()
        self._running = False

    async def write(self, op: Callable[[sqlite3.Connection], T]) -> T:
        """`op`'s result, once the transaction it ran in has committed."""
        future: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        self._put(op, future)
        return await future

    def _put(self, op: Callable[[sqlite3.Connection], Any], future: asyncio.Future[Any]) -> None:
        self._queue.put((op, future))
        with self._lock:
            if not self._running:
                self._running = True
                threading.Thread(target=self._work, name="hermes-llm-ledger", daemon=True).start()

    def _resolve(self, future: asyncio.Future[Any], outcome: tuple[bool, Any]) -> None:
        """Hand `outcome` to its caller; a reservation whose caller was cancelled meanwhile is given
        back at once rather than held until it expires."""
        if future.cancelled():
            if outcome[0] and isinstance(outcome[1], Reservation):
                self._put(Ledger.settling(outcome[1], 0, 0.0), future.get_loop().create_future())
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


NEARLY_SPENT = 0.8  # the share of an amount past which `hermes plugins doctor` warns


def nearly_spent(config: Config, home: Path, who: Iterable[str]) -> list[str]:
    """A warning for each budget amount of `who` (plugin ids, and `host`) past 80 % in its period;
    nothing is read when none of them has a budget or no call was ever recorded."""
    budgets = [budget for name in who if (budget := budget_for(config, name)) is not None]
    if not budgets or not (home / "llm-usage.db").exists():
        return []
    ledger, warnings = Ledger(home), []
    try:
        for budget in budgets:
            used = ledger.used(budget)
            day_end, month_end = _periods(now(), budget.timezone)[2:]
            for name, limit in budget.limits():
                if name in AMOUNTS and limit > 0 and used[name] >= NEARLY_SPENT * limit:
                    whose = "the host's own calls have" if budget.who == HOST else f"plugin {budget.who!r} has"
                    warnings.append(
                        f"{whose} used {used[name] / limit:.0%} of the LLM budget {budget.where}.{name} "
                        f"({shown(name, used[name])} of {shown(name, limit)}; it resets at "
                        f"{month_end if name == 'cost_per_month' else day_end})")
    finally:
        ledger.close()
    return warnings
