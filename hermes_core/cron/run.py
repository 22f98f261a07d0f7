"""One run of a job, in a process of its own: a fresh agent session (no history) with the plugins'
tools and hooks (not the `cronjob` tool: a job does not schedule jobs), the job's skills as
context, the answer saved as Hermes saves it (`cron/output/<job id>/<YYYY-mm-dd_HH-MM-SS>.md`; an id
that is not a plain name, such as a hand-edited `../../x`, gets a folder named from its letters and
digits and a digest of it: the output stays inside `cron/output/`).

    python -m hermes_core.cron.run JOB_ID       # the scheduler starts it; its last stdout line is the outcome

The scheduler gives the process its time limit and kills it (with anything it started) past it;
the process ends itself when the scheduler that started it dies.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import os
import re
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import Any

from hermes_core import CronError, PluginManager, storable_json, storable_text
from hermes_core import config_keys as keys
from hermes_core.hosting import ToolSelection, new_trace, write_text

from .shared import open_jobs
from .schedule import now, zone

__all__ = ["TOOLSET", "build_prompt", "output_folder", "output_path", "run_job"]

TOOLSET = "cronjob"  # the toolset a job's agent is not offered
_PLAIN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")
HINT = ("[IMPORTANT: You are running as a scheduled cron job. Your final answer is delivered as it is; no one "
        "is there to answer questions. To deliver nothing, answer exactly \"[SILENT]\".]")


def build_prompt(manager: PluginManager, job: dict[str, Any]) -> str:
    """The one user message of a run: the cron hint, each skill as Hermes invokes it (loaded as `skill_view`
    loads it: the home's skills and the plugins', unless disabled for `cron`), the prompt."""
    skills = [str(name) for name in job.get("skills") or () if name]
    prompt = str(job.get("prompt") or "")
    body = manager.skill_library("cron").invoke(skills, prompt) if skills else prompt.strip()
    return "\n\n".join(part for part in (HINT, body) if part)


def output_folder(home: Path, job_id: str) -> Path:
    """`cron/output/<job id>`, or for an id that is not a plain name (letters, digits, - and _, at
    most 64) `cron/output/<its letters and digits>-<12 hex digits of its digest>`: never outside."""
    if _PLAIN_ID.fullmatch(job_id):
        return home / "cron" / "output" / job_id
    plain = re.sub(r"[^A-Za-z0-9_-]+", "_", job_id).strip("_-")[:40]
    digest = hashlib.sha256(job_id.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    return home / "cron" / "output" / (f"{plain}-{digest}" if plain else digest)


def output_path(home: Path, job_id: str, started: dt.datetime, tz: dt.tzinfo) -> Path:
    return output_folder(home, job_id) / f"{started.astimezone(tz):%Y-%m-%d_%H-%M-%S}.md"


def _save(manager: PluginManager, job: dict[str, Any], started: dt.datetime, tz: dt.tzinfo, answer: str | None,
          error: str | None) -> Path:
    """The run's output file (replaced whole, 0600); only the newest `cron.output_retention` are kept."""
    path = output_path(manager.home, str(job["id"]), started, tz)
    title = f"{job.get('name', job['id'])}" + (" (FAILED)" if error else "")
    body = (f"# Cron Job: {title}\n\n**Job ID:** {job['id']}\n**Run Time:** {started.astimezone(tz):%Y-%m-%d %H:%M:%S}\n"
            f"**Schedule:** {job.get('schedule_display', '')}\n\n## Prompt\n\n{job.get('prompt', '')}\n\n")
    body += f"## Error\n\n{error}\n" if error else f"## Response\n\n{answer or '(No response generated)'}\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text(path, storable_text(body), mode=0o600)
    keep = manager.config.read(keys.CRON_OUTPUT_RETENTION)
    for old in sorted(path.parent.glob("*.md"))[:-keep]:
        old.unlink(missing_ok=True)
    return path


def run_job(manager: PluginManager, job: dict[str, Any], started: dt.datetime) -> dict[str, Any]:
    """Run `job` now, in this process: its outcome (`status` ok or error, `text`, `error`, `output`)."""
    from hermes_core.agent import Agent

    tz = zone(manager.config)
    tools = {info.name for info in manager.tool_infos() if info.toolset != TOOLSET}
    session = f"cron_{job['id']}_{started.astimezone(tz):%Y%m%d_%H%M%S}"
    answer, error = None, None
    try:
        origin = job.get("origin")
        origin = origin if isinstance(origin, dict) else {}
        user = str(origin.get("user_id_alt") or origin.get("user_id") or "")  # as the gateway names a sender
        where = str(origin.get("platform") or "")
        if origin.get("api_key") is not None:  # made through a named key of the API server: that key's tools
            key = str(origin["api_key"])
            selection = ToolSelection.of_key(manager.config, key)
            if selection is None:
                raise CronError(f"the API key {key!r} that made this job is no longer in api_server.keys: it does "
                                "not run with another's rights (remove the job, or make it again with a key)")
            offered = selection.names(manager.tool_infos())
            tools = {name for name in tools if offered is None or name in offered}
        # a job made in a chat acts for its sender: their memory, never the home's
        with new_trace(f"cron run {job.get('name') or job['id']}", **{"hermes.cron.job": str(job["id"])}), \
                Agent(manager, session_id=session, platform="cron", tools=tools, user_id=user,
                      user_platform=where or None, session_info={"agent_context": "cron"}) as agent:
            result = agent.ask(build_prompt(manager, job))
        answer = result.text
        if result.stopped:
            error = f"the agent stopped without an answer ({result.stopped})"
        elif not answer.strip():
            error = "the agent gave an empty answer"
    except Exception as exc:  # noqa: BLE001 - the run's failure is its outcome
        error = f"{type(exc).__name__}: {exc}"
    path = _save(manager, job, started, tz, answer, error)
    return {"status": "error" if error else "ok", "text": answer or "", "error": error, "output": str(path),
            "session": session}


def _orphan_watch() -> None:
    """End this process when the scheduler that started it is gone (its parent changed)."""
    parent = os.getppid()

    def watch() -> None:
        while True:
            time.sleep(0.5)
            if os.getppid() != parent:
                os._exit(3)

    threading.Thread(target=watch, name="hermes-cron-orphan-watch", daemon=True).start()


def main(argv: list[str]) -> int:
    _orphan_watch()
    job_id = argv[0]
    try:
        manager = PluginManager().load()
        with open_jobs(manager.home) as jobs:
            job = jobs.get(job_id)
        outcome = run_job(manager, job, now())
    except Exception as exc:  # noqa: BLE001 - said to the scheduler as the run's outcome, in one line
        traceback.print_exc(limit=3)  # stderr, for whoever debugs the run
        outcome = {"status": "error", "text": "", "error": f"{type(exc).__name__}: {exc}", "output": None}
    sys.stdout.write("\n" + storable_json(outcome) + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
