"""What the API server keeps across restarts, in `$HERMES_HOME/api_server.db` (SQLite, WAL):
stored responses (for `previous_response_id` and `GET /v1/responses/{id}`), named
conversations, runs with their events, idempotency keys, and which key made each session and
cron job the server started (`owners`; kept as long as what they name, never pruned).

The conversation itself is a session in the session store; a response row says which session
it answered in and how many messages that session had then, so that a later request can go on
from it (the same session when nothing came after it, a fork of it otherwise). Rows older than
`api_server.retention_days`, or beyond the newest `api_server.max_stored`, are removed as new
ones come in.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hermes_core import SqliteFile

__all__ = ["ApiStore", "IDEMPOTENCY_TTL"]

IDEMPOTENCY_TTL = 24 * 3600.0  # seconds an Idempotency-Key is remembered (Hermes: 24 h)

_SCHEMA = """
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
CREATE TABLE IF NOT EXISTS owners (
    kind TEXT NOT NULL,
    id TEXT NOT NULL,
    owner TEXT NOT NULL,
    created REAL NOT NULL,
    PRIMARY KEY (kind, id)
);
CREATE INDEX IF NOT EXISTS owners_owner ON owners(owner, kind);
"""


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


class ApiStore(SqliteFile):
    """The API server's stored responses, conversations, runs, idempotency keys and owners."""

    what = "API server store"
    schema = _SCHEMA
    schema_version = 2  # 2: owners (the key that made a session or a cron job)
    synchronous = "NORMAL"

    def __init__(self, home: Path, *, retention_days: float = 30.0, max_stored: int = 10_000) -> None:
        super().__init__(Path(home) / "api_server.db")
        self.retention = retention_days * 86400.0
        self.max_stored = max_stored
        self._written = 0

    # -- responses -----------------------------------------------------------------------------

    def save_response(self, body: dict[str, Any], owner: str, session_id: str, seq: int,
                      conversation: str | None = None) -> None:
        """Store a response (its whole object), where it stands in its session, and make it the
        latest of `conversation` when it belongs to one."""
        now = time.time()

        def write(db: sqlite3.Connection) -> None:
            db.execute("INSERT OR REPLACE INTO responses VALUES (?, ?, ?, ?, ?, ?)",
                       (body["id"], now, owner, session_id, seq, _dumps(body)))
            if conversation:
                db.execute("INSERT OR REPLACE INTO conversations VALUES (?, ?, ?, ?)",
                           (owner, conversation, body["id"], now))

        self._write(write)
        self._maybe_prune()

    def response(self, response_id: str, owner: str) -> tuple[dict[str, Any], str, int] | None:
        """A stored response of `owner` (its object, session and message count), or None."""
        with self._reading() as db:
            row = None if db is None else db.execute(
                "SELECT body, session_id, seq FROM responses WHERE id = ? AND owner = ?",
                (response_id, owner)).fetchone()
        return None if row is None else (json.loads(row[0]), row[1], int(row[2]))

    def delete_response(self, response_id: str, owner: str) -> bool:
        found = [False]

        def write(db: sqlite3.Connection) -> None:
            found[0] = db.execute("DELETE FROM responses WHERE id = ? AND owner = ?",
                                  (response_id, owner)).rowcount > 0

        self._write(write)
        return found[0]

    def conversation(self, name: str, owner: str) -> str | None:
        """The latest response id of the named conversation, or None for a new one."""
        with self._reading() as db:
            row = None if db is None else db.execute(
                "SELECT response_id FROM conversations WHERE owner = ? AND name = ?", (owner, name)).fetchone()
        return None if row is None else str(row[0])

    # -- runs ----------------------------------------------------------------------------------

    def save_run(self, run: dict[str, Any], owner: str, *, events: Sequence[dict[str, Any]] = ()) -> None:
        """Store a run's status object (and, once it ended, its events), in one transaction."""
        now = time.time()

        def write(db: sqlite3.Connection) -> None:
            db.execute("INSERT INTO runs VALUES (?, ?, ?, ?) ON CONFLICT(id) DO UPDATE SET body = excluded.body",
                       (run["run_id"], now, owner, _dumps(run)))
            db.executemany("INSERT OR REPLACE INTO run_events VALUES (?, ?, ?, ?)",
                           [(run["run_id"], seq, event["event"], _dumps(event)) for seq, event in enumerate(events)])

        self._write(write)
        self._maybe_prune()

    def interrupt_unfinished(self) -> None:
        """Mark the runs stored as running (their server stopped before they ended) `interrupted`."""
        def write(db: sqlite3.Connection) -> None:
            for run_id, body in db.execute("SELECT id, body FROM runs").fetchall():
                run = json.loads(body)
                if run.get("status") in ("queued", "running", "stopping"):
                    run.update(status="interrupted", last_event="run.interrupted", updated_at=time.time())
                    db.execute("UPDATE runs SET body = ? WHERE id = ?", (_dumps(run), run_id))

        if self.path.exists():
            self._write(write)

    def run(self, run_id: str, owner: str) -> dict[str, Any] | None:
        with self._reading() as db:
            row = None if db is None else db.execute("SELECT body FROM runs WHERE id = ? AND owner = ?",
                                                     (run_id, owner)).fetchone()
        return None if row is None else dict(json.loads(row[0]))

    def events(self, run_id: str, after: int = -1) -> list[tuple[int, str, dict[str, Any]]]:
        """A stored run's events after the `after`th, in order: (seq, event name, event)."""
        with self._reading() as db:
            rows = [] if db is None else db.execute(
                "SELECT seq, event, data FROM run_events WHERE run_id = ? AND seq > ? ORDER BY seq",
                (run_id, after)).fetchall()
        return [(int(r[0]), str(r[1]), json.loads(r[2])) for r in rows]

    # -- idempotency -----------------------------------------------------------------------------

    def claim(self, owner: str, key: str, digest: str, run_id: str) -> tuple[str, str] | None:
        """Remember `key` for `run_id` (None), or the (digest, run id) an earlier request with the same
        key, within `IDEMPOTENCY_TTL`, already claimed it for."""
        now = time.time()
        earlier: list[tuple[str, str] | None] = [None]

        def write(db: sqlite3.Connection) -> None:
            db.execute("DELETE FROM idempotency WHERE created < ?", (now - IDEMPOTENCY_TTL,))
            row = db.execute("SELECT digest, run_id FROM idempotency WHERE owner = ? AND key = ?",
                             (owner, key)).fetchone()
            if row is not None:
                earlier[0] = (str(row[0]), str(row[1]))
                return
            db.execute("INSERT INTO idempotency VALUES (?, ?, ?, ?, ?)", (owner, key, digest, run_id, now))

        self._write(write)
        return earlier[0]

    # -- owners -------------------------------------------------------------------------------

    def own(self, kind: str, ident: str, owner: str) -> None:
        """Record `owner` as the maker of `ident` (a `kind`: "session", "job"); the first one stays."""
        self._write(lambda db: db.execute("INSERT OR IGNORE INTO owners VALUES (?, ?, ?, ?)",
                                          (kind, ident, owner, time.time())))

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
        """Prune after every tenth of `max_stored` rows written (at most every 100): the store
        never holds more than 1.1 times `max_stored` of each."""
        self._written += 1
        if self._written % max(1, min(100, self.max_stored // 10)) == 0:
            self.prune()

    def prune(self) -> None:
        """Remove the responses and runs past the retention time or beyond the newest `max_stored`."""
        cutoff = time.time() - self.retention

        def write(db: sqlite3.Connection) -> None:
            for table in ("responses", "runs"):
                db.execute(f"DELETE FROM {table} WHERE created < ?", (cutoff,))
                db.execute(f"DELETE FROM {table} WHERE id IN (SELECT id FROM {table} ORDER BY created DESC "
                           "LIMIT -1 OFFSET ?)", (self.max_stored,))
            db.execute("DELETE FROM run_events WHERE run_id NOT IN (SELECT id FROM runs)")
            db.execute("DELETE FROM conversations WHERE response_id NOT IN (SELECT id FROM responses)")

        self._write(write)
