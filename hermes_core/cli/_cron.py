"""`hermes cron`: scheduled agent jobs (Hermes' `cron/jobs.json`, or the shared database `state.url`
names). Imported only when asked for."""

from __future__ import annotations

import datetime as dt
from typing import Any

import click

from ._common import echo_json, echo_table, manager


@click.group()
def cron() -> None:
    """Scheduled agent jobs: each run is a fresh agent session whose answer is delivered."""


def _clock(ctx: click.Context) -> tuple[Any, Any, dt.datetime, Any]:
    from ..cron import now, open_jobs, zone

    host = manager(ctx)
    return host, open_jobs(host.home), now(), zone(host.config)


def _when(value: str | None, tz: Any) -> str:
    from ..cron.schedule import stamp

    moment = stamp(value) if isinstance(value, str) else None
    return f"{moment.astimezone(tz):%Y-%m-%d %H:%M}" if moment else "-"


def _shown(job: dict[str, Any], tz: Any) -> str:
    return f"{job['id']} {job.get('name', '')!r}: {job.get('schedule_display', '')}, next {_when(job.get('next_run_at'), tz)}"


@cron.command()
@click.argument("schedule")
@click.argument("prompt", default="")
@click.option("--name", help="A name to refer to the job by (default: the prompt's start).")
@click.option("--deliver", help="local (default), origin, PLATFORM (its home channel) or PLATFORM:CHAT_ID; "
                                "comma-separated for several.")
@click.option("--repeat", help="How many runs (default: forever; one-shots once).")
@click.option("--skill", "skills", multiple=True, help="A skill to run with (repeatable).")
@click.pass_context
def add(ctx: click.Context, schedule: str, prompt: str, name: str | None, deliver: str | None, repeat: str | None,
        skills: tuple[str, ...]) -> None:
    """Add a job: SCHEDULE (30m, every 2h, "0 9 * * 1-5", "every monday 9am", 2026-12-01T09:00, "in 30m") and PROMPT."""
    _, jobs, moment, tz = _clock(ctx)
    job = jobs.add(schedule, prompt, moment, tz, name=name, deliver=deliver, repeat=repeat, skills=list(skills))
    click.echo(f"added {_shown(job, tz)}")


@cron.command("list")
@click.option("--json", "as_json", is_flag=True,
              help="Print the jobs as JSON (Hermes' fields; `problem` on a job no run can use).")
@click.option("--all", "show_all", is_flag=True, help="Also the completed ones.")
@click.pass_context
def list_(ctx: click.Context, as_json: bool, show_all: bool) -> None:
    """The jobs, with their schedule, next run and last outcome (and what is wrong with a job that cannot run)."""
    from ..cron import describe_repeat
    from ..cron.checks import job_problem, one_line

    _, jobs, moment, tz = _clock(ctx)
    found = [job for job in jobs.read() if show_all or job.get("state") != "completed"]
    problems = {index: job_problem(job, moment) for index, job in enumerate(found)}
    if as_json:
        echo_json([{**job, "last_error": one_line(job.get("last_error")),
                    "last_delivery_error": one_line(job.get("last_delivery_error")),
                    **({"problem": problems[index]} if problems[index] else {})}
                   for index, job in enumerate(found)])
        return
    if not found:
        click.echo('no cron jobs (add one: hermes cron add "every monday 9am" "summarise the week")')
        return
    echo_table(["id", "name", "schedule", "repeat", "state", "next run", "last"],
               [[str(j["id"]), str(j.get("name", "")), str(j.get("schedule_display", "")),
                 describe_repeat(j.get("repeat")), "invalid" if problems[i] else str(j.get("state", "scheduled")),
                 _when(j.get("next_run_at"), tz),
                 f"{_when(j.get('last_run_at'), tz)} {j.get('last_status') or ''}".strip()] for i, j in enumerate(found)])
    for index, job in enumerate(found):
        if problems[index]:
            click.echo(f"job {str(job['id'])!r} is skipped: {problems[index]}; fix it (hermes cron edit) or remove it")


@cron.command()
@click.argument("job")
@click.option("--schedule", help="A new schedule (its next run is recomputed).")
@click.option("--prompt", help="A new prompt.")
@click.option("--name", help="A new name.")
@click.option("--deliver", help="New delivery targets.")
@click.option("--repeat", help="A new number of runs.")
@click.option("--skill", "skills", multiple=True, help="Its skills (replacing them; repeatable).")
@click.pass_context
def edit(ctx: click.Context, job: str, schedule: str | None, prompt: str | None, name: str | None,
         deliver: str | None, repeat: str | None, skills: tuple[str, ...]) -> None:
    """Change a job (by id or name)."""
    _, jobs, moment, tz = _clock(ctx)
    changed = jobs.edit(job, moment, tz, schedule=schedule, prompt=prompt, name=name, deliver=deliver,
                        repeat=repeat, skills=list(skills) if skills else None)
    click.echo(f"edited {_shown(changed, tz)}")


def _pausing(name: str, paused: bool, about: str) -> None:
    """`hermes cron pause` / `resume`: one command each, the same but for which way they set it."""
    @click.argument("job")
    @click.pass_context
    def command(ctx: click.Context, job: str) -> None:
        _, jobs, moment, tz = _clock(ctx)
        click.echo(f"{name}d {_shown(jobs.set_paused(job, paused, moment, tz), tz)}")

    cron.command(name, help=about)(command)


_pausing("pause", True, "Stop a job from running until it is resumed.")
_pausing("resume", False, "Let a paused job run again (from its next slot after now).")


@cron.command()
@click.argument("job")
@click.pass_context
def remove(ctx: click.Context, job: str) -> None:
    """Delete a job (its output files stay)."""
    _, jobs, moment, _ = _clock(ctx)
    gone = jobs.remove(job, moment)
    click.echo(f"removed {gone['id']} {gone.get('name', '')!r}")


def _say(line: str) -> None:
    click.echo(f"hermes: {line}", err=True)


@cron.command()
@click.argument("job")
@click.pass_context
def run(ctx: click.Context, job: str) -> None:
    """Run a job now, due or not: its answer on stdout (and delivered); exit 1 when it failed."""
    from ..cron import Scheduler

    host, _, _, _ = _clock(ctx)
    with Scheduler(host, say=_say) as scheduler:
        outcome = scheduler.run(job)
    if outcome.get("status") != "ok":
        raise click.ClickException(f"the run failed: {outcome.get('error')}")
    click.echo(outcome.get("text", ""))


@cron.command()
@click.pass_context
def tick(ctx: click.Context) -> None:
    """Run what is due once, and retry waiting deliveries (for a system crontab or a container's cron)."""
    from ..cron import Scheduler

    host, _, _, _ = _clock(ctx)
    with Scheduler(host, say=_say) as scheduler:
        ran = scheduler.tick()
    click.echo(f"ran {ran} job{'s' if ran != 1 else ''}", err=True)
