"""Built-in plugin `clock`: the `current_time` tool, so a model never has to guess the date."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any

SCHEMA = {
    "name": "current_time",
    "description": "The current date and time, in UTC or in an IANA time zone such as 'Europe/Paris'.",
    "parameters": {
        "type": "object",
        "properties": {
            "timezone": {"type": "string", "description": "An IANA time zone name; UTC when omitted."},
        },
        "additionalProperties": False,
    },
}


def current_time(args: dict[str, Any], **_: Any) -> str:
    name = args.get("timezone") or "UTC"
    if name.upper() == "UTC":
        zone: Any = timezone.utc
    else:
        from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

        try:
            zone = ZoneInfo(name)
        except (ZoneInfoNotFoundError, ValueError):
            return json.dumps({"error": f"unknown time zone {name!r}; use an IANA name such as 'America/New_York'"})
    now = datetime.now(zone)
    return json.dumps({"iso": now.isoformat(timespec="seconds"), "timezone": name, "weekday": now.strftime("%A")})


def register(ctx: Any) -> None:
    ctx.register_tool("current_time", "clock", SCHEMA, current_time, emoji="🕒")
