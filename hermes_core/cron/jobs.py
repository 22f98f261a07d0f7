"""The jobs: `$HERMES_HOME/cron/jobs.json` in Hermes' shape, read and written by one process at a time.

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

import copy
import datetime as dt
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from hermes_core import CronError
from hermes_core.hosting import locked, read_json, write_json

from .schedule import next_run, parse_schedule, stamp

__all__ = ["Jobs", "LIVE_STATES", "describe_repeat"]

T = TypeVar("T")
LIVE_STATES = ("scheduled", "error")  # the states a job may be due in


def describe_repeat(repeat: dict[str, Any] | None) -> str:
    """Hermes' way of showing `repeat`: forever, once, 2/5, 5 times."""
    times = (repeat or {}).get("times")
    done = int((repeat or {}).get("completed") or 0)
    if times is None:
        return "forever"
    if times == 1:
        return "once" if not done else "1/1"
    return f"{done}/{times}" if done else f"{times} times"


def _repeat(value: Any, once: bool) -> dict[str, Any]:
    if value in (None, "", "forever", "inf", "none"):
        times = 1 if once else None
    elif value == "once":
        times = 1
    else:
        try:
            times = int(value)
        except (TypeError, ValueError):
            raise CronError(f"repeat {value!r} is not a number of runs (or forever, once)") from None
        times = times if times > 0 else None
    return {"times": times, "completed": 0}


class Jobs:
    """The cron jobs of one `$HERMES_HOME`."""

    def __init__(self, home: Path) -> None:
        self.folder = Path(home) / "cron"
        self.path = self.folder / "jobs.json"

    # -- reading and writing ---------------------------------------------------------------------

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

    # -- one job -----------------------------------------------------------------------------------

    @staticmethod
    def find(jobs: list[dict[str, Any]], ref: str) -> dict[str, Any]:
        """The job whose id is `ref`, or whose name is (case-insensitively); `CronError` otherwise."""
        for job in jobs:
            if job.get("id") == ref:
                return job
        named = [job for job in jobs if str(job.get("name", "")).lower() == ref.lower()]
        if len(named) == 1:
            return named[0]
        if named:
            raise CronError(f"{len(named)} jobs are named {ref!r}; use an id: "
                            + ", ".join(str(job["id"]) for job in named))
        known = ", ".join(f"{job['id']} ({job.get('name', '')})" for job in jobs[:10]) or "none yet"
        raise CronError(f"no cron job {ref!r} (jobs: {known}); see `hermes cron list`")

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
        self.change(lambda jobs: jobs.append(job), now)
        return job

    def edit(self, ref: str, now: dt.datetime, tz: dt.tzinfo, **fields: Any) -> dict[str, Any]:
        """Change a job's `schedule` (re-parsed, its next run recomputed), `prompt`, `name`, `deliver`,
        `repeat` or `skills`; the fields given as None stay."""
        parsed = parse_schedule(fields["schedule"], at=now, tz=tz) if fields.get("schedule") else None

        def mutate(jobs: list[dict[str, Any]]) -> dict[str, Any]:
            job = self.find(jobs, ref)
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
                job["repeat"] = {**_repeat(fields["repeat"], job["schedule"].get("kind") == "once"),
                                 "completed": int((job.get("repeat") or {}).get("completed") or 0)}
            return dict(job)

        return self.change(mutate, now)

    def set_paused(self, ref: str, paused: bool, now: dt.datetime, tz: dt.tzinfo) -> dict[str, Any]:
        def mutate(jobs: list[dict[str, Any]]) -> dict[str, Any]:
            job = self.find(jobs, ref)
            if paused:
                job.update(enabled=False, state="paused", paused_at=now.astimezone(tz).isoformat())
            else:
                job.update(enabled=True, state="scheduled", paused_at=None)
                due = stamp(job.get("next_run_at"))
                if job["schedule"].get("kind") != "once" and (due is None or due < now):
                    following = next_run(job["schedule"], now, tz)  # missed while paused: from now on
                    job["next_run_at"] = following.astimezone(tz).isoformat() if following else None
            return dict(job)

        return self.change(mutate, now)

    def trigger(self, ref: str, now: dt.datetime, tz: dt.tzinfo) -> dict[str, Any]:
        """Make a job due now: the next tick runs it (a paused or completed job too, once)."""
        def mutate(jobs: list[dict[str, Any]]) -> dict[str, Any]:
            job = self.find(jobs, ref)
            job.update(next_run_at=now.astimezone(tz).isoformat(), enabled=True,
                       state="scheduled" if job.get("state") != "error" else "error")
            return dict(job)

        return self.change(mutate, now)

    def remove(self, ref: str, now: dt.datetime) -> dict[str, Any]:
        def mutate(jobs: list[dict[str, Any]]) -> dict[str, Any]:
            job = self.find(jobs, ref)
            jobs.remove(job)
            return job

        return self.change(mutate, now)
