"""A cron job made in a chat acts for the sender who made it: its run has their memories, and
neither the home's nor another sender's. A job with no origin (made with the CLI or the API)
has the home's, as before."""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
from pathlib import Path

from hermes_plugins_builtin.memory import BuiltinMemoryProvider
from tests.helpers import HERMES, llm_config

T0 = dt.datetime(2026, 11, 23, 8, 0, tzinfo=dt.timezone.utc)


def _remember(home: Path, text: str, **caller: str) -> None:
    provider = BuiltinMemoryProvider()
    provider.initialize("seed", hermes_home=str(home), **caller)
    provider.store.save(text)
    provider.shutdown()


def _job(job_id: str, origin: dict[str, str] | None) -> dict[str, object]:
    return {"id": job_id, "name": job_id, "prompt": f"Job {job_id}: what do you remember about the locker?",
            "skills": [],
            "schedule": {"kind": "interval", "minutes": 60, "display": "every 60m"}, "schedule_display": "every 60m",
            "repeat": {"times": None, "completed": 0}, "enabled": True, "state": "scheduled",
            "next_run_at": "2026-11-23T07:45:00+00:00", "deliver": "local", "origin": origin}


def test_a_job_made_in_a_chat_has_its_senders_memory(home: Path, llm_server) -> None:
    llm_config(home, llm_server.url, "timezone: UTC\n")
    _remember(home, "Alice's locker code is 4417", platform="fakechat", user_id="alice")
    _remember(home, "Bob's locker code is 5521", platform="fakechat", user_id="bob")
    _remember(home, "The home's locker code is 9090")
    (home / "cron").mkdir()
    (home / "cron" / "jobs.json").write_text(json.dumps({"jobs": [
        _job("a1", {"platform": "fakechat", "chat_id": "alice-dm", "user_id": "alice"}), _job("b2", None)]}))
    llm_server.always("Noted.")
    result = subprocess.run([str(HERMES), "cron", "tick"], capture_output=True, text=True, timeout=120,
                            env={**os.environ, "HERMES_CRON_NOW": T0.isoformat(), "HERMES_TIMEZONE": "UTC"})
    assert result.stderr.splitlines()[-1] == "ran 2 jobs", result.stderr
    by_job = {("a1" if "Job a1:" in json.dumps(r.messages) else "b2"): json.dumps(r.messages)
              for r in llm_server.requests}
    assert "4417" in by_job["a1"] and "5521" not in by_job["a1"] and "9090" not in by_job["a1"]
    assert "9090" in by_job["b2"] and "4417" not in by_job["b2"] and "5521" not in by_job["b2"]
