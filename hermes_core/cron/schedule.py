"""When a job runs: Hermes' schedule formats, parsed into Hermes' stored shapes, and the clock.

    30m, every 2h, every 1d          {"kind": "interval", "minutes": N, "display": "every Nm"}
    0 9 * * 1-5                      {"kind": "cron", "expr": "0 9 * * 1-5", "display": ...}
    every monday 9am, weekdays at 9  {"kind": "cron", "expr": "0 9 * * 1", ...} (a day and a time)
    2026-12-01T09:00, in 30m         {"kind": "once", "run_at": ISO, "display": ...}

Cron expressions are computed by croniter (the library Hermes uses; the `cron` extra), in the
configured time zone (`HERMES_TIMEZONE`, else `timezone:` in config.yaml, else this machine's),
across daylight-saving changes. `HERMES_CRON_NOW` (ISO-8601 or UNIX seconds, from 1970 to 2999)
fixes "now" for tests.

A schedule is checked in one place, `check_schedule` (called by `parse_schedule`, so by every
caller that makes or edits a job, and on each stored job): a shape Hermes does not store, a cron
expression of other than five fields (croniter would read a sixth as seconds), a range written
backwards (`5-1`, which croniter would wrap round), a cron expression no date matches (`0 0 31 2 *`)
or a delay or interval past `MAX_MINUTES` (about ten years) is a `CronError` in one line, never an
exception of the date library.
"""

from __future__ import annotations

import datetime as dt
import math
import os
import re
from typing import Any

from hermes_core import Config, CronError
from hermes_core import config_keys as keys

__all__ = ["MAX_MINUTES", "NOW_VARIABLE", "check_schedule", "next_run", "now", "parse_duration", "parse_schedule",
           "parse_time", "stamp", "zone"]

NOW_VARIABLE = "HERMES_CRON_NOW"
MAX_MINUTES = 3653 * 1440  # the longest interval or delay, and how far ahead a one-shot may be: ten years
_UTC = dt.timezone.utc
_CLOCK_RANGE = (dt.datetime(1970, 1, 1, tzinfo=_UTC), dt.datetime(3000, 1, 1, tzinfo=_UTC))
ONESHOT_GRACE = 120.0  # seconds a one-shot may be late (or in the past when made) and still run
_UNITS = {"m": 1, "min": 1, "mins": 1, "minute": 1, "minutes": 1, "h": 60, "hr": 60, "hrs": 60, "hour": 60,
          "hours": 60, "d": 1440, "day": 1440, "days": 1440}
_DURATION = re.compile(r"^(\d*)\s*([a-z]+)$")
_DAYS = {"sunday": "0", "monday": "1", "tuesday": "2", "wednesday": "3", "thursday": "4", "friday": "5",
         "saturday": "6", "sun": "0", "mon": "1", "tue": "2", "tues": "2", "wed": "3", "thu": "4", "thur": "4",
         "thurs": "4", "fri": "5", "sat": "6", "day": "*", "daily": "*", "everyday": "*", "weekday": "1-5",
         "weekdays": "1-5", "weekend": "0,6", "weekends": "0,6"}
_FIELD = re.compile(r"^[A-Za-z\d*\-,/?#LW]+$")
_FIELD_RANGES = (("minute", 0, 59), ("hour", 0, 23), ("day", 1, 31), ("month", 1, 12), ("weekday", 0, 6))
_NAMED = {name: str(number) for number, name in enumerate(["sun", "mon", "tue", "wed", "thu", "fri", "sat"])} | {
    name: str(number) for number, name in enumerate(["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep",
                                                     "oct", "nov", "dec"], 1)}
FORMATS = "30m, every 2h, 0 9 * * 1-5, every monday 9am, weekdays at 9:30, 2026-12-01T09:00, in 30m"


def now() -> dt.datetime:
    """Now (aware, UTC), or `HERMES_CRON_NOW` when it is set (`CronError` naming it when it is not a
    moment from 1970 to 2999)."""
    fixed = os.environ.get(NOW_VARIABLE, "").strip()
    if not fixed:
        return dt.datetime.now(_UTC)
    moment = _moment(fixed)
    if moment is None or not _CLOCK_RANGE[0] <= moment < _CLOCK_RANGE[1]:
        raise CronError(f"{NOW_VARIABLE}={fixed[:40]!r} is not a moment the test clock takes: ISO-8601 "
                        "(2026-11-23T08:00Z) or UNIX seconds, from 1970 to 2999; unset it for the real clock")
    return moment


def _moment(text: str) -> dt.datetime | None:
    """The moment (UTC) of ISO-8601 or UNIX seconds; None when `text` is neither, or past what dates hold."""
    try:
        seconds = float(text)
    except ValueError:
        seconds = None
    try:
        if seconds is not None:
            return dt.datetime.fromtimestamp(seconds, _UTC) if math.isfinite(seconds) else None
        moment = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
        return (moment if moment.tzinfo else moment.replace(tzinfo=_UTC)).astimezone(_UTC)
    except (ValueError, OverflowError, OSError):
        return None


def zone(config: Config | None = None) -> dt.tzinfo:
    """The time zone of schedules: `HERMES_TIMEZONE`, else config.yaml's `timezone`, else this machine's."""
    from zoneinfo import ZoneInfo

    name = os.environ.get("HERMES_TIMEZONE", "").strip() or (config.read(keys.TIMEZONE) if config else None)
    if name:
        try:
            return ZoneInfo(name)
        except (KeyError, ValueError):
            raise CronError(f"the time zone {name!r} (HERMES_TIMEZONE or timezone: in config.yaml) is not an IANA "
                            "zone such as Europe/Paris") from None
    local = dt.datetime.now().astimezone().tzinfo
    return local if local is not None else dt.timezone.utc


def parse_duration(text: str) -> int | None:
    """Minutes of `30m`, `2 hours`, `d` (a bare unit is one of it); None when `text` is not a duration."""
    match = _DURATION.match(text.strip().lower())
    if not match or match.group(2) not in _UNITS:
        return None
    digits = match.group(1).lstrip("0") if match.group(1) else "1"
    count = int(digits or 0) if len(digits) <= 18 else 10**18  # past any range, without parsing 5,000 digits
    return count * _UNITS[match.group(2)] if count > 0 else None


def parse_time(text: str) -> tuple[int, int] | None:
    """(hour, minute) of `9am`, `9:30pm`, `14:00`, `7`, `noon`, `midnight`; None otherwise."""
    text = text.strip().lower()
    if text in ("noon", "midday"):
        return 12, 0
    if text == "midnight":
        return 0, 0
    match = re.fullmatch(r"(\d{1,2})(?::(\d{2}))?\s*(am|pm)?", text)
    if not match:
        return None
    hour, minute, half = int(match.group(1)), int(match.group(2) or 0), match.group(3)
    if half:
        if not 1 <= hour <= 12:
            return None
        hour = hour % 12 + (12 if half == "pm" else 0)
    return (hour, minute) if hour < 24 and minute < 60 else None


def _days_and_time(text: str) -> str | None:
    """The cron expression of `every monday 9am`, `weekdays at 9:30`, `monday, wednesday at 9am`."""
    words = re.sub(r"^every\s+", "", text.strip().lower())
    head, _, when = words.rpartition(" at ") if " at " in words else words.rpartition(" ")
    time = parse_time(when)
    if time is None or not head:
        return None
    days = [d for d in re.split(r"\s*(?:,|\band\b)\s*|\s+", head.strip()) if d]
    fields = []
    for day in days:
        field = _DAYS.get(day.rstrip("s") if day not in _DAYS else day)
        if field is None:
            return None
        fields.append(field)
    dow = "*" if "*" in fields else ",".join(dict.fromkeys(fields))
    return f"{time[1]} {time[0]} * * {dow}"


def _cron(expr: str) -> Any:
    try:
        from croniter import croniter
    except ImportError:
        raise CronError(f"the cron expression {expr!r} needs croniter: pip install 'hermes-core[cron]'") from None
    return croniter


def _check_cron(expr: str) -> None:
    """A cron expression as Hermes writes them: five fields, each range from low to high, and what
    croniter reads. croniter alone would take a sixth field (seconds) and a seventh (years), and
    read a range written backwards (`5-1`) as wrapping round (5 to 59, then 0 to 1). A range whose
    low end is past its field is croniter's to judge: `60-5` is invalid, and weekday `7-1` is Sunday
    (7, as 0) to Monday."""
    fields = expr.split()
    if len(fields) != len(_FIELD_RANGES):
        extra = " (seconds and years are not taken)" if len(fields) > len(_FIELD_RANGES) else ""
        raise CronError(f"the schedule {expr!r} has {len(fields)} fields; a cron expression has 5{extra}: "
                        "minute hour day month weekday, as in 0 9 * * 1-5")
    for (name, lowest, highest), field in zip(_FIELD_RANGES, fields):
        for part in field.split(","):
            ends = re.fullmatch(r"([A-Za-z\d]+)-([A-Za-z\d]+)", part.split("/")[0])
            if ends is None:
                continue
            low, high = (_NAMED.get(end.lower(), end) for end in ends.groups())
            if low.isdigit() and high.isdigit() and int(high) < int(low) <= highest:  # past the field: croniter's
                both = ",".join(_span(*pair) for pair in ((int(low), highest), (lowest, int(high))))
                raise CronError(f"the schedule {expr!r}: the {name} range {ends.group(0)} runs backwards; write "
                                f"it from low to high, or as two ranges ({both})")
    croniter = _cron(expr)
    if not croniter.is_valid(expr):
        raise CronError(f"the schedule {expr!r} is not a valid cron expression (minute hour day month weekday, "
                        "as in 0 9 * * 1-5)")


def _span(low: int, high: int) -> str:
    return str(low) if low == high else f"{low}-{high}"


def _minutes(schedule: str, duration: str) -> int:
    minutes = parse_duration(duration)
    if minutes is None:
        raise CronError(f"the schedule {schedule!r}: {duration!r} is not a duration such as 30m, 2h or 1d")
    _in_range(schedule, minutes)
    return minutes


def _in_range(schedule: str, minutes: int) -> None:
    if minutes > MAX_MINUTES:
        raise CronError(f"the schedule {schedule[:60]!r} is out of range: at most {MAX_MINUTES}m "
                        "(ten years) between runs or until a one-shot")


def parse_schedule(text: str, *, at: dt.datetime | None = None, tz: dt.tzinfo | None = None) -> dict[str, Any]:
    """Hermes' stored shape of the schedule `text` (see the module), checked (`check_schedule`: it
    fires, within range); `CronError` naming it otherwise."""
    moment = at or now()
    parsed = _parse(text, moment, tz or _UTC)
    check_schedule(parsed, moment, tz or _UTC)
    return parsed


def _parse(text: str, moment: dt.datetime, tz: dt.tzinfo) -> dict[str, Any]:
    original = " ".join(str(text).split())
    lowered = original.lower()
    if not original:
        raise CronError(f"an empty schedule; use one of: {FORMATS}")
    expr = _days_and_time(lowered)
    if expr is not None:
        _check_cron(expr)
        return {"kind": "cron", "expr": expr, "display": original}
    if lowered.startswith("every "):
        minutes = _minutes(original, lowered[6:])
        return {"kind": "interval", "minutes": minutes, "display": f"every {minutes}m"}
    fields = original.split()
    if len(fields) >= 5 and all(_FIELD.match(field) for field in fields):
        _check_cron(original)
        return {"kind": "cron", "expr": original, "display": original}
    if lowered.startswith("in "):
        run_at = moment + dt.timedelta(minutes=_minutes(original, lowered[3:]))  # the clock ends before 3000
        return {"kind": "once", "run_at": run_at.astimezone(tz).isoformat(), "display": f"once in {lowered[3:]}"}
    if re.match(r"^\d{4}-\d{2}-\d{2}", lowered):
        try:
            run_at = dt.datetime.fromisoformat(original.replace("Z", "+00:00"))
            run_at = run_at if run_at.tzinfo else run_at.replace(tzinfo=tz)
            run_at.astimezone(_UTC)
        except (ValueError, OverflowError):
            raise CronError(f"the schedule {original!r} is not an ISO timestamp such as 2026-12-01T09:00") from None
        if (moment - run_at).total_seconds() > ONESHOT_GRACE:
            raise CronError(f"the schedule {original!r} is more than {ONESHOT_GRACE:g}s in the past")
        _in_range(original, int((run_at - moment).total_seconds() // 60))
        shown = f"once at {run_at.astimezone(tz):%Y-%m-%d %H:%M}"
        return {"kind": "once", "run_at": run_at.isoformat(), "display": shown}
    bare = parse_duration(lowered)
    if bare is not None:
        _in_range(original, bare)
        return {"kind": "interval", "minutes": bare, "display": f"every {bare}m"}
    raise CronError(f"the schedule {original!r} is not one hermes-core reads; use one of: {FORMATS}")


def stamp(value: str | None) -> dt.datetime | None:
    """A stored timestamp (ISO; a naive one is this machine's time, as Hermes reads it), or None."""
    if not value:
        return None
    try:
        moment = dt.datetime.fromisoformat(str(value).replace("Z", "+00:00"))
        return moment if moment.tzinfo else moment.astimezone()
    except (ValueError, OverflowError):
        return None


def next_run(schedule: Any, after: dt.datetime, tz: dt.tzinfo, *, ran: bool = False) -> dt.datetime | None:
    """The first time strictly after `after` the schedule fires (None: never again, a one-shot
    that `ran`); `CronError` in one line for a schedule that cannot (see `check_schedule`)."""
    if ran and isinstance(schedule, dict) and schedule.get("kind") == "once":
        return None
    return check_schedule(schedule, after, tz)


def check_schedule(schedule: Any, after: dt.datetime, tz: dt.tzinfo) -> dt.datetime:
    """The first run after `after` of a stored schedule (a one-shot: its time), checked: `CronError`
    in one line when it is not a shape Hermes stores, never fires (`0 0 31 2 *`) or is out of range
    (`MAX_MINUTES`). The one check of a schedule: `parse_schedule` calls it, so every caller that
    makes or edits a job (`hermes cron add|edit`, the `cronjob` tool, `/api/jobs`), and `next_run`,
    so every stored job (`checks.job_problem`) and every run recorded."""
    kind = schedule.get("kind") if isinstance(schedule, dict) else None
    if kind == "once":
        run_at = stamp(schedule.get("run_at")) if isinstance(schedule.get("run_at"), str) else None
        if run_at is None:
            raise CronError(f"a stored one-shot's run_at {schedule.get('run_at')!r} is not an ISO timestamp")
        return run_at
    if kind == "interval":
        minutes = schedule.get("minutes")
        if isinstance(minutes, bool) or not isinstance(minutes, int) or minutes < 1:
            raise CronError(f"a stored interval's minutes {minutes!r} is not a whole number of minutes")
        _in_range(f"every {minutes}m", minutes)
        return after + dt.timedelta(minutes=minutes)
    if kind == "cron":
        expr = schedule.get("expr")
        if not isinstance(expr, str):
            raise CronError(f"a stored cron schedule's expr {expr!r} is not a cron expression")
        _check_cron(expr)
        croniter = _cron(expr)
        local = after.astimezone(tz)
        try:
            following: dt.datetime = croniter(expr, local).get_next(dt.datetime)
        except (ValueError, OverflowError):  # croniter's "failed to find next date" is a ValueError
            raise CronError(f"the schedule {expr!r} never fires: no date matches it (check its day "
                            "and month fields)") from None
        following = following if following.tzinfo else following.replace(tzinfo=tz)
        return following.astimezone(_UTC)
    shown = repr(schedule)[:60]
    raise CronError(f"the schedule {shown} is not one Hermes stores (an object with kind interval, cron or once)")
