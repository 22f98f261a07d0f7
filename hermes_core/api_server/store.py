"""What the API server keeps across restarts and shares between hosts: stored responses (for
`previous_response_id` and `GET /v1/responses/{id}`), named conversations, runs with their
events, idempotency keys, and which key made each session and cron job the server started
(`owners`; kept as long as what they name, never pruned). In `$HERMES_HOME/api_server.db` (SQLite, WAL), or in the shared
PostgreSQL database `state.url` names, where every `hermes serve` host naming it sees them.

The conversation itself is a session in the session store; a response row says which session
it answered in and how many messages that session had then, so that a later request can go on
from it (the same session when nothing came after it, a fork of it otherwise). Rows older than
`api_server.retention_days`, or beyond the newest `api_server.max_stored`, are removed as new
ones come in (through the `created` indexes: the cost does not grow with the table).

A run that has not ended has a row in `run_hosts` naming the host running it; its events are
stored as they happen, so another host can stream them, and a host that stops answering leaves
rows another host finds (`orphans`) and ends (`end_orphan`) with the reason.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hermes_core import MemoryStoreError
from hermes_core.hosting import StateUrl, Store, pg_schema_of

__all__ = ["ApiStore", "IDEMPOTENCY_TTL", "TERMINAL_EVENTS"]

IDEMPOTENCY_TTL = 24 * 3600.0  # seconds an Idempotency-Key is remembered (Hermes: 24 h)
_PRUNE_LOCK = 0x4E524D50  # the advisory lock of the host pruning the shared tables (one at a time)
TERMINAL_EVENTS = ("run.completed", "run.failed", "run.cancelled", "run.interrupted")
log = logging.getLogger("hermes.api_server")

_TABLES = """
CREATE TABLE IF NOT EXISTS responses (
    id TEXT PRIMARY KEY,
    created REAL NOT NULL,
    owner TEXT NOT NULL,
    session_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    body TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS responses_created ON responses(created);
CREATE TABLE IF NOT EXISTS conversations (
    owner TEXT NOT NULL,
    name TEXT NOT NULL,
    response_id TEXT NOT NULL,
    updated REAL NOT NULL,
    PRIMARY KEY (owner, name)
);
CREATE TABLE IF NOT EXISTS runs (
    id TEXT PRIMARY KEY,
    created REAL NOT NULL,
    owner TEXT NOT NULL,
    body TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS runs_created ON runs(created);
CREATE TABLE IF NOT EXISTS run_events (
    run_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    event TEXT NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (run_id, seq)
);
CREATE TABLE IF NOT EXISTS idempotency (
    owner TEXT NOT NULL,
    key TEXT NOT NULL,
    digest TEXT NOT NULL,
    run_id TEXT NOT NULL,
    created REAL NOT NULL,
    PRIMARY KEY (owner, key)
);
CREATE TABLE IF NOT EXISTS run_hosts (
    run_id TEXT PRIMARY KEY,
    host TEXT NOT NULL,
    started REAL NOT NULL,
    stop INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS owners (
    kind TEXT NOT NULL,
    id TEXT NOT NULL,
    owner TEXT NOT NULL,
    created REAL NOT NULL,
    PRIMARY KEY (kind, id)
);
CREATE INDEX IF NOT EXISTS owners_owner ON owners(owner, kind);
CREATE INDEX IF NOT EXISTS conversations_response ON conversations(response_id);
CREATE INDEX IF NOT EXISTS idempotency_created ON idempotency(created);
"""
# Version 3 adds run_hosts and two indexes. An older file's unfinished runs (their server
# stopped, or runs still running) get the empty host, which is never alive: another host ends them.
_SCHEMA = _TABLES + """
INSERT INTO run_hosts (run_id, host, started)
    SELECT id, '', created FROM runs WHERE json_extract(body, '$.status') IN ('queued', 'running', 'stopping')
    ON CONFLICT (run_id) DO NOTHING;
"""
_PG_SCHEMA = pg_schema_of(_TABLES)


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


class ApiStore(Store):
    """The API server's stored responses, conversations, runs and idempotency keys."""

    what = "API server store"
    stage = "api_server"
    schema = _SCHEMA
    pg_schema = _PG_SCHEMA
    schema_version = 3  # 2: owners; 3: run_hosts (who runs an unfinished run), indexes for pruning
    synchronous = "NORMAL"
    home_file = "api_server.db"  # for `hermes state migrate`
    migrate_tables = ("responses", "conversations", "runs", "run_events", "idempotency", "run_hosts", "owners")

    def __init__(self, home: Path, *, url: StateUrl | str | None = None, retention_days: float = 30.0,
                 max_stored: int = 10_000, pool_size: int = 8) -> None:
        super().__init__(Path(home) / "api_server.db", url=url, pool_size=pool_size)
        self.retention = retention_days * 86400.0
        self.max_stored = max(1, max_stored)
        self._written = 0

    def ping(self) -> None:
        """One round trip to where the store is; a `MemoryStoreError` (`StateUnavailableError` for the shared database) when it cannot be used."""
        with self._reading() as db:
            if db is not None:
                db.execute("SELECT 1").fetchone()

    # -- responses -----------------------------------------------------------------------------

    def save_response(self, body: dict[str, Any], owner: str, session_id: str, seq: int,
                      conversation: str | None = None) -> None:
        """Store a response (its whole object), where it stands in its session, and make it the
        latest of `conversation` when it belongs to one."""
        now = time.time()
        with self._writing() as db:
            db.execute("INSERT INTO responses (id, created, owner, session_id, seq, body) VALUES (?, ?, ?, ?, ?, ?) "
                       "ON CONFLICT (id) DO UPDATE SET created = excluded.created, owner = excluded.owner, "
                       "session_id = excluded.session_id, seq = excluded.seq, body = excluded.body",
                       (body["id"], now, owner, session_id, seq, _dumps(body)))
            if conversation:
                db.execute("INSERT INTO conversations (owner, name, response_id, updated) VALUES (?, ?, ?, ?) "
                           "ON CONFLICT (owner, name) DO UPDATE SET response_id = excluded.response_id, "
                           "updated = excluded.updated", (owner, conversation, body["id"], now))
        self._maybe_prune()

    def response(self, response_id: str, owner: str) -> tuple[dict[str, Any], str, int] | None:
        """A stored response of `owner` (its object, session and message count), or None."""
        with self._reading() as db:
            row = None if db is None else db.execute(
                "SELECT body, session_id, seq FROM responses WHERE id = ? AND owner = ?",
                (response_id, owner)).fetchone()
        return None if row is None else (json.loads(row[0]), row[1], int(row[2]))

    def delete_response(self, response_id: str, owner: str) -> bool:
        with self._writing() as db:
            return bool(db.execute("DELETE FROM responses WHERE id = ? AND owner = ? RETURNING id",
                                   (response_id, owner)).fetchall())

    def conversation(self, name: str, owner: str) -> str | None:
        """The latest response id of the named conversation, or None for a new one."""
        with self._reading() as db:
            row = None if db is None else db.execute(
                "SELECT response_id FROM conversations WHERE owner = ? AND name = ?", (owner, name)).fetchone()
        return None if row is None else str(row[0])

    # -- runs ----------------------------------------------------------------------------------

    def start_run(self, run: dict[str, Any], owner: str, host: str, *,
                  idempotency: tuple[str, str] | None = None) -> tuple[str, str] | None:
        """Store a run that `host` starts running now. With `idempotency` (key, request digest), only
        when the key is not claimed yet: claimed and stored in one transaction (neither without the
        other), or else nothing stored and the (digest, run id) of the run that claimed it."""
        now = time.time()
        with self._writing() as db:
            if idempotency is not None:
                earlier = self._claim(db, owner, *idempotency, run["run_id"], now)
                if earlier is not None:
                    return earlier
            db.execute("INSERT INTO runs (id, created, owner, body) VALUES (?, ?, ?, ?) "
                       "ON CONFLICT (id) DO UPDATE SET body = excluded.body", (run["run_id"], now, owner, _dumps(run)))
            db.execute("INSERT INTO run_hosts (run_id, host, started) VALUES (?, ?, ?) "
                       "ON CONFLICT (run_id) DO UPDATE SET host = excluded.host", (run["run_id"], host, now))
        self._maybe_prune()
        return None

    def add_events(self, run_id: str, first: int, events: Sequence[dict[str, Any]]) -> None:
        """Store a running run's events, the first of them its `first`th (one already stored is kept)."""
        if not events:
            return
        with self._writing() as db:
            db.executemany("INSERT INTO run_events (run_id, seq, event, data) VALUES (?, ?, ?, ?) "
                           "ON CONFLICT (run_id, seq) DO NOTHING",
                           [(run_id, first + n, event["event"], _dumps(event)) for n, event in enumerate(events)])

    def end_run(self, run: dict[str, Any], host: str, first: int, events: Sequence[dict[str, Any]]) -> bool:
        """Store the end of a run `host` ran: its last status and its events not stored yet, in one
        transaction. False (nothing written) when another host already ended it (it took `host` for dead)."""
        with self._writing() as db:
            if not db.execute("DELETE FROM run_hosts WHERE run_id = ? AND host = ? RETURNING run_id",
                              (run["run_id"], host)).fetchall():
                return False
            db.execute("UPDATE runs SET body = ? WHERE id = ?", (_dumps(run), run["run_id"]))
            db.executemany("INSERT INTO run_events (run_id, seq, event, data) VALUES (?, ?, ?, ?) "
                           "ON CONFLICT (run_id, seq) DO NOTHING",
                           [(run["run_id"], first + n, e["event"], _dumps(e)) for n, e in enumerate(events)])
        return True

    def orphans(self, host: str) -> dict[str, list[str]]:
        """The unfinished runs other hosts than `host` run: {host: [run id, ...]}."""
        with self._reading() as db:
            rows = [] if db is None else db.execute("SELECT host, run_id FROM run_hosts WHERE host <> ?",
                                                    (host,)).fetchall()
        found: dict[str, list[str]] = {}
        for holder, run_id in rows:
            found.setdefault(str(holder), []).append(str(run_id))
        return found

    def run_host(self, run_id: str) -> str | None:
        """The host running `run_id`, or None when it ended (or never was)."""
        with self._reading() as db:
            row = None if db is None else db.execute("SELECT host FROM run_hosts WHERE run_id = ?",
                                                     (run_id,)).fetchone()
        return None if row is None else str(row[0])

    def ask_stop(self, run_id: str) -> str | None:
        """Ask the host running `run_id` to stop it (it looks every half lease); that host, or None
        when the run ended."""
        with self._writing() as db:
            row = db.execute("UPDATE run_hosts SET stop = 1 WHERE run_id = ? RETURNING host", (run_id,)).fetchone()
        return None if row is None else str(row[0])

    def stops(self, host: str) -> list[str]:
        """The runs of `host` a client asked (through another host) to stop."""
        with self._reading() as db:
            rows = [] if db is None else db.execute(
                "SELECT run_id FROM run_hosts WHERE host = ? AND stop = 1 ORDER BY run_id", (host,)).fetchall()
        return [str(row[0]) for row in rows]

    def end_orphan(self, run_id: str, host: str, reason: str, *, status: str = "failed") -> bool:
        """End a run whose host (`host`) is gone: `status` with `reason`, and its last event
        (`run.failed` / `run.interrupted`) after those stored. False when it ended meanwhile, or
        another host ended it first (exactly one does)."""
        with self._writing() as db:
            if not db.execute("DELETE FROM run_hosts WHERE run_id = ? AND host = ? RETURNING run_id",
                              (run_id, host)).fetchall():
                return False
            row = db.execute("SELECT body FROM runs WHERE id = ?", (run_id,)).fetchone()
            if row is None:
                return False
            run = json.loads(row[0])
            if run.get("status") in ("completed", "failed", "cancelled", "interrupted"):
                return False
            now = time.time()
            event = f"run.{status}"
            run.update(status=status, last_event=event, updated_at=now,
                       error={"message": reason, "type": "server_error"})
            seq = int(db.execute("SELECT coalesce(max(seq), -1) + 1 FROM run_events WHERE run_id = ?",
                                 (run_id,)).fetchone()[0])
            db.execute("UPDATE runs SET body = ? WHERE id = ?", (_dumps(run), run_id))
            db.execute("INSERT INTO run_events (run_id, seq, event, data) VALUES (?, ?, ?, ?) "
                       "ON CONFLICT (run_id, seq) DO NOTHING",
                       (run_id, seq, event, _dumps({"event": event, "run_id": run_id, "timestamp": now,
                                                    "error": reason})))
        return True

    def run(self, run_id: str, owner: str) -> dict[str, Any] | None:
        with self._reading() as db:
            row = None if db is None else db.execute("SELECT body FROM runs WHERE id = ? AND owner = ?",
                                                     (run_id, owner)).fetchone()
        return None if row is None else dict(json.loads(row[0]))

    def events(self, run_id: str, after: int = -1) -> list[tuple[int, str, dict[str, Any]]]:
        """A run's stored events after the `after`th, in order: (seq, event name, event)."""
        with self._reading() as db:
            rows = [] if db is None else db.execute(
                "SELECT seq, event, data FROM run_events WHERE run_id = ? AND seq > ? ORDER BY seq",
                (run_id, after)).fetchall()
        return [(int(r[0]), str(r[1]), json.loads(r[2])) for r in rows]

    # -- idempotency -----------------------------------------------------------------------------

    def claim(self, owner: str, key: str, digest: str, run_id: str) -> tuple[str, str] | None:
        """Remember `key` for `run_id` (None), or the (digest, run id) an earlier request with the same
        key, within `IDEMPOTENCY_TTL`, already claimed it for. One statement claims: of two hosts
        claiming the same key at once, exactly one gets None."""
        with self._writing() as db:
            return self._claim(db, owner, key, digest, run_id, time.time())

    def claimed(self, owner: str, key: str) -> tuple[str, str] | None:
        """The (digest, run id) `key` is claimed for within `IDEMPOTENCY_TTL`, or None."""
        with self._reading() as db:
            row = None if db is None else db.execute(
                "SELECT digest, run_id FROM idempotency WHERE owner = ? AND key = ? AND created >= ?",
                (owner, key, time.time() - IDEMPOTENCY_TTL)).fetchone()
        return None if row is None else (str(row[0]), str(row[1]))

    @staticmethod
    def _claim(db: Any, owner: str, key: str, digest: str, run_id: str, now: float) -> tuple[str, str] | None:
        claimed = db.execute(
            "INSERT INTO idempotency (owner, key, digest, run_id, created) VALUES (?, ?, ?, ?, ?) "
            "ON CONFLICT (owner, key) DO UPDATE SET digest = excluded.digest, run_id = excluded.run_id, "
            "created = excluded.created WHERE idempotency.created < ? RETURNING run_id",
            (owner, key, digest, run_id, now, now - IDEMPOTENCY_TTL)).fetchall()
        if claimed:
            return None
        row = db.execute("SELECT digest, run_id FROM idempotency WHERE owner = ? AND key = ?", (owner, key)).fetchone()
        return (str(row[0]), str(row[1]))

    # -- owners -------------------------------------------------------------------------------

    def own(self, kind: str, ident: str, owner: str, *, new: bool = False) -> None:
        """Record `owner` as the maker of `ident` (a `kind`: "session", "job"); the first one stays.
        In a SQLite file a read first (most turns go on with their own session: no write lock taken),
        unless `ident` is `new` (just made: the read would find nothing); in the shared database the
        write alone (one round trip either way)."""
        if self.dialect == "sqlite" and not new and self.owner(kind, ident) is not None:
            return
        self._write(lambda db: db.execute("INSERT INTO owners (kind, id, owner, created) VALUES (?, ?, ?, ?) "
                                          "ON CONFLICT (kind, id) DO NOTHING", (kind, ident, owner, time.time())))

    def owner(self, kind: str, ident: str) -> str | None:
        """Who made `ident` (None: no key of this server did)."""
        with self._reading() as db:
            row = None if db is None else db.execute("SELECT owner FROM owners WHERE kind = ? AND id = ?",
                                                     (kind, ident)).fetchone()
        return None if row is None else str(row[0])

    def owned(self, kind: str, owner: str) -> list[str]:
        """Every `kind` id `owner` made."""
        with self._reading() as db:
            rows = [] if db is None else db.execute("SELECT id FROM owners WHERE owner = ? AND kind = ?",
                                                    (owner, kind)).fetchall()
        return [str(row[0]) for row in rows]

    # -- retention -------------------------------------------------------------------------------

    def _maybe_prune(self) -> None:
        """Prune after every hundredth of `max_stored` rows this process wrote: the store holds
        about 1.01 times `max_stored` of each (per host) at most, and a prune's index walk costs each
        request about a hundred index entries, however large `max_stored` is."""
        self._written += 1
        if self._written % max(1, self.max_stored // 100) == 0:
            try:
                self.prune()
            except MemoryStoreError as exc:  # what was asked for is stored: pruned the next time
                log.warning("the %s was not pruned: %s", self.what, exc)

    def prune(self) -> None:
        """Remove the responses and runs past the retention time or beyond the newest `max_stored`
        (a run still running stays), and idempotency keys past their time. Each step walks an index
        from its edge: only the rows it removes (and `max_stored` index entries) are read."""
        now = time.time()
        with self._writing() as db:
            if self.dialect == "postgresql" and not db.execute("SELECT pg_try_advisory_xact_lock(?)",
                                                               (_PRUNE_LOCK,)).fetchone()[0]:
                return  # another host prunes right now
            for table, children, child_key in (("responses", "conversations", "response_id"),
                                               ("runs", "run_events", "run_id")):
                edge = db.execute(f"SELECT created FROM {table} ORDER BY created DESC LIMIT 1 OFFSET ?",
                                  (self.max_stored - 1,)).fetchone()
                before = max(now - self.retention, float(edge[0]) if edge is not None else 0.0)
                running = " AND id NOT IN (SELECT run_id FROM run_hosts)" if table == "runs" else ""
                gone = db.execute(f"DELETE FROM {table} WHERE created < ?{running} RETURNING id", (before,)).fetchall()
                if gone:
                    db.executemany(f"DELETE FROM {children} WHERE {child_key} = ?", [(row[0],) for row in gone])
            db.execute("DELETE FROM idempotency WHERE created < ?", (now - IDEMPOTENCY_TTL,))
