"""Which agent session each conversation is: Hermes' session key → the session id of the
reference agent's store, in `$HERMES_HOME/gateway/routes.db` (SQLite, written before the first
answer), so that a conversation goes on where it was after the gateway restarts."""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

__all__ = ["Routes"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS routes (
    session_key TEXT PRIMARY KEY,
    session_id TEXT NOT NULL,
    platform TEXT NOT NULL,
    origin TEXT NOT NULL,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL
)
"""


class Routes:
    """The gateway's session store: `session_id(key)`, `remember(...)`, `entries()`."""

    def __init__(self, home: Path) -> None:
        folder = home / "gateway"
        folder.mkdir(parents=True, exist_ok=True)
        self.path = folder / "routes.db"
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=30)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute(_SCHEMA)

    def session_id(self, session_key: str) -> str | None:
        with self._lock:
            row = self._db.execute("SELECT session_id FROM routes WHERE session_key = ?", (session_key,)).fetchone()
        return None if row is None else str(row[0])

    def remember(self, session_key: str, session_id: str, platform: str, origin: dict[str, Any]) -> None:
        now = time.time()
        with self._lock:
            self._db.execute(
                "INSERT INTO routes VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(session_key) DO UPDATE SET "
                "session_id = excluded.session_id, origin = excluded.origin, updated_at = excluded.updated_at",
                (session_key, session_id, platform, json.dumps(origin, default=str), now, now))

    def touch(self, session_key: str) -> None:
        with self._lock:
            self._db.execute("UPDATE routes SET updated_at = ? WHERE session_key = ?", (time.time(), session_key))

    def origin(self, session_key: str) -> dict[str, Any] | None:
        with self._lock:
            row = self._db.execute("SELECT origin FROM routes WHERE session_key = ?", (session_key,)).fetchone()
        return None if row is None else dict(json.loads(row[0]))

    def entries(self) -> list[dict[str, Any]]:
        with self._lock:
            rows = self._db.execute("SELECT session_key, session_id, platform, updated_at FROM routes "
                                    "ORDER BY updated_at DESC").fetchall()
        return [{"session_key": r[0], "session_id": r[1], "platform": r[2], "updated_at": r[3]} for r in rows]

    def close(self) -> None:
        with self._lock:
            self._db.close()
