"""What the gateway keeps between messages and shares with the other gateways of a fleet: the
"always" approvals and the pairings (see `pairing`).

Without `state.url`, Hermes' files under the home, as they always were: `gateway/approvals.json`
(`{"always": [...]}`) and `platforms/pairing/*.json`. With one, the same state in the shared
database (stage `gateway`: `gateway_approvals`, one row per approved rule, and `gateway_pairing`,
one row per pairing file Hermes would write, holding the same JSON), so an approval or a pairing
made through one gateway holds on every other, and a revoke is seen by the others at their next
check: each check reads the database. The home's files, when it has them, are imported on first
use (each once across the fleet, recorded by its digest, so a revoke is never undone by a host
that still has the old file); the files are left as they were.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from pathlib import Path
from typing import Any

from hermes_core.hosting import StateUrl, Store, pg_schema_of, read_json, state_url, write_json

__all__ = ["Always", "AlwaysFile", "AlwaysShared", "GatewayStore", "always_for"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS gateway_approvals (
    pattern TEXT PRIMARY KEY,
    approved_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS gateway_pairing (
    name TEXT PRIMARY KEY,
    doc TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS gateway_imports (
    digest TEXT PRIMARY KEY,
    source TEXT NOT NULL,
    at REAL NOT NULL
);
"""


class GatewayStore(Store):
    """The gateway stage's tables (`gateway/state.db` without a URL: only the contract tests use that)."""

    what = "gateway store"
    stage = "gateway"
    schema = _SCHEMA
    pg_schema = pg_schema_of(_SCHEMA)
    schema_version = 1

    @classmethod
    def of(cls, home: Path, url: StateUrl | str | None) -> GatewayStore:
        """The store of `home`, its approvals.json and pairing files imported (once across the fleet)."""
        store = cls(Path(home) / "gateway" / "state.db", url=url)
        store.import_files(Path(home))
        return store

    @classmethod
    def import_home(cls, home: Path, url: StateUrl) -> str | None:
        """`hermes state migrate`: the home's approvals.json and pairing files imported."""
        home = Path(home)
        if not (home / "gateway" / "approvals.json").exists() and not any((home / "platforms" / "pairing").glob("*.json")):
            return None
        cls.of(home, url)
        return "gateway/approvals.json and platforms/pairing/*.json imported"

    def import_files(self, home: Path) -> None:
        """Import `home`'s approvals.json and platforms/pairing/*.json, each file once (by its digest):
        approvals added, pairing entries added where the database has none of the same key."""
        files = [home / "gateway" / "approvals.json", *sorted((home / "platforms" / "pairing").glob("*.json"))]
        for path in files:
            try:
                data = read_json(path)
                raw = path.read_bytes()
            except (OSError, ValueError):  # none, or unreadable: nothing to import from it
                continue
            if not isinstance(data, dict):
                continue
            digest = hashlib.sha256(path.name.encode() + b"\0" + raw).hexdigest()
            with self._writing() as db:
                if db.execute("INSERT INTO gateway_imports (digest, source, at) VALUES (?, ?, ?) ON CONFLICT (digest) "
                              "DO NOTHING RETURNING digest", (digest, str(path), time.time())).fetchone() is None:
                    continue
                if path.name == "approvals.json":
                    db.executemany("INSERT INTO gateway_approvals (pattern, approved_at) VALUES (?, ?) "
                                   "ON CONFLICT (pattern) DO NOTHING",
                                   [(str(p), time.time()) for p in data.get("always") or [] if isinstance(p, str)])
                    continue
                row = db.execute("SELECT doc FROM gateway_pairing WHERE name = ?", (path.name,)).fetchone()
                held = json.loads(row[0]) if row is not None else {}
                db.execute("INSERT INTO gateway_pairing (name, doc) VALUES (?, ?) ON CONFLICT (name) "
                           "DO UPDATE SET doc = excluded.doc", (path.name, json.dumps({**data, **held})))


class Always:
    """The rules approved "always": for every conversation, kept across restarts."""

    def has(self, pattern: str) -> bool:
        raise NotImplementedError

    def add(self, pattern: str) -> None:
        raise NotImplementedError

    def remove(self, pattern: str) -> bool:
        raise NotImplementedError

    def all(self) -> list[str]:
        raise NotImplementedError


class AlwaysFile(Always):
    """`gateway/approvals.json` (Hermes' `{"always": [...]}`), read again when another process changed it."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._kept: set[str] = set()
        self._seen: tuple[float, int] | None = None
        self._lock = threading.Lock()

    def _fresh(self) -> set[str]:
        try:
            info = os.stat(self.path)
            mark: tuple[float, int] | None = (info.st_mtime, info.st_size)
        except OSError:
            mark = None
        if mark != self._seen:
            try:
                kept = read_json(self.path) if mark is not None else {}
            except (OSError, ValueError):
                kept = {}
            always = kept.get("always") if isinstance(kept, dict) else None
            self._kept = {str(k) for k in always or [] if isinstance(k, str)}
            self._seen = mark
        return self._kept

    def has(self, pattern: str) -> bool:
        with self._lock:
            return pattern in self._fresh()

    def all(self) -> list[str]:
        with self._lock:
            return sorted(self._fresh())

    def _save(self, kept: set[str]) -> None:
        write_json(self.path, {"always": sorted(kept)})
        self._seen = None

    def add(self, pattern: str) -> None:
        with self._lock:
            kept = self._fresh() | {pattern}
            self._save(kept)

    def remove(self, pattern: str) -> bool:
        with self._lock:
            kept = set(self._fresh())
            if pattern not in kept:
                return False
            kept.discard(pattern)
            self._save(kept)
            return True


class AlwaysShared(Always):
    """The "always" approvals in the shared database: every check reads it."""

    def __init__(self, store: GatewayStore) -> None:
        self.store = store

    def has(self, pattern: str) -> bool:
        with self.store._reading() as db:
            return db is not None and db.execute("SELECT 1 FROM gateway_approvals WHERE pattern = ?",
                                                 (pattern,)).fetchone() is not None

    def all(self) -> list[str]:
        with self.store._reading() as db:
            rows = db.execute("SELECT pattern FROM gateway_approvals ORDER BY pattern").fetchall() if db else []
        return [str(row[0]) for row in rows]

    def add(self, pattern: str) -> None:
        with self.store._writing() as db:
            db.execute("INSERT INTO gateway_approvals (pattern, approved_at) VALUES (?, ?) ON CONFLICT (pattern) "
                       "DO NOTHING", (pattern, time.time()))

    def remove(self, pattern: str) -> bool:
        with self.store._writing() as db:
            return db.execute("DELETE FROM gateway_approvals WHERE pattern = ? RETURNING pattern",
                              (pattern,)).fetchone() is not None


def always_for(home: Path, url: Any = "auto") -> Always:
    """The "always" approvals of `home`: in the database `state.url` names, else its approvals.json."""
    url = state_url(home) if url == "auto" else url
    if url is None:
        return AlwaysFile(Path(home) / "gateway" / "approvals.json")
    return AlwaysShared(GatewayStore.of(home, url))
