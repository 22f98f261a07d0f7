"""The hosts that share a home or a database (`hermes serve`, `hermes gateway run`, ...): each
registers itself, beats while it runs, and what it holds (a run, a cron claim) carries its id.
A host whose last beat is older than the lease is dead to the others, who may then take over
what it held: a run is marked failed, a claimed job retried.

Times are the database's own clock (SQLite: this machine's), so hosts on machines whose clocks
differ still agree on who is alive.

>>> hosts = Hosts(home, url=state_url(home))
>>> me = hosts.register("serve")
>>> with Heartbeat(hosts, me, every=5.0):
...     ...                                    # serve; hosts.alive([other], within=15.0)
"""

from __future__ import annotations

import logging
import os
import secrets
import socket
import threading
from collections.abc import Iterable
from pathlib import Path
from types import TracebackType
from typing import Any

from .._errors import MemoryStoreError
from .store import Store, pg_schema_of
from .url import StateUrl

__all__ = ["Heartbeat", "Hosts", "host_id"]

_log = logging.getLogger("hermes_core.state")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS hosts (
    id TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    machine TEXT NOT NULL,
    pid INTEGER NOT NULL,
    started REAL NOT NULL,
    beat REAL NOT NULL,
    stopped REAL
);
"""
_PG_SCHEMA = pg_schema_of(_SCHEMA)
_NOW = {"sqlite": "((julianday('now') - 2440587.5) * 86400.0)",
        "postgresql": "extract(epoch from clock_timestamp())::double precision"}
_KEEP_DAYS = 7.0


def host_id() -> str:
    """A new id for this process as a host: machine, process id and a random tail."""
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(3)}"


class Hosts(Store):
    """The hosts of one home (`hosts.db`) or of the shared database."""

    what = "host registry"
    stage = "hosts"
    schema = _SCHEMA
    pg_schema = _PG_SCHEMA
    schema_version = 1
    synchronous = "NORMAL"

    def __init__(self, home: Path, *, url: StateUrl | str | None = None) -> None:
        super().__init__(Path(home) / "hosts.db", url=url)

    @property
    def _now(self) -> str:
        return _NOW[self.dialect]

    def now(self) -> float:
        """The clock every host compares beats with, in seconds since the epoch."""
        with self._reading() as db:
            return float(db.execute(f"SELECT {self._now}").fetchone()[0]) if db is not None else _time()

    def register(self, kind: str, *, ident: str | None = None) -> str:
        """Record this process as a host of `kind`; its id."""
        ident = ident or host_id()
        with self._writing() as db:
            db.execute(f"DELETE FROM hosts WHERE beat < {self._now} - ?", (_KEEP_DAYS * 86400.0,))
            db.execute(f"INSERT INTO hosts (id, kind, machine, pid, started, beat) VALUES (?, ?, ?, ?, {self._now}, "
                       f"{self._now}) ON CONFLICT (id) DO UPDATE SET beat = excluded.beat, stopped = NULL",
                       (ident, kind, socket.gethostname(), os.getpid()))
        return ident

    def beat(self, ident: str) -> None:
        with self._writing() as db:
            db.execute(f"UPDATE hosts SET beat = {self._now} WHERE id = ?", (ident,))

    def stop(self, ident: str) -> None:
        """This host stopped on purpose: what it held is free at once."""
        with self._writing() as db:
            db.execute(f"UPDATE hosts SET stopped = {self._now} WHERE id = ?", (ident,))

    def alive(self, idents: Iterable[str], *, within: float) -> set[str]:
        """Those of `idents` that beat in the last `within` seconds and did not stop."""
        wanted = sorted(set(idents))
        if not wanted:
            return set()
        marks = ", ".join("?" * len(wanted))
        with self._reading() as db:
            if db is None:
                return set()
            rows = db.execute(f"SELECT id FROM hosts WHERE id IN ({marks}) AND stopped IS NULL "
                              f"AND beat >= {self._now} - ?", (*wanted, within)).fetchall()
        return {str(row[0]) for row in rows}

    def listing(self, *, within: float) -> list[dict[str, Any]]:
        """Every host seen in the last week, the latest first, each with `alive` (beat within `within`)."""
        with self._reading() as db:
            if db is None:
                return []
            rows = db.execute(f"SELECT id, kind, machine, pid, started, beat, stopped, "
                              f"(stopped IS NULL AND beat >= {self._now} - ?) FROM hosts ORDER BY beat DESC",
                              (within,)).fetchall()
        keys = ("id", "kind", "machine", "pid", "started", "beat", "stopped", "alive")
        return [{**dict(zip(keys, row)), "alive": bool(row[7])} for row in rows]


def _time() -> float:
    import time

    return time.time()


class Heartbeat:
    """Beats for `ident` every `every` seconds on a thread of its own while the block runs, and
    records the stop when it ends. A beat that fails (the database restarting) is tried again at
    the next one; the host goes on."""

    def __init__(self, hosts: Hosts, ident: str, *, every: float) -> None:
        self.hosts, self.ident, self.every = hosts, ident, every
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"hermes-heartbeat-{ident}", daemon=True)

    def __enter__(self) -> Heartbeat:
        self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None) -> None:
        self._stop.set()
        self._thread.join(timeout=self.every + 1.0)
        try:
            self.hosts.stop(self.ident)
        except MemoryStoreError as exc:
            _log.warning("could not record that host %s stopped: %s", self.ident, exc)

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            try:
                self.hosts.beat(self.ident)
            except MemoryStoreError as exc:
                _log.debug("heartbeat of %s failed (tried again in %g s): %s", self.ident, self.every, exc)
