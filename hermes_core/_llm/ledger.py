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

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import attrs

from .._errors import MemoryStoreError
from .._store import StateUrl, Store, pg_schema_of
from .._store.migrate import Copy
from .budget import AMOUNTS, Budget, refused
from .later import KeptForLater
from .holds import NOW_VARIABLE, Busy, Hold, Reservation, Settling, _iso, _periods, now

__all__ = ["Busy", "Hold", "Ledger", "Reservation", "NOW_VARIABLE", "now"]

T = TypeVar("T")
Op = Callable[[Any], T]  # an operation on one write transaction (a sqlite3 connection, or the floor's)
_MINUTE = 60.0
# The calls no query needs any more: settled over a minute ago; or reservations that expired unsettled
# a day ago (kept that long so that a late settlement, written once the ledger is back, finds its row:
# a row gone was settled, and a second settlement counts nothing).
_OLD = "((expires IS NULL AND started <= ?) OR (expires <= ? AND started <= ?))"
_KEEP_EXPIRED = 86400.0
_PRUNE_EVERY = 30.0  # seconds between two prunes of a holder's old calls in the shared database, per process
REFUSED = "refused:"  # a holder's refusals are counted in `totals` under the period "refused:<day>" (and month)


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


class Ledger(KeptForLater, Store):
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
        self._keep_for_later()
        self._pruned: dict[str, float] = {}  # when each holder's old calls were last pruned (shared database)
        self._add_up = type(self)._add_up.format(t=self.totals)
        self.counters: Any = None  # Redis's hot counters over this ledger (`counters.Counters`), when configured

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
        """`op` on the ledger (after the settlements left for later, if any): on SQLite in a write
        transaction of its own; on the shared database as statements that each commit (every
        operation there is written so that each statement leaves the ledger whole)."""
        self.catch_up()
        with self._statements() as db:
            return op(db)

    @contextmanager
    def _statements(self) -> Iterator[Any]:
        if self._pg is None:
            with self._writing() as db:
                yield db
        else:  # no BEGIN and COMMIT: two round trips fewer a write
            with self._pg.transaction(self, read_only=True) as db:
                yield db

    def reserving(self, budgets: Sequence[Budget], tokens: int, cost: float, lease: float, *,
                  look_first: bool = False) -> Op[Reservation | Busy]:
        """The operation (for `write`, or a `LedgerThread`) that reserves `tokens` and `cost` on each
        of `budgets`' holders for a call, until it settles or `lease` seconds pass: it answers the
        reservation, or `Busy` when a rate limit has no room now (or running calls' reservations
        stand in the way), and raises `PluginLlmBudgetError` naming the holder when the call would
        pass an amount (nothing is reserved then, on any holder).

        SQLite checks, then writes, in its one-at-a-time write transaction. The shared database
        writes the reservations first (one statement: on every holder or none), then reads what
        every holder has, its own and every other host's written reservations included, and takes
        its own back if that passes a limit: of two calls that cannot both fit, the one that reads
        last sees both, so the cap is never passed; two round trips, and no lock held across them.
        `look_first` (a call that found no room a moment ago) reads first, and writes nothing while
        there is still none: calls waiting for room do not take it from each other in turn."""
        if self._pg is None:
            return self._reserving_here(budgets, tokens, cost, lease)
        return self._reserving_shared(budgets, tokens, cost, lease, look_first)

    def _reserving_here(self, budgets: Sequence[Budget], tokens: int, cost: float,
                        lease: float) -> Op[Reservation | Busy]:
        def op(db: Any) -> Reservation | Busy:
            moment = now()
            holds: list[Hold] = []
            for budget in budgets:
                periods = _periods(moment, budget.timezone)
                db.execute(f"DELETE FROM {self.calls} WHERE who = ? AND {_OLD}",
                           (budget.who, moment - _MINUTE, moment, moment - _KEEP_EXPIRED))
                busy = self._check(db, budget, tokens, cost, moment, periods, own=False)
                if busy is not None:
                    return busy
                holds.append(Hold(0, budget.who, periods[0], periods[1], moment))
            return self._insert(db, holds, tokens, cost, moment + lease)

        return op

    def _reserving_shared(self, budgets: Sequence[Budget], tokens: int, cost: float, lease: float,
                          look_first: bool) -> Op[Reservation | Busy]:
        def op(db: Any) -> Reservation | Busy:
            moment = now()
            self._prune(db, budgets, moment)
            periods = [_periods(moment, budget.timezone) for budget in budgets]
            for budget, found in zip(budgets, periods) if look_first else ():
                busy = self._check(db, budget, tokens, cost, moment, found, own=False)
                if busy is not None:
                    return busy
            reservation = self._insert(db, [Hold(0, budget.who, day, month, moment)
                                            for budget, (day, month, _, _) in zip(budgets, periods)],
                                       tokens, cost, moment + lease)
            try:
                for budget, found in zip(budgets, periods):
                    busy = self._check(db, budget, tokens, cost, moment, found, own=True)
                    if busy is not None:
                        self._take_back(db, reservation)
                        return busy
            except BaseException:
                self._take_back(db, reservation)
                raise
            return reservation

        return op

    def _insert(self, db: Any, holds: list[Hold], tokens: int, cost: float, expires: float) -> Reservation:
        """The reservations of `holds` written in one statement."""
        rows = db.execute(
            f"INSERT INTO {self.calls} (who, day, month, started, tokens, cost, expires) VALUES "
            + ", ".join(["(?, ?, ?, ?, ?, ?, ?)"] * len(holds)) + " RETURNING id, who",
            [value for hold in holds for value in (hold.who, hold.day, hold.month, hold.started, tokens, cost,
                                                   expires)]).fetchall()
        ids = {str(who): int(ident) for ident, who in rows}
        return Reservation(tuple(attrs.evolve(hold, id=ids[hold.who]) for hold in holds))

    def _take_back(self, db: Any, reservation: Reservation) -> None:
        db.execute(f"DELETE FROM {self.calls} WHERE id IN ({', '.join('?' * len(reservation.holds))})",
                   [hold.id for hold in reservation.holds])

    def _prune(self, db: Any, budgets: Sequence[Budget], moment: float) -> None:
        """The calls no query needs any more deleted (`_OLD`), on the shared database at most every
        `_PRUNE_EVERY` seconds a holder."""
        due = [budget.who for budget in budgets if moment - self._pruned.get(budget.who, 0.0) >= _PRUNE_EVERY]
        if due:
            db.execute(f"DELETE FROM {self.calls} WHERE who IN ({', '.join('?' * len(due))}) AND {_OLD}",
                       (*due, moment - _MINUTE, moment, moment - _KEEP_EXPIRED))
            self._pruned.update(dict.fromkeys(due, moment))

    def _check(self, db: Any, budget: Budget, tokens: int, cost: float, moment: float,
               periods: tuple[str, str, str, str], *, own: bool) -> Busy | None:
        """None when `budget` has room for the call; `Busy` when a rate has none now (or the running
        calls' reservations stand in the way); raises the refusal when an amount never will. `own`:
        the call's own reservation is written already (and is not counted against it)."""
        limits = budget.limits()
        if not limits:
            return None
        day, month, day_end, month_end = periods
        used, spent = self._figures(db, budget.who, day, month, moment, {name for name, _ in limits})
        asked = {"tokens_per_day": tokens, "cost_per_day": cost, "cost_per_month": cost}
        if own:
            for name in used:
                used[name] -= asked.get(name, 1)
        for name, limit in limits:
            if name in AMOUNTS and used[name] + asked[name] > limit:
                resets = month_end if name == "cost_per_month" else day_end
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

    def settling(self, reservation: Reservation, tokens: int, cost: float) -> Settling:
        """The operation (for `write`, or a `LedgerThread`) by which a call's real usage replaces its
        reservation on each holder, added to their day's and month's totals (also when a reservation
        had expired meanwhile, up to a day: what was used is recorded). A call that got no answer
        settles to 0 and 0: it spent nothing, and still counts as a request. Settling twice counts once."""
        holds = reservation.holds
        started = holds[0].started if holds else 0.0
        counted = reservation.counted  # reserved in Redis's counters: written now, once

        def op(db: Any) -> None:
            if counted:
                self._write_counted(db, holds, tokens, cost)
                return
            ids = [hold.id for hold in holds if hold.id]
            if ids and self._pg is not None:  # one statement: the reservations settled and the totals added
                db.execute(
                    f"WITH settled AS (UPDATE {self.calls} SET expires = NULL, tokens = ?, cost = ? WHERE id IN "
                    f"({', '.join('?' * len(ids))}) AND started = ? AND expires IS NOT NULL RETURNING who, day, month) "
                    f"INSERT INTO {self.totals} (who, period, tokens, cost, requests) SELECT who, period, ?, ?, 1 "
                    "FROM (SELECT who, day AS period FROM settled UNION ALL SELECT who, month FROM settled) AS periods "
                    f"{self._add_up}", (tokens, cost, *ids, started, tokens, cost))
            elif ids:
                done = {str(row[0]) for row in db.execute(
                    f"UPDATE {self.calls} SET expires = NULL, tokens = ?, cost = ? WHERE id IN "
                    f"({', '.join('?' * len(ids))}) AND started = ? AND expires IS NOT NULL RETURNING who",
                    (tokens, cost, *ids, started)).fetchall()}
                self._add(db, [hold for hold in holds if hold.who in done], tokens, cost)
            # settled already, or gone (settled and pruned): nothing more; unrecorded (the ledger was out of reach): added
            self._add(db, [hold for hold in holds if not hold.id], tokens, cost)

        return Settling(reservation, tokens, cost, op)

    def _write_counted(self, db: Any, holds: Sequence[Hold], tokens: int, cost: float) -> None:
        """The settled call of `holds` (reserved in Redis, by ids of their own) written, and added to
        the totals, unless it was written already."""
        rows = "(" + ", ".join(["(?, ?, ?, ?, ?, ?, ?, NULL)"] * len(holds)) + ")"
        values = [value for hold in holds for value in (hold.id, hold.who, hold.day, hold.month, hold.started,
                                                        tokens, cost)]
        insert = (f"INSERT INTO {self.calls} (id, who, day, month, started, tokens, cost, expires) VALUES "
                  f"{rows[1:-1]} ON CONFLICT (id) DO NOTHING RETURNING who, day, month")
        if self._pg is not None:  # one statement: the call written and the totals added
            db.execute(f"WITH settled AS ({insert}) INSERT INTO {self.totals} (who, period, tokens, cost, requests) "
                       "SELECT who, period, ?, ?, 1 FROM (SELECT who, day AS period FROM settled UNION ALL "
                       f"SELECT who, month FROM settled) AS periods {self._add_up}", (*values, tokens, cost))
            return
        done = {str(row[0]) for row in db.execute(insert, values).fetchall()}
        self._add(db, [hold for hold in holds if hold.who in done], tokens, cost)

    _add_up = ("ON CONFLICT (who, period) DO UPDATE SET tokens = {t}.tokens + excluded.tokens, "
               "cost = {t}.cost + excluded.cost, requests = {t}.requests + excluded.requests")

    def _add(self, db: Any, holds: Sequence[Hold], tokens: int, cost: float) -> None:
        """`tokens`, `cost` and one request added to each of `holds`' day and month."""
        if holds:
            db.execute(f"INSERT INTO {self.totals} (who, period, tokens, cost, requests) VALUES "
                       + ", ".join(["(?, ?, ?, ?, 1)"] * 2 * len(holds)) + f" {self._add_up}",
                       [value for hold in holds for period in (hold.day, hold.month)
                        for value in (hold.who, period, tokens, cost)])

    def refusing(self, budget: Budget) -> Op[None]:
        """The operation that counts a refusal of `budget`'s holder in its day and month."""
        def op(db: Any) -> None:
            day, month, _, _ = _periods(now(), budget.timezone)
            db.execute(f"INSERT INTO {self.totals} (who, period, tokens, cost, requests) VALUES (?, ?, 0, 0, 1), "
                       f"(?, ?, 0, 0, 1) {self._add_up}", (budget.who, REFUSED + day, budget.who, REFUSED + month))

        return op

    # -- reads -----------------------------------------------------------------------------------

    def _figures(self, db: Any, who: str, day: str, month: str, moment: float,
                 names: set[str] | None = None) -> tuple[dict[str, float], dict[str, float]]:
        """What `who` used of each of `names` (all when None), settled totals and running
        reservations, and what its settled calls alone used of each amount: in one query."""
        names = set(_NOTHING) if names is None else names
        parts: list[tuple[str, str]] = []  # (tag, the rest of its SELECT)
        params: list[Any] = []
        running = f"FROM {self.calls} WHERE who = ? AND expires IS NOT NULL AND expires > ?"
        if names & set(AMOUNTS):
            parts += [("d", f"tokens, cost FROM {self.totals} WHERE who = ? AND period = ?"),
                      ("m", f"0 AS tokens, cost FROM {self.totals} WHERE who = ? AND period = ?"),
                      ("rd", f"tokens, cost {running} AND day = ?"), ("rm", f"0 AS tokens, cost {running} AND month = ?")]
            params += [who, day, who, month, who, moment, day, who, moment, month]
        if "requests_per_minute" in names:
            parts.append(("rpm", f"0 AS tokens, 0 AS cost FROM {self.calls} WHERE who = ? AND started > ?"))
            params += [who, moment - _MINUTE]
        if "max_concurrent" in names:
            parts.append(("run", f"0 AS tokens, 0 AS cost {running}"))
            params += [who, moment]
        union = " UNION ALL ".join(f"SELECT '{tag}'{' AS tag' if not index else ''}, {rest}"
                                   for index, (tag, rest) in enumerate(parts))
        found = {str(tag): (float(tokens), float(cost), float(count)) for tag, tokens, cost, count in db.execute(
            f"SELECT tag, COALESCE(SUM(tokens), 0), COALESCE(SUM(cost), 0), COUNT(*) FROM ({union}) AS figures "
            "GROUP BY tag", params)} if parts else {}
        zero = (0.0, 0.0, 0.0)
        d, m, rd, rm = (found.get(tag, zero) for tag in ("d", "m", "rd", "rm"))
        spent = {"tokens_per_day": d[0], "cost_per_day": d[1], "cost_per_month": m[1]}
        used = {"tokens_per_day": d[0] + rd[0], "cost_per_day": d[1] + rd[1], "cost_per_month": m[1] + rm[1],
                "requests_per_minute": found.get("rpm", zero)[2], "max_concurrent": found.get("run", zero)[2]}
        return {name: used[name] for name in names}, spent

    def used(self, budget: Budget) -> dict[str, float]:
        """What `budget`'s holder has used of each kind of limit now (0 for all before any call)."""
        moment = now()
        day, month, _, _ = _periods(moment, budget.timezone)
        with self._reading() as db:
            return dict(_NOTHING) if db is None else self._figures(db, budget.who, day, month, moment)[0]

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
