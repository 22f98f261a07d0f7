"""The scheduler: what is due runs once, each run in a process of its own with a time limit, its
outcome recorded on the job and its answer delivered.

`Scheduler(manager).tick()` is one pass (`hermes cron tick`, and `hermes gateway run` at start
and every `cron.tick_interval` seconds); `run(ref)` runs one job now (`hermes cron run`). A pass
holds `cron/.tick.lock` (a second pass of the same home at the same time does nothing). A due job
is claimed first (see `jobs`): in jobs.json the claim is the pass's pid, and a claim whose process
is gone (a pass killed with `kill -9`) is void, so the job is due again; in the shared database
the claim is taken atomically and names the host, and a claim whose host stopped beating is run
again once by another host, never twice. A job with a field no run can use (hand-edited: see
`checks`) is never due: each pass says so in one line naming it (once per process), and runs the
others. After a downtime a job runs once and its next run is the
first slot after now, not one per slot missed. A run that fails, passes `cron.time_limit` (it is
killed, with every process it started) or dies is recorded as failed; the other jobs run
regardless. `cron.max_parallel` bounds the runs of one pass (the rest wait for the next pass, or
another host's).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from typing import Any

from hermes_core import AlreadyRunningError, CronError, PluginManager
from hermes_core import config_keys as keys
from hermes_core.hosting import kill_group, only_one

from .checks import job_problem, one_line
from .delivery import DeliveryError, Live, Outbox, send, targets, wrapped
from .shared import open_jobs
from .schedule import next_run, now, stamp, zone

__all__ = ["Scheduler"]

SILENT = "[SILENT]"


class Scheduler:
    """The cron scheduler of one loaded `PluginManager` (see the module)."""

    def __init__(self, manager: PluginManager, *, say: Callable[[str], None] | None = None,
                 live: Live | None = None, kind: str = "cron") -> None:
        self.manager = manager
        self.jobs = open_jobs(manager.home, kind=kind)
        self.outbox = Outbox(manager.home)
        self.say = say or (lambda line: None)
        self.live = live
        self._warned: set[tuple[str, str]] = set()

    def close(self) -> None:
        """Let go of what the scheduler holds (the host's heartbeat on the shared database)."""
        self.jobs.close()

    def __enter__(self) -> Scheduler:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def time_limit(self) -> float | None:
        variable = os.environ.get("HERMES_CRON_TIMEOUT", "").strip()
        limit = float(variable) if variable else self.manager.config.read(keys.CRON_TIME_LIMIT)
        return limit or None

    # -- passes ----------------------------------------------------------------------------------

    def tick(self) -> int:
        """Run every due job once (in parallel), retry waiting deliveries; how many jobs ran."""
        folder = self.manager.home / "cron"
        folder.mkdir(parents=True, exist_ok=True)
        try:
            held = only_one(folder / ".tick.lock")
        except AlreadyRunningError:
            return 0
        with held:
            moment = now()
            self.outbox.retry(lambda target, text: send(self.manager, target, text, self.live), moment,
                              self._delivery_reported)
            due, given_up = self.jobs.claim_due(moment, self.manager.config.read(keys.CRON_MAX_PARALLEL))
            for job in given_up:  # its run was retried once already, and that host died too
                self._record(job, {"status": "error", "error": str((job.get("claim") or {}).get("why") or
                                                                   "its host died during the run")}, moment, False)
            self._run_all(due, moment)
            self._skipped(moment)
            return len(due)

    def run(self, ref: str) -> dict[str, Any]:
        """Run the job `ref` (an id or a name) now, due or not; its outcome."""
        moment = now()
        job = self.jobs.get(ref)
        problem = job_problem(job, moment)
        if problem is not None:
            raise CronError(f"the job {job['id']} cannot run: {problem}; fix it in {self.jobs.where} "
                            "(or hermes cron edit) or remove it")
        claimed = self.jobs.claim(job["id"], moment)
        if claimed is None:
            raise AlreadyRunningError(f"the job {ref!r} is running now (in another tick or run)")
        return self._run_all([claimed], moment, manual=True)[0]

    def _skipped(self, moment: dt.datetime) -> None:
        """Say (once per process) which jobs are skipped for a field no run can use."""
        for job in self.jobs.read():
            problem = job_problem(job, moment)
            if problem is None or (str(job.get("id")), problem) in self._warned:
                continue
            self._warned.add((str(job.get("id")), problem))
            self.say(f"cron: skipped job {str(job.get('id'))[:60]!r} ({str(job.get('name', ''))[:40]!r}): {problem}; "
                     f"fix it (hermes cron edit) or remove it")

    # -- running --------------------------------------------------------------------------------------

    def _run_all(self, jobs: list[dict[str, Any]], moment: dt.datetime, manual: bool = False) -> list[dict[str, Any]]:
        outcomes: list[dict[str, Any]] = [{} for _ in jobs]

        def one(index: int, job: dict[str, Any]) -> None:
            outcome = self._process(job)
            outcome["error"] = one_line(outcome.get("error"))
            outcomes[index] = outcome
            try:
                self._record(job, outcome, moment, manual)
            except Exception as exc:  # noqa: BLE001 - one job's record never stops the others
                why = one_line(f"{type(exc).__name__}: {exc}")
                self.say(f"cron: recording the run of job {job['id']} failed: {why}")

        threads = [threading.Thread(target=one, args=(i, job), name=f"hermes-cron-{job['id']}", daemon=True)
                   for i, job in enumerate(jobs)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return outcomes

    def _process(self, job: dict[str, Any]) -> dict[str, Any]:
        """The job's run in a child process, within the time limit."""
        limit = self.time_limit
        env = {**os.environ, "HERMES_HOME": str(self.manager.home)}
        proc = subprocess.Popen([sys.executable, "-m", "hermes_core.cron.run", str(job["id"])], env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                                start_new_session=True)
        try:
            out, err = proc.communicate(timeout=limit)
        except subprocess.TimeoutExpired:
            kill_group(proc)  # the run and every process it started
            proc.communicate()
            return {"status": "error", "text": "", "output": None,
                    "error": f"the run took longer than its time limit ({limit:g}s, cron.time_limit) and was stopped"}
        lines = [line for line in out.decode("utf-8", "replace").splitlines() if line.strip()]
        try:
            outcome = json.loads(lines[-1]) if lines else None
        except ValueError:
            outcome = None
        if not isinstance(outcome, dict):
            tail = err.decode("utf-8", "replace").strip().splitlines()[-3:]
            return {"status": "error", "text": "", "output": None,
                    "error": f"the run ended without an outcome (exit code {proc.returncode})"
                             + (f": {' '.join(tail)}" if tail else "")}
        return outcome

    # -- after a run ----------------------------------------------------------------------------------

    def _record(self, job: dict[str, Any], outcome: dict[str, Any], started: dt.datetime, manual: bool) -> None:
        """The run's outcome on the job (its next run, its repeat count), then its delivery."""
        tz = zone(self.manager.config)
        finished = max(now(), started)
        failed = outcome.get("status") != "ok"

        def mutate(current: dict[str, Any]) -> dict[str, Any]:
            repeat = dict(current.get("repeat") or {"times": None, "completed": 0})
            repeat["completed"] = int(repeat.get("completed") or 0) + 1
            current.update(repeat=repeat, last_run_at=started.astimezone(tz).isoformat(),
                           last_status="error" if failed else "ok", last_error=outcome.get("error") if failed else None)
            schedule = current.get("schedule") or {}
            once = schedule.get("kind") == "once"
            upcoming = stamp(current.get("next_run_at"))
            if manual and not once and upcoming is not None and upcoming > finished:
                following: dt.datetime | None = upcoming  # a run by hand leaves the schedule as it was
            else:
                following = next_run(schedule, finished, tz, ran=True)
            spent = repeat.get("times") is not None and repeat["completed"] >= int(repeat["times"])
            if following is None or spent:
                current.update(enabled=False, state="completed", next_run_at=None)
            else:
                current.update(next_run_at=following.astimezone(tz).isoformat(),
                               state="scheduled" if current.get("state") != "paused" else "paused")
            return dict(current)

        current = self.jobs.finish(str(job["id"]), mutate, finished, outcome)
        word = "failed" if failed else "ran"
        self.say(f"cron: {job.get('name', job['id'])} ({job['id']}) {word}"
                 + (f": {outcome.get('error')}" if failed else ""))
        if current is not None and not failed:
            self._deliver(current, str(outcome.get("text") or ""), finished)

    def _deliver(self, job: dict[str, Any], text: str, moment: dt.datetime) -> None:
        if text.strip().startswith(SILENT):
            return
        try:
            found = targets(self.manager, job)
        except DeliveryError as exc:
            self._delivery_reported(str(job["id"]), str(exc))
            return
        body = wrapped(job, text) if self.manager.config.read(keys.CRON_WRAP_RESPONSE) else text
        for target in found:
            try:
                send(self.manager, target, body, self.live)
            except DeliveryError as exc:
                self.outbox.add(str(job["id"]), target, body, str(exc), moment)
                self._delivery_reported(str(job["id"]), f"{exc} (retrying)")

    def _delivery_reported(self, job_id: str, error: str | None) -> None:
        """A delivery's outcome on its job: `last_delivery_error` set (and `last_status`
        delivery_failed) or cleared."""
        def mutate(job: dict[str, Any]) -> None:
            job["last_delivery_error"] = error
            if error is not None:
                job["last_status"] = "delivery_failed"
            elif job.get("last_status") == "delivery_failed":
                job["last_status"] = "ok"

        self.jobs.note(job_id, mutate, now())
        if error is not None:
            self.say(f"cron: delivering job {job_id}'s answer failed: {error}")

