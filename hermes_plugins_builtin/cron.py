"""Built-in plugin `cron`: Hermes' `cronjob` tool, so that "remind me every weekday at 9 to check the
build" said in `hermes chat`, a gateway chat or the API server becomes a job in
`$HERMES_HOME/cron/jobs.json`, or in the shared database `state.url` names (run by `hermes cron
tick` or `hermes gateway run`).

A job made in a gateway conversation delivers to that chat by default (`deliver: origin`).
"""

from __future__ import annotations

import json
from typing import Any

ACTIONS = ("create", "list", "update", "pause", "resume", "remove", "run")
SCHEMA = {
    "name": "cronjob",
    "description": ("Schedule and manage cron jobs: create (a self-contained prompt and a schedule), list, and "
                    "update/pause/resume/remove/run one by job_id (list first). A job runs later in a fresh session; "
                    "its final answer is what gets delivered."),
    "parameters": {
        "type": "object",
        "properties": {
            "action": {"type": "string", "description": "One of: " + ", ".join(ACTIONS)},
            "job_id": {"type": "string"},
            "prompt": {"type": "string"},
            "schedule": {"type": "string", "description": "30m, every 2h, in 30m, every monday 9am, 0 9 * * *, or ISO"},
            "name": {"type": "string"},
            "repeat": {"type": "integer", "description": "runs in all (default: forever)"},
            "deliver": {"type": "string", "description": "local, origin, PLATFORM or PLATFORM:CHAT_ID"},
            "skills": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["action"],
    },
}


def _origin() -> dict[str, Any] | None:
    """The gateway chat this turn belongs to (None off the gateway: the CLI, the API server)."""
    from hermes_core.gateway.session_context import get_session_env

    platform = get_session_env("HERMES_SESSION_PLATFORM")
    chat = get_session_env("HERMES_SESSION_CHAT_ID")
    if not platform or not chat or platform in ("cli", "api_server", "cron"):
        return None
    return {"platform": platform, "chat_id": chat, "chat_name": get_session_env("HERMES_SESSION_CHAT_NAME"),
            "thread_id": get_session_env("HERMES_SESSION_THREAD_ID") or None,
            "user_id": get_session_env("HERMES_SESSION_USER_ID"),
            **({"user_id_alt": alt} if (alt := get_session_env("HERMES_SESSION_USER_ID_ALT")) else {})}


def _shown(job: dict[str, Any]) -> dict[str, Any]:
    from hermes_core.cron import describe_repeat

    prompt = str(job.get("prompt") or "")
    return {"job_id": job["id"], "name": job.get("name"), "skills": job.get("skills") or [],
            "prompt_preview": prompt if len(prompt) <= 100 else prompt[:100] + "...",
            "schedule": job.get("schedule_display"), "repeat": describe_repeat(job.get("repeat")),
            "deliver": job.get("deliver"), "next_run_at": job.get("next_run_at"), "last_run_at": job.get("last_run_at"),
            "last_status": job.get("last_status"), "last_error": job.get("last_error"),
            "enabled": job.get("enabled", True), "state": job.get("state", "scheduled")}


def cronjob(args: dict[str, Any], **_: Any) -> str:
    from hermes_core import HermesError, hermes_home, load_config
    from hermes_core.cron import now, open_jobs, zone

    action = str(args.get("action", "")).strip().lower()
    action = "run" if action in ("run_now", "trigger") else action
    try:
        jobs, moment, tz = open_jobs(hermes_home()), now(), zone(load_config())
        ref = str(args.get("job_id") or "")
        if action not in ACTIONS:
            raise ValueError(f"action must be one of: {', '.join(ACTIONS)}")
        if action not in ("create", "list") and not ref:
            raise ValueError(f"action {action!r} needs job_id (list the jobs first)")
        if action == "create":
            if not args.get("schedule"):
                raise ValueError("create needs a schedule")
            job = jobs.add(str(args["schedule"]), str(args.get("prompt") or ""), moment, tz, name=args.get("name"),
                           deliver=args.get("deliver"), repeat=args.get("repeat"), skills=args.get("skills"),
                           origin=_origin())
            return json.dumps({"success": True, "job_id": job["id"], "name": job["name"], "job": _shown(job),
                               "message": f"scheduled {job['name']!r}: {job['schedule_display']}"})
        if action == "list":
            found = [_shown(job) for job in jobs.read()]
            return json.dumps({"success": True, "count": len(found), "jobs": found})
        if action == "remove":
            gone = jobs.remove(ref, moment)
            return json.dumps({"success": True, "message": f"removed {gone.get('name')!r}",
                               "removed_job": {"id": gone["id"], "name": gone.get("name"),
                                               "schedule": gone.get("schedule_display")}})
        if action in ("pause", "resume"):
            job = jobs.set_paused(ref, action == "pause", moment, tz)
        elif action == "run":
            job = jobs.trigger(ref, moment, tz)
        else:
            job = jobs.edit(ref, moment, tz, schedule=args.get("schedule"), prompt=args.get("prompt"),
                            name=args.get("name"), deliver=args.get("deliver"), repeat=args.get("repeat"),
                            skills=args.get("skills"))
        return json.dumps({"success": True, "job": _shown(job)})
    except (HermesError, ValueError) as exc:
        return json.dumps({"success": False, "error": str(exc)})


def register(ctx: Any) -> None:
    ctx.register_tool("cronjob", "cronjob", SCHEMA, cronjob, emoji="⏰")
