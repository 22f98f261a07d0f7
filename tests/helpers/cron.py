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
