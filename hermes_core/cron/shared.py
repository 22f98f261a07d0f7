"""The jobs in the shared database (`state.url`): every host that names it sees the same jobs, and
each due slot runs once across all of them.

Tables (one namespace with the other stages, hence the `cron_` prefix): `cron_jobs` (each job as
Hermes writes it in jobs.json, plus when it is due and who holds its claim), `cron_runs` (one
record per run: the slot, the host, whether it was a retry, how it ended) and `cron_imports` (the
jobs.json files already imported, by their digest).

- **A claim** is one statement: `UPDATE cron_jobs SET claim_host = me ... WHERE due <= now AND
  claim_host IS NULL RETURNING ...` (PostgreSQL picks the rows `FOR UPDATE SKIP LOCKED`), so two
  hosts never claim the same slot; it names the host (`hosting.Hosts`), which beats while it runs.
- **A claim whose host is dead** (no beat within twice `state.lease_seconds`) is taken over once
  by another host, which runs the job again (the claim records `retry = 1` and the dead host); a
  retry whose host dies too is not run a third time: the job is recorded as failed and goes on
  to its next slot.
- **A jobs.json already in the home** is imported on first use, in one transaction recorded by
  the file's digest, so a second host with the same file does not import it again; the file is
  left as it was.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import threading
import time
from pathlib import Path
from typing import Any

from hermes_core import CronError, StateUnavailableError, config_keys, load_config
from hermes_core.hosting import Heartbeat, Hosts, StateUrl, Store, pg_schema_of, state_url

from .jobs import Jobs, JobsFile, Mutate, T, _shown, due_at

__all__ = ["CronStore", "SharedJobs", "open_jobs"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS cron_jobs (
    id TEXT PRIMARY KEY,
    position INTEGER NOT NULL,
    name TEXT NOT NULL,
    job TEXT NOT NULL,
    due REAL,
    claim_host TEXT,
    claim_at REAL,
    claim_retry INTEGER NOT NULL DEFAULT 0,
    claim_from TEXT
);
CREATE INDEX IF NOT EXISTS cron_jobs_due ON cron_jobs (due);
CREATE TABLE IF NOT EXISTS cron_runs (
    id INTEGER PRIMARY KEY,
    job_id TEXT NOT NULL,
    slot REAL,
    host TEXT NOT NULL,
    retry INTEGER NOT NULL,
    started REAL NOT NULL,
    finished REAL,
    status TEXT NOT NULL,
    error TEXT
);
CREATE INDEX IF NOT EXISTS cron_runs_job ON cron_runs (job_id, finished);
CREATE TABLE IF NOT EXISTS cron_imports (
    digest TEXT PRIMARY KEY,
    source TEXT NOT NULL,
    host TEXT NOT NULL,
    jobs INTEGER NOT NULL,
    at REAL NOT NULL
);
"""
_PG_SCHEMA = pg_schema_of(_SCHEMA)
_RUN = "INSERT INTO cron_runs (job_id, slot, host, retry, started, status) VALUES (?, ?, ?, ?, ?, 'running')"
_DIED = "UPDATE cron_runs SET finished = ?, status = 'host_died', error = ? WHERE job_id = ? AND host = ? AND finished IS NULL"
_PATIENCE = (0.5, 1.0, 2.0, 4.0, 8.0, 15.0)  # seconds between the tries of recording a run's end
_LET_GO = "claim_host = NULL, claim_at = NULL, claim_retry = 0, claim_from = NULL"


def open_jobs(home: Path, *, kind: str = "cron") -> Jobs:
    """The jobs of `home`: in the database `state.url` names (`kind`: what this process is, as a
    host holding claims: cron, gateway, serve), else in its jobs.json."""
    url = state_url(home)
    return JobsFile(home) if url is None else SharedJobs(home, url, kind=kind)


class CronStore(Store):
    """The cron stage's tables (`cron/cron.db` without a URL: only the contract tests use that)."""

    what = "cron jobs store"
    stage = "cron"
    schema = _SCHEMA
    pg_schema = _PG_SCHEMA
    schema_version = 1

    @classmethod
    def import_home(cls, home: Path, url: StateUrl) -> str | None:
        """`hermes state migrate`: the home's cron/jobs.json imported (once across the fleet)."""
        if not (Path(home) / "cron" / "jobs.json").exists():
            return None
        jobs = SharedJobs(home, url)
        try:
            return f"cron/jobs.json: {len(jobs.read())} jobs in the database"
        finally:
            jobs.close()

    @property
    def lock(self) -> str:
        """What a SELECT adds to hold the rows it reads until the transaction ends."""
        return " FOR UPDATE" if self.dialect == "postgresql" else ""


class SharedJobs(Jobs):
    """The cron jobs of every host naming `url` (see the module); `kind` names this process as a host."""

    def __init__(self, home: Path, url: StateUrl | str | None, *, kind: str = "cron") -> None:
        self.home = Path(home)
        self.store = CronStore(self.home / "cron" / "cron.db", url=url)
        self.where = self.store.location
        self.kind = kind
        self._imported = False
        self._hosts: Hosts | None = None
        self._me: str | None = None
        self._beat: Heartbeat | None = None
        self._lock = threading.Lock()
        self.lease = float(load_config(self.home).read(config_keys.STATE_LEASE))

    # -- the host holding claims ------------------------------------------------------------------

    def host(self) -> str:
        """This process's host id, registered (and beating) on first use."""
        with self._lock:
            if self._me is None:
                self._hosts = Hosts(self.home, url=self.store.url)
                self._me = self._hosts.register(self.kind)
                self._beat = Heartbeat(self._hosts, self._me, every=max(self.lease / 3.0, 0.2)).__enter__()
            return self._me

    def close(self) -> None:
        with self._lock:
            beat, self._beat, self._me = self._beat, None, None
        if beat is not None:
            beat.__exit__(None, None, None)

    # -- the jobs ---------------------------------------------------------------------------------

    def _ready(self) -> None:
        """Import the home's jobs.json once (across every host: recorded by its digest)."""
        if self._imported:
            return
        source = JobsFile(self.home)
        try:
            raw = source.path.read_bytes()
        except FileNotFoundError:
            raw = b""
        except OSError as exc:
            raise CronError(f"cannot read {source.path} to import it: {exc.strerror or exc}") from None
        if raw.strip():
            jobs = source.read()  # unreadable: one line naming the file, and nothing imported
            digest = hashlib.sha256(raw).hexdigest()
            from hermes_core.hosting import host_id

            with self.store._writing() as db:
                first = db.execute("INSERT INTO cron_imports (digest, source, host, jobs, at) VALUES (?, ?, ?, ?, ?) "
                                   "ON CONFLICT (digest) DO NOTHING RETURNING digest",
                                   (digest, str(source.path), host_id(), len(jobs), _time())).fetchone()
                if first is not None:
                    start = db.execute("SELECT COALESCE(MAX(position), 0) FROM cron_jobs").fetchone()[0]
                    db.executemany("INSERT INTO cron_jobs (id, position, name, job, due) VALUES (?, ?, ?, ?, ?) "
                                   "ON CONFLICT (id) DO NOTHING",
                                   [(str(job["id"]), int(start) + n + 1, str(job.get("name", "")),
                                     json.dumps(_shown(job)), due_at(job)) for n, job in enumerate(jobs)])
        self._imported = True

    def read(self) -> list[dict[str, Any]]:
        self._ready()
        with self.store._reading() as db:
            rows = db.execute("SELECT job, claim_host, claim_at, claim_retry FROM cron_jobs "
                              "ORDER BY position, id").fetchall() if db is not None else []
        jobs = []
        for text, host, at, retry in rows:
            job = json.loads(text)
            if host is not None:
                job["claim"] = {"host": host, "at": _iso(at), "retry": int(retry)}
            jobs.append(job)
        return jobs

    def runs(self, job_id: str | None = None) -> list[dict[str, Any]]:
        """The run records (of `job_id`, or all), the oldest first."""
        where, params = ("WHERE job_id = ? ", (job_id,)) if job_id else ("", ())
        with self.store._reading() as db:
            rows = db.execute(f"SELECT job_id, slot, host, retry, started, finished, status, error FROM cron_runs "
                              f"{where}ORDER BY id", params).fetchall() if db is not None else []
        keys = ("job_id", "slot", "host", "retry", "started", "finished", "status", "error")
        return [dict(zip(keys, row)) for row in rows]

    def _insert(self, job: dict[str, Any], now: dt.datetime) -> None:
        self._ready()
        with self.store._writing() as db:
            db.execute("INSERT INTO cron_jobs (id, position, name, job, due) VALUES "
                       "(?, (SELECT COALESCE(MAX(position), 0) + 1 FROM cron_jobs), ?, ?, ?)",
                       (job["id"], str(job.get("name", "")), json.dumps(job), due_at(job)))

    def _locked(self, db: Any, ref: str) -> tuple[str, dict[str, Any]]:
        """The job `ref` names, its row held until the transaction ends."""
        names = [{"id": row[0], "name": row[1]} for row in
                 db.execute("SELECT id, name FROM cron_jobs ORDER BY position, id").fetchall()]
        job_id = str(self.find(names, ref)["id"])
        row = db.execute(f"SELECT job FROM cron_jobs WHERE id = ?{self.store.lock}", (job_id,)).fetchone()
        if row is None:
            raise CronError(f"the cron job {ref!r} was removed meanwhile; see `hermes cron list`")
        return job_id, json.loads(row[0])

    def _store(self, db: Any, job_id: str, job: dict[str, Any], extra: str = "") -> None:
        db.execute(f"UPDATE cron_jobs SET job = ?, name = ?, due = ?{extra} WHERE id = ?",
                   (json.dumps(_shown(job)), str(job.get("name", "")), due_at(job), job_id))

    def _update(self, ref: str, mutate: Mutate[T], now: dt.datetime) -> T:
        self._ready()
        with self.store._writing() as db:
            job_id, job = self._locked(db, ref)
            result = mutate(job)
            self._store(db, job_id, job)
        return result

    def _delete(self, ref: str, now: dt.datetime) -> dict[str, Any]:
        self._ready()
        with self.store._writing() as db:
            job_id, job = self._locked(db, ref)
            db.execute("DELETE FROM cron_jobs WHERE id = ?", (job_id,))
        return job

    # -- claims -----------------------------------------------------------------------------------

    def claim_due(self, moment: dt.datetime, limit: int = 0) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        self._ready()
        me, at = self.host(), moment.timestamp()
        retried, given_up = self._take_over(me, at, limit)
        room = limit - len(retried) - len(given_up) if limit else 0
        if limit and room <= 0:
            return retried, given_up
        pick = (" ORDER BY due, position, id" + (" LIMIT ?" if room else "")
                + (" FOR UPDATE SKIP LOCKED" if self.store.dialect == "postgresql" else ""))
        with self.store._writing() as db:
            rows = db.execute(
                f"UPDATE cron_jobs SET claim_host = ?, claim_at = ?, claim_retry = 0, claim_from = NULL WHERE id IN "
                f"(SELECT id FROM cron_jobs WHERE due IS NOT NULL AND due <= ? AND claim_host IS NULL{pick}) "
                f"AND claim_host IS NULL RETURNING id, job, due, position",
                (me, at, at, *((room,) if room else ()))).fetchall()
            rows.sort(key=lambda row: (row[2], row[3], row[0]))
            db.executemany(_RUN, [(row[0], row[2], me, 0, at) for row in rows])
        return retried + [_claimed(row[1], me, at, 0) for row in rows], given_up

    def _take_over(self, me: str, at: float, limit: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """The claims of dead hosts: a due job's is run again once (then recorded as failed); a
        claim on a job no longer due (a run by hand) is let go."""
        with self.store._reading() as db:
            held = db.execute("SELECT id, claim_host, claim_retry, due FROM cron_jobs WHERE claim_host IS NOT NULL "
                              "AND claim_host <> ? ORDER BY due, position, id", (me,)).fetchall() if db is not None else []
        if not held:
            return [], []
        assert self._hosts is not None
        alive = self._hosts.alive({row[1] for row in held}, within=2 * self.lease)
        retried: list[dict[str, Any]] = []
        given_up: list[dict[str, Any]] = []
        for job_id, dead, retry, due in held:
            if dead in alive or (limit and len(retried) + len(given_up) >= limit):
                continue
            why = f"its host {dead} died during the run"
            with self.store._writing() as db:
                if due is None or due > at:
                    db.execute(f"UPDATE cron_jobs SET {_LET_GO} WHERE id = ? AND claim_host = ?", (job_id, dead))
                    db.execute(_DIED, (at, why, job_id, dead))
                    continue
                row = db.execute("UPDATE cron_jobs SET claim_host = ?, claim_at = ?, claim_retry = ?, claim_from = ? "
                                 "WHERE id = ? AND claim_host = ? AND claim_retry = ? RETURNING job",
                                 (me, at, int(retry) + 1, dead, job_id, dead, retry)).fetchone()
                if row is None:  # another host took it over first
                    continue
                db.execute(_DIED, (at, why, job_id, dead))
                if int(retry) == 0:
                    db.execute(_RUN, (job_id, due, me, 1, at))
                    retried.append(_claimed(row[0], me, at, 1))
                else:
                    gone = _claimed(row[0], me, at, int(retry) + 1)
                    gone["claim"]["why"] = (f"{why}, and so did the host of its retry: not run a third time "
                                            "(it runs again at its next slot)")
                    given_up.append(gone)
        return retried, given_up

    def claim(self, job_id: str, moment: dt.datetime) -> dict[str, Any] | None:
        self._ready()
        me, at = self.host(), moment.timestamp()
        self._take_over(me, at, 0)  # a dead host's claim is not in the way of a run by hand
        with self.store._writing() as db:
            row = db.execute("UPDATE cron_jobs SET claim_host = ?, claim_at = ?, claim_retry = 0, claim_from = NULL "
                             "WHERE id = ? AND claim_host IS NULL RETURNING job, due", (me, at, job_id)).fetchone()
            if row is None:
                return None
            db.execute(_RUN, (job_id, row[1], me, 0, at))
        return _claimed(row[0], me, at, 0)

    def finish(self, job_id: str, mutate: Mutate[Any], moment: dt.datetime, outcome: dict[str, Any]) -> Any:
        """(See `Jobs.finish`.) Tried again for about half a minute while the database cannot be
        reached: a run's outcome is worth the wait, and its claim is held until it is recorded."""
        for pause in _PATIENCE:
            try:
                return self._finish(job_id, mutate, moment, outcome)
            except StateUnavailableError:
                time.sleep(pause)
        return self._finish(job_id, mutate, moment, outcome)

    def _finish(self, job_id: str, mutate: Mutate[Any], moment: dt.datetime, outcome: dict[str, Any]) -> Any:
        me = self.host()
        failed = outcome.get("status") != "ok"
        with self.store._writing() as db:
            db.execute("UPDATE cron_runs SET finished = ?, status = ?, error = ? WHERE job_id = ? AND host = ? "
                       "AND finished IS NULL", (moment.timestamp(), "error" if failed else "ok",
                                                outcome.get("error") if failed else None, job_id, me))
            row = db.execute(f"SELECT job, claim_host FROM cron_jobs WHERE id = ?{self.store.lock}", (job_id,)).fetchone()
            if row is None or row[1] != me:  # removed while it ran, or taken over by another host
                return None
            job = json.loads(row[0])
            result = mutate(job)
            self._store(db, job_id, job, extra=f", {_LET_GO}")
        return result

    def note(self, job_id: str, mutate: Mutate[Any], now: dt.datetime) -> None:
        with self.store._writing() as db:
            row = db.execute(f"SELECT job FROM cron_jobs WHERE id = ?{self.store.lock}", (job_id,)).fetchone()
            if row is not None:
                job = json.loads(row[0])
                mutate(job)
                self._store(db, job_id, job)


def _claimed(text: str, host: str, at: float, retry: int) -> dict[str, Any]:
    return {**json.loads(text), "claim": {"host": host, "at": _iso(at), "retry": retry}}


def _iso(at: float | None) -> str | None:
    return dt.datetime.fromtimestamp(at, dt.timezone.utc).isoformat() if at is not None else None


def _time() -> float:
    return time.time()
