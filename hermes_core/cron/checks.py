"""What a stored job may hold, checked in one place: a job hand-edited into jobs.json (or imported
from one) with a field no run can use is never due, is listed with its problem and is skipped by
each pass with a warning naming it, while every other job runs; errors are kept to one line.

    job_problem({"id": "a1", "schedule": "x"})   # "schedule 'x' is not one Hermes stores (...)"
    one_line("Traceback (most recent call last):\\n  ...\\nValueError: bad")   # "ValueError: bad"
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from hermes_core import CronError

from .schedule import check_schedule, stamp

__all__ = ["job_problem", "one_line"]

_LONGEST = 500  # characters of an error kept on a job
_TEXT = (str, type(None))
_FIELDS: dict[str, tuple[type, ...]] = {  # the fields a run reads, and the types Hermes writes in them
    "name": _TEXT, "prompt": _TEXT, "skill": _TEXT, "deliver": _TEXT, "state": _TEXT,
    "skills": (list, type(None)), "origin": (dict, type(None)), "repeat": (dict, type(None)),
    "enabled": (bool,), "next_run_at": _TEXT,
}
_WHAT = {str: "text", type(None): "null", list: "a list", dict: "an object", bool: "true or false"}


def job_problem(job: dict[str, Any], at: dt.datetime | None = None) -> str | None:
    """Why a stored job cannot run, in words (the field, its value, what it takes); None when it can."""
    job_id = job.get("id")
    if not isinstance(job_id, str) or not job_id.strip():
        return f"id {_shown(job_id)} is not text"
    for field, types in _FIELDS.items():
        if field in job and not isinstance(job[field], types):
            return f"{field} {_shown(job[field])} is not " + " or ".join(_WHAT[kind] for kind in types)
    if not all(isinstance(skill, str) for skill in job.get("skills") or ()):
        return f"skills {_shown(job['skills'])} is not a list of skill names"
    repeat = job.get("repeat") or {}
    for field in ("times", "completed"):
        value = repeat.get(field)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            return f"repeat.{field} {_shown(value)} is not a whole number"
    if job.get("next_run_at") is not None and stamp(job["next_run_at"]) is None:
        return f"next_run_at {_shown(job['next_run_at'])} is not an ISO timestamp"
    try:
        check_schedule(job.get("schedule"), at or dt.datetime.now(dt.timezone.utc), dt.timezone.utc)
    except CronError as exc:
        return str(exc).removeprefix("the ")
    return None


def one_line(text: Any) -> str | None:
    """An error as one line: a traceback's last line (the exception), other lines joined; at most
    500 characters. None stays None."""
    if text is None:
        return None
    lines = [line.strip() for line in str(text).splitlines() if line.strip()]
    if any(line.startswith("Traceback (most recent call last)") for line in lines):
        lines = lines[-1:]
    joined = " ".join(lines)
    return joined if len(joined) <= _LONGEST else joined[:_LONGEST - 1] + "…"


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
