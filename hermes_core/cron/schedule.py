"""When a job runs: Hermes' schedule formats, parsed into Hermes' stored shapes, and the clock.

    30m, every 2h, every 1d          {"kind": "interval", "minutes": N, "display": "every Nm"}
    0 9 * * 1-5                      {"kind": "cron", "expr": "0 9 * * 1-5", "display": ...}
    every monday 9am, weekdays at 9  {"kind": "cron", "expr": "0 9 * * 1", ...} (a day and a time)
    2026-12-01T09:00, in 30m         {"kind": "once", "run_at": ISO, "display": ...}

Cron expressions are computed by croniter (the library Hermes uses; the `cron` extra), in the
configured time zone (`HERMES_TIMEZONE`, else `timezone:` in config.yaml, else this machine's),
across daylight-saving changes. `HERMES_CRON_NOW` (ISO-8601 or UNIX seconds) fixes "now" for tests.
"""

from __future__ import annotations

import datetime as dt
import os
import re
from typing import Any

from hermes_core import Config, CronError
from hermes_core import config_keys as keys

__all__ = ["NOW_VARIABLE", "next_run", "now", "parse_duration", "parse_schedule", "parse_time", "stamp", "zone"]

NOW_VARIABLE = "HERMES_CRON_NOW"
ONESHOT_GRACE = 120.0  # seconds a one-shot may be late (or in the past when made) and still run
_UNITS = {"m": 1, "min": 1, "mins": 1, "minute": 1, "minutes": 1, "h": 60, "hr": 60, "hrs": 60, "hour": 60,
          "hours": 60, "d": 1440, "day": 1440, "days": 1440}
_DURATION = re.compile(r"^(\d*)\s*([a-z]+)$")
_DAYS = {"sunday": "0", "monday": "1", "tuesday": "2", "wednesday": "3", "thursday": "4", "friday": "5",
         "saturday": "6", "sun": "0", "mon": "1", "tue": "2", "tues": "2", "wed": "3", "thu": "4", "thur": "4",
         "thurs": "4", "fri": "5", "sat": "6", "day": "*", "daily": "*", "everyday": "*", "weekday": "1-5",
         "weekdays": "1-5", "weekend": "0,6", "weekends": "0,6"}
_FIELD = re.compile(r"^[A-Za-z\d*\-,/?#LW]+$")
FORMATS = "30m, every 2h, 0 9 * * 1-5, every monday 9am, weekdays at 9:30, 2026-12-01T09:00, in 30m"


def now() -> dt.datetime:
    """Now (aware, UTC), or `HERMES_CRON_NOW` when it is set."""
    fixed = os.environ.get(NOW_VARIABLE, "").strip()
    if not fixed:
        return dt.datetime.now(dt.timezone.utc)
    try:
        return dt.datetime.fromtimestamp(float(fixed), dt.timezone.utc)
    except ValueError:
        pass
    try:
        moment = dt.datetime.fromisoformat(fixed.replace("Z", "+00:00"))
    except ValueError:
        raise CronError(f"{NOW_VARIABLE}={fixed!r} is neither ISO-8601 nor UNIX seconds") from None
    return (moment if moment.tzinfo else moment.replace(tzinfo=dt.timezone.utc)).astimezone(dt.timezone.utc)


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
    count = int(match.group(1) or 1)
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
    croniter = _cron(expr)
    if not croniter.is_valid(expr):
        raise CronError(f"the schedule {expr!r} is not a valid cron expression (minute hour day month weekday, "
                        "as in 0 9 * * 1-5)")


def _minutes(schedule: str, duration: str) -> int:
    minutes = parse_duration(duration)
    if minutes is None:
        raise CronError(f"the schedule {schedule!r}: {duration!r} is not a duration such as 30m, 2h or 1d")
    return minutes


def parse_schedule(text: str, *, at: dt.datetime | None = None, tz: dt.tzinfo | None = None) -> dict[str, Any]:
    """Hermes' stored shape of the schedule `text` (see the module); `CronError` naming it otherwise."""
    original = " ".join(str(text).split())
    lowered = original.lower()
    moment = at or now()
    tz = tz or dt.timezone.utc
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
        run_at = moment + dt.timedelta(minutes=_minutes(original, lowered[3:]))
        return {"kind": "once", "run_at": run_at.astimezone(tz).isoformat(), "display": f"once in {lowered[3:]}"}
    if re.match(r"^\d{4}-\d{2}-\d{2}", lowered):
        try:
            run_at = dt.datetime.fromisoformat(original.replace("Z", "+00:00"))
        except ValueError:
            raise CronError(f"the schedule {original!r} is not an ISO timestamp such as 2026-12-01T09:00") from None
        run_at = run_at if run_at.tzinfo else run_at.replace(tzinfo=tz)
        if (moment - run_at).total_seconds() > ONESHOT_GRACE:
            raise CronError(f"the schedule {original!r} is more than {ONESHOT_GRACE:g}s in the past")
        shown = f"once at {run_at.astimezone(tz):%Y-%m-%d %H:%M}"
        return {"kind": "once", "run_at": run_at.isoformat(), "display": shown}
    bare = parse_duration(lowered)
    if bare is not None:
        return {"kind": "interval", "minutes": bare, "display": f"every {bare}m"}
    raise CronError(f"the schedule {original!r} is not one hermes-core reads; use one of: {FORMATS}")


def stamp(value: str | None) -> dt.datetime | None:
    """A stored timestamp (ISO; a naive one is this machine's time, as Hermes reads it), or None."""
    if not value:
        return None
    try:
        moment = dt.datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.astimezone()


def next_run(schedule: dict[str, Any], after: dt.datetime, tz: dt.tzinfo, *, ran: bool = False) -> dt.datetime | None:
    """The first time strictly after `after` the schedule fires (None: never again; `ran`: a
    one-shot has run)."""
    kind = schedule.get("kind")
    if kind == "once":
        run_at = stamp(schedule.get("run_at"))
        return None if ran or run_at is None else run_at
    if kind == "interval":
        return after + dt.timedelta(minutes=int(schedule.get("minutes") or 1))
    if kind == "cron":
        expr = str(schedule.get("expr", ""))
        croniter = _cron(expr)
        local = after.astimezone(tz)
        following: dt.datetime = croniter(expr, local).get_next(dt.datetime)
        following = following if following.tzinfo else following.replace(tzinfo=tz)
        return following.astimezone(dt.timezone.utc)
    raise CronError(f"a stored schedule of unknown kind {kind!r}; edit the job with a new --schedule")
