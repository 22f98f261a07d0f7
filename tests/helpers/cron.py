"""`hermes cron` as a subprocess on a fixed clock (`HERMES_CRON_NOW`), and the jobs.json it keeps."""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
from pathlib import Path
from typing import Any

from tests.helpers import HERMES

T0 = dt.datetime(2026, 11, 23, 8, 0, tzinfo=dt.timezone.utc)  # a Monday, 08:00 UTC


def at(moment: dt.datetime) -> dict[str, str]:
    return {**os.environ, "HERMES_CRON_NOW": moment.isoformat()}


def cron(*args: str, when: dt.datetime = T0, check: int | None = 0) -> subprocess.CompletedProcess[str]:
    result = subprocess.run([str(HERMES), "cron", *args], capture_output=True, text=True, env=at(when), timeout=120)
    if check is not None:
        assert result.returncode == check, (result.returncode, result.stdout, result.stderr)
    return result


def jobs(home: Path) -> list[dict[str, Any]]:
    return json.loads((home / "cron" / "jobs.json").read_text())["jobs"]


def one_line_error(result: subprocess.CompletedProcess[str]) -> str:
    """The single line a refusal prints (exit 1, no traceback, no internal error)."""
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 1 and len(lines) == 1, (result.returncode, result.stdout, result.stderr)
    assert lines[0].startswith("hermes: error: ") and "internal error" not in lines[0], lines[0]
    return lines[0]


def hand_edit(home: Path, *changed: dict[str, Any]) -> None:
    """Add copies of the first job with `changed` fields to jobs.json, as a careless hand would."""
    path = home / "cron" / "jobs.json"
    data = json.loads(path.read_text())
    data["jobs"] += [{**data["jobs"][0], **fields} for fields in changed]
    path.write_text(json.dumps(data))
