"""The jobs: one interface (`Jobs`), two implementations, picked by `shared.open_jobs(home)`.

- `JobsFile`: `$HERMES_HOME/cron/jobs.json` in Hermes' shape, read and written by one process at a
  time: the embedded default (no `state.url`), the file Hermes Agent writes.
- `SharedJobs` (`shared`): the jobs, their claims and their run records in the database
  `state.url` names, for every host that names it (a `jobs.json` already in the home is imported
  once).

The CLI (`hermes cron`), the agent's `cronjob` tool, the API server's `/api/jobs` and the scheduler
all go through `Jobs`: `read`, `get`, `add`, `edit`, `set_paused`, `trigger`, `remove` (written once,
here, over three primitives), and the scheduler's `claim_due`, `claim`, `finish` and `note`.

The file is `{"jobs": [...], "updated_at": ISO}` (a bare list or an id-keyed map, which older
Hermes versions wrote, is read too); each job has Hermes' fields: `id` (12 hex digits), `name`,
`prompt`, `skills`, `schedule` (see `schedule`), `schedule_display`, `repeat` (`{"times": N or
null, "completed": N}`), `enabled`, `state` (`scheduled`, `paused`, `completed`, `error`),
`deliver`, `origin`, `created_at`, `next_run_at`, `last_run_at`, `last_status`, `last_error`,
`last_delivery_error`. Every change is made under the file's lock (`cron/jobs.json.lock`) on what
is on disk then, and replaced whole (mode 0600) when it changed anything: a reader sees the old
file or the new one.
"""

from __future__ import annotations

import re

import copy
import datetime as dt
import os
import socket
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from hermes_core import CronError
from hermes_core.hosting import locked, read_json, write_json

from .checks import job_problem
from .schedule import next_run, parse_schedule, stamp

__all__ = ["Jobs", "JobsFile", "LIVE_STATES", "Mutate", "check_repeat", "describe_repeat", "due_at"]

T = TypeVar("T")
LIVE_STATES = ("scheduled", "error")  # the states a job may be due in
Mutate = Callable[[dict[str, Any]], T]  # changes one job in place; what it returns is the change's result


def due_at(job: dict[str, Any]) -> float | None:
    """When the job is due (UNIX seconds), or None while it cannot be (paused, completed, no next run,
    or a field no run can use: `checks.job_problem`)."""
    due = stamp(job.get("next_run_at")) if isinstance(job.get("next_run_at"), str) else None
    if due is None or job.get("enabled", True) is not True or job.get("state", "scheduled") not in LIVE_STATES:
        return None
    if job_problem(job) is not None:
        return None
    return due.timestamp()


def describe_repeat(repeat: dict[str, Any] | None) -> str:
    """Hermes' way of showing `repeat`: forever, once, 2/5, 5 times (? when it is not Hermes' shape)."""
    if repeat is not None and not isinstance(repeat, dict):
        return "?"
    times = (repeat or {}).get("times")
    done = _completed(repeat)
    if times is None:
        return "forever"
    if times == 1:
        return "once" if not done else "1/1"
    return f"{done}/{times}" if done else f"{times} times"


def _completed(repeat: Any) -> int:
    done = repeat.get("completed") if isinstance(repeat, dict) else None
    return done if isinstance(done, int) and not isinstance(done, bool) else 0


def _kind(job: dict[str, Any]) -> Any:
    schedule = job.get("schedule")
    return schedule.get("kind") if isinstance(schedule, dict) else None


_FOREVER = (None, "", "forever", "inf", "none")


def check_repeat(value: Any) -> int | None:
    """How many runs `repeat` asks for (None: forever, as for 0 or fewer), or `CronError` naming it:
    a whole number (as a number or in words), forever or once; never a flag, a fraction or infinity."""
    if value in _FOREVER:
        return None
    if value == "once":
        return 1
    times = None
    if isinstance(value, str) and re.fullmatch(r"\s*[+-]?\d{1,18}\s*", value):
        times = int(value)
    elif isinstance(value, int) and not isinstance(value, bool):
        times = value
    elif isinstance(value, float) and value.is_integer():
        times = int(value)
    if times is None:
        raise CronError(f"repeat {value!r:.60} is not a number of runs (or forever, once)")
    return times if times > 0 else None


def _repeat(value: Any, once: bool) -> dict[str, Any]:
    times = check_repeat(value)
    return {"times": 1 if once and value in _FOREVER else times, "completed": 0}  # a one-shot's default: once


class Jobs:
    """The cron jobs of one home, wherever they are kept (see the module).

    Subclasses keep the jobs (`read`, `_insert`, `_update`, `_delete`) and the claims that make a
    due slot run once (`claim_due`, `claim`, `finish`, `note`); what a change does to a job is
    written once, here.
    """

    where: str = ""  # the file or the database, for messages

    # -- kept by each implementation -------------------------------------------------------------

    def read(self) -> list[dict[str, Any]]:
        """Every job, in the order they were made."""
        raise NotImplementedError

    def _insert(self, job: dict[str, Any], now: dt.datetime) -> None:
        raise NotImplementedError

    def _update(self, ref: str, mutate: Mutate[T], now: dt.datetime) -> T:
        """`mutate(job)` on the job `ref` names (`find`), stored when it returns."""
        raise NotImplementedError

    def _delete(self, ref: str, now: dt.datetime) -> dict[str, Any]:
        raise NotImplementedError

    def claim_due(self, moment: dt.datetime, limit: int = 0) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """Claim the jobs due at `moment` that nobody runs (at most `limit`; 0: all), for this
        process: (copies of the jobs to run, copies of jobs to record as failed without running)."""
        raise NotImplementedError

    def claim(self, job_id: str, moment: dt.datetime) -> dict[str, Any] | None:
        """Claim the job now, due or not (a run by hand); None when another process runs it."""
        raise NotImplementedError

    def finish(self, job_id: str, mutate: Mutate[Any], moment: dt.datetime, outcome: dict[str, Any]) -> Any:
        """A claimed job's run is over: `mutate(job)` records it and the claim is let go; what
        `mutate` returned, or None when the job was removed meanwhile (or taken over)."""
        raise NotImplementedError

    def note(self, job_id: str, mutate: Mutate[Any], now: dt.datetime) -> None:
        """`mutate(job)` on the job `job_id` when it still exists (a delivery's outcome)."""
        raise NotImplementedError

    def close(self) -> None:
        """Let go of what this process holds (its host's heartbeat)."""

    def __enter__(self) -> Jobs:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- one job -----------------------------------------------------------------------------------

    @staticmethod
    def find(jobs: list[dict[str, Any]], ref: str) -> dict[str, Any]:
        """The job whose id is `ref`, or whose name is (case-insensitively); `CronError` otherwise."""
        for job in jobs:
            if job.get("id") == ref or str(job.get("id")) == ref:
                return job
        named = [job for job in jobs if str(job.get("name", "")).lower() == ref.lower()]
        if len(named) == 1:
            return named[0]
        if named:
            raise CronError(f"{len(named)} jobs are named {ref!r}; use an id: "
                            + ", ".join(str(job["id"]) for job in named))
        known = ", ".join(f"{job['id']} ({job.get('name', '')})" for job in jobs[:10]) or "none yet"
        raise CronError(f"no cron job {ref!r} (jobs: {known}); see `hermes cron list`")

    def get(self, ref: str) -> dict[str, Any]:
        """The job `ref` (an id or a name) names; `CronError` when none does."""
        return self.find(self.read(), ref)

    def add(self, schedule: str, prompt: str, now: dt.datetime, tz: dt.tzinfo, *, name: str | None = None,
            deliver: str | None = None, repeat: Any = None, skills: list[str] | None = None,
            origin: dict[str, Any] | None = None) -> dict[str, Any]:
        """A new job (the schedule parsed first: a bad one changes nothing)."""
        parsed = parse_schedule(schedule, at=now, tz=tz)
        if not prompt.strip() and not skills:
            raise CronError("a cron job needs a prompt (or skills) to run")
        first = next_run(parsed, now, tz)
        job: dict[str, Any] = {
            "id": uuid.uuid4().hex[:12], "name": (name or prompt or (skills or ["job"])[0]).strip()[:50],
            "prompt": prompt, "skills": list(skills or []), "skill": skills[0] if skills else None,
            "schedule": parsed, "schedule_display": parsed["display"],
            "repeat": _repeat(repeat, parsed["kind"] == "once"), "enabled": True, "state": "scheduled",
            "deliver": deliver or ("origin" if origin else "local"), "origin": origin,
            "created_at": now.astimezone(tz).isoformat(), "next_run_at": first.astimezone(tz).isoformat() if first
            else None, "last_run_at": None, "last_status": None, "last_error": None, "last_delivery_error": None,
        }
        self._insert(job, now)
        return job

    def edit(self, ref: str, now: dt.datetime, tz: dt.tzinfo, **fields: Any) -> dict[str, Any]:
        """Change a job's `schedule` (re-parsed, its next run recomputed), `prompt`, `name`, `deliver`,
        `repeat` or `skills`; the fields given as None stay."""
        parsed = parse_schedule(fields["schedule"], at=now, tz=tz) if fields.get("schedule") else None

        def mutate(job: dict[str, Any]) -> dict[str, Any]:
            for key in ("prompt", "name", "deliver"):
                if fields.get(key) is not None:
                    job[key] = fields[key]
            if fields.get("skills") is not None:
                job["skills"], job["skill"] = list(fields["skills"]), (list(fields["skills"]) or [None])[0]
            if parsed is not None:
                job["schedule"], job["schedule_display"] = parsed, parsed["display"]
                following = next_run(parsed, now, tz)
                job["next_run_at"] = following.astimezone(tz).isoformat() if following else None
                if job.get("state") in ("completed", "error") and following is not None:
                    job["state"], job["enabled"] = "scheduled", True
            if fields.get("repeat") is not None:
                job["repeat"] = {**_repeat(fields["repeat"], _kind(job) == "once"),
                                 "completed": _completed(job.get("repeat"))}
            return _shown(job)

        return self._update(ref, mutate, now)

    def set_paused(self, ref: str, paused: bool, now: dt.datetime, tz: dt.tzinfo) -> dict[str, Any]:
        def mutate(job: dict[str, Any]) -> dict[str, Any]:
            if paused:
                job.update(enabled=False, state="paused", paused_at=now.astimezone(tz).isoformat())
            else:
                job.update(enabled=True, state="scheduled", paused_at=None)
                due = stamp(job.get("next_run_at"))
                if _kind(job) != "once" and (due is None or due < now):
                    following = next_run(job["schedule"], now, tz)  # missed while paused: from now on
                    job["next_run_at"] = following.astimezone(tz).isoformat() if following else None
            return _shown(job)

        return self._update(ref, mutate, now)

    def trigger(self, ref: str, now: dt.datetime, tz: dt.tzinfo) -> dict[str, Any]:
        """Make a job due now: the next tick runs it (a paused or completed job too, once)."""
        def mutate(job: dict[str, Any]) -> dict[str, Any]:
            job.update(next_run_at=now.astimezone(tz).isoformat(), enabled=True,
                       state="scheduled" if job.get("state") != "error" else "error")
            return _shown(job)

        return self._update(ref, mutate, now)

    def remove(self, ref: str, now: dt.datetime) -> dict[str, Any]:
        return self._delete(ref, now)


def _shown(job: dict[str, Any]) -> dict[str, Any]:
    """A copy of a job as callers see it (without a claim)."""
    return {key: value for key, value in job.items() if key != "claim"}


def _alive(claim: Any) -> bool:
    """Whether a jobs.json claim's process still runs (on this machine)."""
    if not isinstance(claim, dict) or claim.get("host") != socket.gethostname():
        return False
    try:
        os.kill(int(claim.get("pid", 0)), 0)
    except (OSError, ValueError, TypeError):
        return False
    return True


class JobsFile(Jobs):
    """The cron jobs in `$HERMES_HOME/cron/jobs.json` (see the module). A claim is the claiming
    process's id on the job; one whose process is gone is void, so the job is due again."""

    def __init__(self, home: Path) -> None:
        self.folder = Path(home) / "cron"
        self.path = self.folder / "jobs.json"
        self.where = str(self.path)

    def read(self) -> list[dict[str, Any]]:
        """The jobs on disk now ([] when there is no file)."""
        try:
            data = read_json(self.path) if self.path.stat().st_size else {"jobs": []}
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise CronError(f"cannot read {self.path}: {exc.strerror or exc}") from None
        except ValueError as exc:  # not UTF-8, not JSON, nested past the parser: said by read_json
            raise CronError(f"{exc}; fix it or move it aside (hermes cron starts a new one)") from None
        if isinstance(data, list):
            jobs = data
        elif isinstance(data, dict) and isinstance(data.get("jobs"), list):
            jobs = data["jobs"]
        elif isinstance(data, dict) and isinstance(data.get("jobs"), dict):
            jobs = [{"id": key, **value} for key, value in data["jobs"].items() if isinstance(value, dict)]
        else:
            raise CronError(f"{self.path} holds no list of jobs (expected {{\"jobs\": [...]}}); fix it or move it aside")
        return [job for job in jobs if isinstance(job, dict) and job.get("id")]

    def change(self, mutate: Callable[[list[dict[str, Any]]], T], now: dt.datetime) -> T:
        """`mutate(jobs)` on the jobs as they are on disk, under the lock, then written back whole
        when it changed them (nothing is written when it raises, or when nothing changed: a tick
        with nothing due writes nothing)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        with locked(self.path):
            jobs = self.read()
            before = copy.deepcopy(jobs)
            result = mutate(jobs)
            if jobs != before:
                write_json(self.path, {"jobs": jobs, "updated_at": now.isoformat()}, mode=0o600)
        return result

    def _insert(self, job: dict[str, Any], now: dt.datetime) -> None:
        self.change(lambda jobs: jobs.append(job), now)

    def _update(self, ref: str, mutate: Mutate[T], now: dt.datetime) -> T:
        return self.change(lambda jobs: mutate(self.find(jobs, ref)), now)

    def _delete(self, ref: str, now: dt.datetime) -> dict[str, Any]:
        def mutate(jobs: list[dict[str, Any]]) -> dict[str, Any]:
            job = self.find(jobs, ref)
            jobs.remove(job)
            return _shown(job)

        return self.change(mutate, now)

    def _claim(self, wanted: Callable[[dict[str, Any]], bool], moment: dt.datetime, limit: int) -> list[dict[str, Any]]:
        claim = {"at": moment.isoformat(), "pid": os.getpid(), "host": socket.gethostname()}

        def mutate(jobs: list[dict[str, Any]]) -> list[dict[str, Any]]:
            taken: list[dict[str, Any]] = []
            for job in jobs:
                if wanted(job) and not _alive(job.get("claim")) and (not limit or len(taken) < limit):
                    job["claim"] = claim
                    taken.append(dict(job))
            return taken

        return self.change(mutate, moment)

    def claim_due(self, moment: dt.datetime, limit: int = 0) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        def due(job: dict[str, Any]) -> bool:
            at = due_at(job)
            return at is not None and at <= moment.timestamp()

        return self._claim(due, moment, limit), []

    def claim(self, job_id: str, moment: dt.datetime) -> dict[str, Any] | None:
        taken = self._claim(lambda job: job.get("id") == job_id, moment, 1)
        return taken[0] if taken else None

    def finish(self, job_id: str, mutate: Mutate[Any], moment: dt.datetime, outcome: dict[str, Any]) -> Any:
        def change(jobs: list[dict[str, Any]]) -> Any:
            current = next((job for job in jobs if job.get("id") == job_id), None)
            if current is None:  # removed while it ran
                return None
            current.pop("claim", None)
            return mutate(current)

        return self.change(change, moment)

    def note(self, job_id: str, mutate: Mutate[Any], now: dt.datetime) -> None:
        def change(jobs: list[dict[str, Any]]) -> None:
            for job in jobs:
                if job.get("id") == job_id:
                    mutate(job)

        self.change(change, now)
