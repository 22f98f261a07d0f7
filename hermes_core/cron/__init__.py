"""Cron: scheduled agent jobs, as Hermes has them, delivered to any platform.

`hermes cron add|list|edit|pause|resume|remove|run|tick` over `$HERMES_HOME/cron/jobs.json`
(Hermes' file, read and written unchanged), or over the shared database `state.url` names;
`hermes gateway run` ticks the scheduler; the agent's `cronjob` tool (the built-in `cron` plugin)
makes jobs from a conversation; the API server's `/api/jobs` too. All go through `Jobs`.

- `schedule`: Hermes' schedule formats, their one check (`check_schedule`: it fires, within
  range) and the clock (`HERMES_CRON_NOW` for tests);
- `checks`: what a stored job may hold (a hand-edited job no run can use is skipped, named);
- `jobs`: the jobs interface (`open_jobs`), the one check of `repeat` (`check_repeat`), and
  jobs.json, one writer at a time;
- `shared`: the jobs, claims and run records in the shared database (a claim per slot across hosts);
- `scheduler`: a pass over what is due, each run claimed first, run in its own process;
- `run`: one run (a fresh agent session, the job's skills, the output file);
- `delivery`: `deliver` targets, sent live or through `standalone_sender_fn`, retried.
"""

from .delivery import DeliveryError, Target, live_sender
from .jobs import Jobs, JobsFile, check_repeat, describe_repeat
from .schedule import NOW_VARIABLE, check_schedule, next_run, now, parse_schedule, zone
from .scheduler import Scheduler
from .shared import open_jobs

__all__ = ["NOW_VARIABLE", "DeliveryError", "Jobs", "JobsFile", "Scheduler", "Target", "check_repeat",
           "check_schedule", "describe_repeat", "live_sender", "next_run", "now", "open_jobs", "parse_schedule", "zone"]
