"""The budgets ledger: every budgeted call's tokens and cost, by who holds it (a plugin, the host,
an API key, a caller, the fleet), day and month. In `$HERMES_HOME/llm-usage.db`, shared by every
`hermes` process on the machine; with `state.url`, in the shared database (tables `budget_totals`
and `budget_calls`), shared by every host of the fleet.

A call first reserves its worst case on every holder it has, in one short transaction that also
checks their budgets, so two calls (or two processes, or two hosts) can never both take the last of
one: all of them or none. SQLite's write lock makes that transaction one at a time; PostgreSQL
takes a lock per holder first (an advisory transaction lock, in the holders' order, so two calls
never wait for each other in a circle). The answer's real usage then replaces the reservation, and
a failed call gives it back (its row stays, as a request that was made). A process killed between
the two leaves a reservation that expires (the call's time limit plus `budgets.reservation_ttl`)
instead of holding the budget for good. SQLite commits do not wait for the disk (WAL, synchronous
NORMAL): they survive a crash of the process, and a power loss can forget the last few.
"""

from __future__ import annotations

import datetime as dt
import os
import threading
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import attrs

from .._config.config import Config
from .._errors import MemoryStoreError
from .._store import Store, pg_schema_of
from .._store.migrate import Copy
from .._store.url import StateUrl
from .budget import AMOUNTS, HOST, Budget, shown, budget_for, refused

__all__ = ["Busy", "Hold", "Ledger", "Reservation", "NOW_VARIABLE", "nearly_spent", "now"]

NOW_VARIABLE = "HERMES_LLM_BUDGET_NOW"  # a fixed clock (UNIX seconds) for tests of period boundaries
T = TypeVar("T")
Op = Callable[[Any], T]  # an operation on one write transaction (a sqlite3 connection, or the floor's)
_MINUTE = 60.0
REFUSED = "refused:"  # a holder's refusals are counted in `totals` under the period "refused:<day>" (and month)


def now() -> float:
    fixed = os.environ.get(NOW_VARIABLE)
    if fixed:
        return float(fixed)
    import time

    return time.time()


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
class Hold:
    """What one call holds of one holder's budget: its row (0: none was written, the ledger was out
    of reach), and the day and month it counts in."""

    id: int
    who: str
    day: str
    month: str
    started: float


@attrs.frozen
class Reservation:
    """What one call holds until it settles: a `Hold` on each of its holders."""

    holds: tuple[Hold, ...]

    @property
    def who(self) -> str:
        return self.holds[0].who


@attrs.frozen
class Busy:
    """A limit of `budget` has no room for the call now: `retry_in` seconds until it may have (None:
    when a running call ends, unknown), and the refusal should the call not wait. `reserved`: an
    amount that the calls running now have reserved stands in the way (what was spent leaves room),
    so the call waits for them to settle whatever `on_limit` says (it governs rates)."""

    budget: Budget
    name: str
    used: float
    limit: float
    retry_in: float | None
    resets: str
    reserved: bool = False
    asked: float = 1  # what the call asks of the limit

    def error(self, waited: float | None = None) -> Exception:
        return refused(self.budget, self.name, self.used, self.asked, self.limit, self.resets, waited)


_NOTHING = dict.fromkeys(("tokens_per_day", "cost_per_day", "cost_per_month", "requests_per_minute",
                          "max_concurrent"), 0.0)

_SQLITE_SCHEMA = """
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
# The same tables in the shared database, named for the stage (`totals` and `calls` would be anyone's).
_PG_SCHEMA = pg_schema_of("""
        CREATE TABLE IF NOT EXISTS budget_totals (who TEXT NOT NULL, period TEXT NOT NULL,
                             tokens INTEGER NOT NULL DEFAULT 0, cost REAL NOT NULL DEFAULT 0,
                             requests INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (who, period));
        CREATE TABLE IF NOT EXISTS budget_calls (id INTEGER PRIMARY KEY, who TEXT NOT NULL, day TEXT NOT NULL,
                             month TEXT NOT NULL, started REAL NOT NULL, tokens INTEGER NOT NULL, cost REAL NOT NULL,
                             expires REAL);
        CREATE INDEX IF NOT EXISTS budget_calls_started ON budget_calls (who, started);
        CREATE INDEX IF NOT EXISTS budget_calls_running ON budget_calls (who, expires) WHERE expires IS NOT NULL;
    """)


class Ledger(Store):
    """What each holder spent. `totals` holds each one's settled tokens, cost and requests per day
    and per month (and its refusals); `calls` only the calls of the last minute and those still
    running (their reservations), so that no query reads more rows than that, however long the
    ledger has been kept."""

    what = "LLM usage ledger"
    stage = "budgets"
    schema_version = 3
    synchronous = "NORMAL"
    schema = _SQLITE_SCHEMA
    pg_schema = _PG_SCHEMA
    home_file = "llm-usage.db"

    def __init__(self, home: Path, *, url: StateUrl | str | None = None) -> None:
        super().__init__(Path(home) / self.home_file, url=url)
        shared = self.dialect == "postgresql"
        self.totals, self.calls = ("budget_totals", "budget_calls") if shared else ("totals", "calls")
        self._later: list[Op[None]] = []  # settlements made while the ledger was out of reach
        self._later_lock = threading.Lock()

    @classmethod
    def copies(cls, home: Path) -> list[Copy]:
        return []  # `totals` has no rowid to resume a copy by: `import_home` adds them in one transaction

    @classmethod
    def import_home(cls, home: Path, url: StateUrl) -> str | None:
        """For `hermes state migrate`: the home's settled totals (and refusals) added to the shared
        database's, once (a second run finds the mark it left and adds nothing); running calls stay."""
        import sqlite3

        from .._store.postgres import postgres

        path = Path(home) / cls.home_file
        if not path.exists():
            return None
        source = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            rows = source.execute("SELECT who, period, tokens, cost, requests FROM totals").fetchall()
        except sqlite3.Error as exc:
            raise MemoryStoreError(f"cannot read the {cls.what} {path}: {exc}", path=path) from None
        finally:
            source.close()
        database = postgres(url)
        database.prepare(cls)
        key = f"{path.resolve()}#totals"
        with database.transaction(None) as tx:
            if tx.execute("SELECT 1 FROM hermes_migrations WHERE source = ? AND tbl = ?",
                          (key, "budget_totals")).fetchone():
                return None
            tx.executemany("INSERT INTO budget_totals (who, period, tokens, cost, requests) VALUES (?, ?, ?, ?, ?) "
                           "ON CONFLICT (who, period) DO UPDATE SET tokens = budget_totals.tokens + excluded.tokens, "
                           "cost = budget_totals.cost + excluded.cost, requests = budget_totals.requests + "
                           "excluded.requests", rows)
            tx.execute("INSERT INTO hermes_migrations (source, tbl, last_rowid, copied) VALUES (?, ?, ?, ?)",
                       (key, "budget_totals", len(rows), len(rows)))
        return f"budget_totals    {len(rows):>8} added (every holder's spend by day and month)  from {path}"

    # -- writes ----------------------------------------------------------------------------------

    def write(self, op: Op[T]) -> T:
        """`op` in a write transaction of its own (after the settlements left for later, if any)."""
        self.catch_up()
        with self._writing() as db:
            return op(db)

    def later(self, op: Op[None]) -> None:
        """Keep `op` (a settlement that could not be written) for the next write that can."""
        with self._later_lock:
            self._later.append(op)

    def catch_up(self) -> int:
        """Write the settlements left for later in one transaction: how many; a `MemoryStoreError`
        (they are kept) when the ledger is still out of reach."""
        with self._later_lock:
            pending, self._later = self._later, []
        if not pending:
            return 0
        try:
            with self._writing() as db:
                for op in pending:
                    op(db)
        except BaseException:
            with self._later_lock:
                self._later[:0] = pending
            raise
        return len(pending)

    def reserving(self, budgets: Sequence[Budget], tokens: int, cost: float,
                  lease: float) -> Op[Reservation | Busy]:
        """The operation (for `write`, or a `LedgerThread`) that reserves `tokens` and `cost` on each
        of `budgets`' holders for a call, until it settles or `lease` seconds pass: it answers the reservation, or
        `Busy` when a rate limit has no room now, and raises `PluginLlmBudgetError` naming the
        holder when the call would pass an amount (nothing is reserved then, on any holder)."""
        calls = self.calls

        def op(db: Any) -> Reservation | Busy:
            if self.dialect == "postgresql":  # one holder's reservations one at a time, across hosts
                for who in sorted({budget.who for budget in budgets}):
                    db.execute("SELECT pg_advisory_xact_lock(hashtextextended(CAST(? AS TEXT), 0))",
                               (f"hermes-budget:{who}",)).fetchone()
            moment = now()
            holds: list[Hold] = []
            for budget in budgets:
                day, month, day_end, month_end = _periods(moment, budget.timezone)
                # what no query needs any more: calls over a minute old that settled, or whose reservation expired
                db.execute(f"DELETE FROM {calls} WHERE who = ? AND started <= ? AND (expires IS NULL OR expires <= ?)",
                           (budget.who, moment - _MINUTE, moment))
                busy = self._check(db, budget, tokens, cost, moment, (day, month, day_end, month_end))
                if busy is not None:
                    return busy
                holds.append(Hold(0, budget.who, day, month, moment))
            return Reservation(tuple(
                attrs.evolve(hold, id=int(db.execute(
                    f"INSERT INTO {calls} (who, day, month, started, tokens, cost, expires) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id",
                    (hold.who, hold.day, hold.month, moment, tokens, cost, moment + lease)
                ).fetchone()[0])) for hold in holds))

        return op

    def _check(self, db: Any, budget: Budget, tokens: int, cost: float, moment: float,
               periods: tuple[str, str, str, str]) -> Busy | None:
        """None when `budget` has room for the call; `Busy` when a rate has none now (or the running
        calls' reservations stand in the way); raises the refusal when an amount never will."""
        limits = budget.limits()
        if not limits:
            return None
        day, month, day_end, month_end = periods
        used = self._used(db, budget.who, day, month, moment, {name for name, _ in limits})
        asked = {"tokens_per_day": tokens, "cost_per_day": cost, "cost_per_month": cost}
        spent: dict[str, float] | None = None
        for name, limit in limits:
            if name in AMOUNTS and used[name] + asked[name] > limit:
                resets = month_end if name == "cost_per_month" else day_end
                spent = spent if spent is not None else self._spent(db, budget.who, day, month)
                if spent[name] + asked[name] > limit:  # it cannot fit even once the others settle
                    raise refused(budget, name, spent[name], asked[name], limit, resets)
                return Busy(budget, name, used[name], limit, None, resets, reserved=True, asked=asked[name])
        for name, limit in limits:
            if name not in AMOUNTS and used[name] + 1 > limit:
                return self._busy(db, budget, name, used[name], limit, moment)
        return None

    def _busy(self, db: Any, budget: Budget, name: str, used: float, limit: float, moment: float) -> Busy:
        if name == "max_concurrent" or limit < 1:
            return Busy(budget, name, used, limit, None if limit >= 1 else float("inf"), "")
        # the call fits once enough of the minute's requests are older than a minute
        (oldest,) = db.execute(f"SELECT started FROM {self.calls} WHERE who = ? AND started > ? ORDER BY started "
                               "LIMIT 1 OFFSET ?", (budget.who, moment - _MINUTE, int(used - limit))).fetchone()
        return Busy(budget, name, used, limit, max(oldest + _MINUTE - moment, 0.001),
                    _iso(oldest + _MINUTE, budget.timezone))

    @staticmethod
    def unrecorded(budgets: Sequence[Budget]) -> Reservation:
        """A reservation of nothing on each of `budgets`' holders, for a call let through while the
        ledger is out of reach (`budgets.on_store_error: open`): its settlement records what it used."""
        moment = now()
        return Reservation(tuple(Hold(0, budget.who, *_periods(moment, budget.timezone)[:2], moment)
                                 for budget in budgets))

    def settling(self, reservation: Reservation, tokens: int, cost: float) -> Op[None]:
        """The operation (for `write`, or a `LedgerThread`) by which a call's real usage replaces its
        reservation on each holder, added to their day's and month's totals (also when a reservation
        had expired meanwhile: what was used is always recorded). A call that got no answer settles to
        0 and 0: it spent nothing, and still counts as a request. Settling twice counts once."""
        calls, totals = self.calls, self.totals

        def op(db: Any) -> None:
            for hold in reservation.holds:
                if hold.id:
                    row = db.execute(f"SELECT expires FROM {calls} WHERE id = ? AND who = ? AND started = ?",
                                     (hold.id, hold.who, hold.started)).fetchone()
                    if row is not None and row[0] is None:
                        continue  # settled already
                    db.execute(f"UPDATE {calls} SET expires = NULL, tokens = ?, cost = ? WHERE id = ? AND who = ? "
                               "AND started = ?", (tokens, cost, hold.id, hold.who, hold.started))
                db.executemany(
                    f"INSERT INTO {totals} (who, period, tokens, cost, requests) VALUES (?, ?, ?, ?, 1) ON CONFLICT "
                    f"(who, period) DO UPDATE SET tokens = {totals}.tokens + excluded.tokens, "
                    f"cost = {totals}.cost + excluded.cost, requests = {totals}.requests + 1",
                    [(hold.who, period, tokens, cost) for period in (hold.day, hold.month)])

        return op

    def refusing(self, budget: Budget) -> Op[None]:
        """The operation that counts a refusal of `budget`'s holder in its day and month."""
        totals = self.totals

        def op(db: Any) -> None:
            day, month, _, _ = _periods(now(), budget.timezone)
            db.executemany(
                f"INSERT INTO {totals} (who, period, tokens, cost, requests) VALUES (?, ?, 0, 0, 1) ON CONFLICT "
                f"(who, period) DO UPDATE SET requests = {totals}.requests + 1",
                [(budget.who, REFUSED + period) for period in (day, month)])

        return op

    # -- reads -----------------------------------------------------------------------------------

    def _spent(self, db: Any, who: str, day: str, month: str) -> dict[str, float]:
        """What `who`'s settled calls used of each amount (no reservation of a running call counted)."""
        tokens, cost = db.execute(f"SELECT COALESCE(SUM(tokens), 0), COALESCE(SUM(cost), 0) FROM {self.totals} "
                                  "WHERE who = ? AND period = ?", (who, day)).fetchone()
        (monthly,) = db.execute(f"SELECT COALESCE(SUM(cost), 0) FROM {self.totals} WHERE who = ? AND period = ?",
                                (who, month)).fetchone()
        return {"tokens_per_day": float(tokens), "cost_per_day": float(cost), "cost_per_month": float(monthly)}

    def _used(self, db: Any, who: str, day: str, month: str, moment: float,
              names: set[str] | None = None) -> dict[str, float]:
        """What `who` used of each of `names` (all when None): settled totals and running reservations."""
        out: dict[str, float] = {}
        totals, calls = self.totals, self.calls
        running = f"FROM {calls} WHERE who = ? AND expires IS NOT NULL AND expires > ?"
        if names is None or names & {"tokens_per_day", "cost_per_day"}:
            tokens, cost = db.execute(
                f"SELECT COALESCE(SUM(tokens), 0), COALESCE(SUM(cost), 0) FROM (SELECT tokens, cost FROM {totals} "
                f"WHERE who = ? AND period = ? UNION ALL SELECT tokens, cost {running} AND day = ?) AS used",
                (who, day, who, moment, day)).fetchone()
            out.update(tokens_per_day=float(tokens), cost_per_day=float(cost))
        if names is None or "cost_per_month" in names:
            (cost,) = db.execute(
                f"SELECT COALESCE(SUM(cost), 0) FROM (SELECT cost FROM {totals} WHERE who = ? AND period = ? "
                f"UNION ALL SELECT cost {running} AND month = ?) AS used", (who, month, who, moment, month)).fetchone()
            out["cost_per_month"] = float(cost)
        if names is None or "requests_per_minute" in names:
            (count,) = db.execute(f"SELECT COUNT(*) FROM {calls} WHERE who = ? AND started > ?",
                                  (who, moment - _MINUTE)).fetchone()
            out["requests_per_minute"] = float(count)
        if names is None or "max_concurrent" in names:
            (count,) = db.execute(f"SELECT COUNT(*) {running}", (who, moment)).fetchone()
            out["max_concurrent"] = float(count)
        return out

    def used(self, budget: Budget) -> dict[str, float]:
        """What `budget`'s holder has used of each kind of limit now (0 for all before any call)."""
        moment = now()
        day, month, _, _ = _periods(moment, budget.timezone)
        with self._reading() as db:
            return dict(_NOTHING) if db is None else self._used(db, budget.who, day, month, moment)

    def spent(self, who: str, zone: str, period: str) -> dict[str, Any]:
        """What `who` used in the current `period` ("day" or "month") of time zone `zone`: tokens, cost
        and requests, counting the reservations of calls still running; of them, what is `reserved`
        now (tokens and cost); and the `refusals` of the period."""
        moment = now()
        day, month, _, _ = _periods(moment, zone)
        column, value = ("day", day) if period == "day" else ("month", month)
        with self._reading() as db:
            if db is None:
                return {"tokens": 0, "cost": 0.0, "requests": 0, "reserved_tokens": 0, "reserved_cost": 0.0,
                        "refusals": 0}
            tokens, cost, requests = db.execute(
                f"SELECT COALESCE(SUM(tokens), 0), COALESCE(SUM(cost), 0), COALESCE(SUM(requests), 0) FROM "
                f"(SELECT tokens, cost, requests FROM {self.totals} WHERE who = ? AND period = ? UNION ALL "
                f"SELECT tokens, cost, 1 FROM {self.calls} WHERE who = ? AND {column} = ? AND expires > ?) AS spent",
                (who, value, who, value, moment)).fetchone()
            held, holding = db.execute(
                f"SELECT COALESCE(SUM(tokens), 0), COALESCE(SUM(cost), 0) FROM {self.calls} WHERE who = ? "
                f"AND {column} = ? AND expires > ?", (who, value, moment)).fetchone()
            row = db.execute(f"SELECT requests FROM {self.totals} WHERE who = ? AND period = ?",
                             (who, REFUSED + value)).fetchone()
        return {"tokens": int(tokens), "cost": float(cost), "requests": int(requests), "reserved_tokens": int(held),
                "reserved_cost": float(holding), "refusals": int(row[0]) if row else 0}

    def who(self) -> list[str]:
        """Every holder (plugin ids, `host`, `key:<name>`, `caller:<id>`, `fleet`) the ledger has a call of."""
        with self._reading() as db:
            return [] if db is None else [str(row[0]) for row in db.execute(
                f"SELECT who FROM {self.totals} UNION SELECT who FROM {self.calls} ORDER BY who")]


NEARLY_SPENT = 0.8  # the share of an amount past which `hermes plugins doctor` warns


def nearly_spent(config: Config, home: Path, who: Iterable[str]) -> list[str]:
    """A warning for each budget amount of `who` (plugin ids, and `host`) past 80 % in its period;
    nothing is read when none of them has a budget or no call was ever recorded."""
    from .._store import state_url

    budgets = [budget for name in who if (budget := budget_for(config, name)) is not None]
    if not budgets:
        return []
    ledger = Ledger(home, url=state_url(home))
    if not ledger.exists():
        return []
    warnings = []
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
