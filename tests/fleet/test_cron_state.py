"""Cron's jobs behind one interface (`open_jobs`), the same contract on jobs.json, on the shared
tables in SQLite and on PostgreSQL: what a change does to a job, refusals in the same words, a due
slot claimed once, a claim let go when its run is recorded; a jobs.json imported once across
hosts and left as it was; and a dead host's claim run again once by another host, never twice."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hermes_core import CronError
from hermes_core.cron import Jobs, JobsFile
from hermes_core.cron.shared import SharedJobs

T0 = dt.datetime(2026, 11, 23, 8, 0, tzinfo=dt.timezone.utc)  # a Monday
UTC = dt.timezone.utc


@pytest.fixture(params=["file", "sqlite", "postgresql"])
def backend(request: pytest.FixtureRequest) -> str | None:
    """"file" (jobs.json), None (the shared tables in SQLite) or a fresh PostgreSQL database's URL."""
    if request.param == "file":
        return "file"
    return None if request.param == "sqlite" else str(request.getfixturevalue("pg_url"))


def jobs_of(home: Path, backend: str | None, kind: str = "cron") -> Jobs:
    home.mkdir(parents=True, exist_ok=True)
    return JobsFile(home) if backend == "file" else SharedJobs(home, backend, kind=kind)


def seen(jobs: Jobs) -> list[dict[str, Any]]:
    """What a caller sees of the jobs, without ids (random) and claims (each backend's own)."""
    return [{k: v for k, v in job.items() if k not in ("id", "claim")} for job in jobs.read()]


def test_every_change_a_caller_makes_reads_back_the_same(tmp_path: Path, backend: str | None) -> None:
    with jobs_of(tmp_path / "home", backend) as jobs:
        assert jobs.read() == []
        build = jobs.add("every 1h", "check the build", T0, UTC, name="build")
        jobs.add("0 9 * * 1-5", "standup notes", T0, UTC, repeat="3", skills=["notes"])
        assert [j["id"] for j in jobs.read()] == [build["id"], jobs.get("standup notes")["id"]]  # in the order made
        assert jobs.get("BUILD") == build and jobs.get(build["id"]) == build
        edited = jobs.edit("build", T0, UTC, schedule="every 2h", prompt="check CI")
        assert (edited["prompt"], edited["next_run_at"]) == ("check CI", "2026-11-23T10:00:00+00:00")
        assert jobs.set_paused("build", True, T0, UTC)["state"] == "paused"
        resumed = jobs.set_paused("build", False, T0 + dt.timedelta(hours=5), UTC)
        assert (resumed["state"], resumed["next_run_at"]) == ("scheduled", "2026-11-23T15:00:00+00:00")
        assert jobs.trigger("standup notes", T0, UTC)["next_run_at"] == T0.isoformat()
        assert jobs.remove("build", T0)["name"] == "build"
        assert [j["name"] for j in jobs.read()] == ["standup notes"]
        assert seen(jobs)[0]["repeat"] == {"times": 3, "completed": 0} and seen(jobs)[0]["skills"] == ["notes"]


def test_refusals_are_the_same_words_and_change_nothing(tmp_path: Path, backend: str | None) -> None:
    with jobs_of(tmp_path / "home", backend) as jobs:
        jobs.add("30m", "one", T0, UTC, name="twin")
        jobs.add("30m", "two", T0, UTC, name="twin")
        before = jobs.read()
        with pytest.raises(CronError, match="2 jobs are named 'twin'; use an id"):
            jobs.edit("twin", T0, UTC, prompt="x")
        with pytest.raises(CronError, match=r"no cron job 'nope' \(jobs: .*twin"):
            jobs.remove("nope", T0)
        with pytest.raises(CronError, match="'fortnight' is not a duration"):
            jobs.add("every fortnight", "x", T0, UTC)
        with pytest.raises(CronError, match="not a number of runs"):
            jobs.edit(before[0]["id"], T0, UTC, repeat="many")
        with pytest.raises(CronError, match=r"the schedule '0 0 31 2 \*' never fires"):
            jobs.add("0 0 31 2 *", "x", T0, UTC)
        with pytest.raises(CronError, match="the schedule 'in 99999999999m' is out of range"):
            jobs.edit("twin", T0, UTC, schedule="in 99999999999m")
        assert jobs.read() == before


def test_a_hand_edited_job_no_run_can_use_is_read_with_its_problem_and_never_claimed(
        tmp_path: Path, backend: str | None) -> None:
    from hermes_core.cron.checks import job_problem

    home = tmp_path / "home"
    with JobsFile(home) as file:  # as Hermes (or a hand) wrote it; the shared tables import it on first use
        good = file.add("every 1h", "check the build", T0, UTC, name="build")
    bad = [{**good, "id": "bad000000001", "name": "bad schedule", "schedule": "x"},
           {**good, "id": "bad000000002", "name": "bad repeat", "repeat": {"times": "many", "completed": 0}},
           {**good, "id": "bad000000003", "name": "never", "schedule": {"kind": "cron", "expr": "0 0 31 2 *"}}]
    (home / "cron" / "jobs.json").write_text(json.dumps({"jobs": [good, *bad]}))
    with jobs_of(home, backend) as jobs:
        read = jobs.read()
        assert [j["name"] for j in read] == ["build", "bad schedule", "bad repeat", "never"]
        assert [job_problem(j, T0) for j in read] == [
            None, "schedule 'x' is not one Hermes stores (an object with kind interval, cron or once)",
            "repeat.times 'many' is not a whole number",
            "schedule '0 0 31 2 *' never fires: no date matches it (check its day and month fields)"]
        due = T0 + dt.timedelta(hours=1)
        claimed, _ = jobs.claim_due(due, 0)
        assert [j["name"] for j in claimed] == ["build"]
        with pytest.raises(CronError, match="the schedule 'x' is not one Hermes stores"):
            jobs.set_paused("bad schedule", False, due + dt.timedelta(hours=2), UTC)  # its next run: from what?
        jobs.edit("bad schedule", due, UTC, schedule="every 2h")  # fixed: due at its next slot like any other
        jobs.remove("never", due)
        assert [j["name"] for j in jobs.claim_due(due + dt.timedelta(hours=2), 0)[0]] == ["bad schedule"]


def test_a_due_slot_is_claimed_once_and_let_go_when_its_run_is_recorded(tmp_path: Path, backend: str | None) -> None:
    home = tmp_path / "home"
    with jobs_of(home, backend) as jobs, jobs_of(home, backend) as other:
        for n in range(3):
            jobs.add("every 1h", f"job {n}", T0, UTC, name=f"job{n}")
        due = T0 + dt.timedelta(hours=1)
        assert jobs.claim_due(T0, 0) == ([], [])  # nothing due yet
        first, gave_up = jobs.claim_due(due, 2)
        assert gave_up == [] and [j["name"] for j in first] == ["job0", "job1"]  # at most the limit
        rest, _ = other.claim_due(due, 0)
        assert [j["name"] for j in rest] == ["job2"]
        assert jobs.claim_due(due, 0) == ([], []) and other.claim(first[0]["id"], due) is None  # held
        if backend != "file":  # the shared store records each run; a file has only the job's fields
            assert [r["status"] for r in jobs.runs(first[0]["id"])] == ["running"]  # type: ignore[attr-defined]

        def record(job: dict[str, Any]) -> dict[str, Any]:
            job.update(next_run_at=(due + dt.timedelta(hours=1)).isoformat(), last_status="ok")
            return dict(job)

        done = jobs.finish(first[0]["id"], record, due, {"status": "ok"})
        assert done["last_status"] == "ok" and "claim" not in jobs.get("job0")
        assert jobs.claim_due(due, 0) == ([], [])  # its next slot is in an hour
        again = jobs.claim(first[0]["id"], due)  # a run by hand, now that nobody holds it
        assert again is not None and again["name"] == "job0"
        jobs.note(first[1]["id"], lambda job: job.update(last_delivery_error="the pager is down"), due)
        assert jobs.get("job1")["last_delivery_error"] == "the pager is down"
        jobs.remove("job2", due)
        assert other.finish(rest[0]["id"], record, due, {"status": "ok"}) is None  # removed while it ran
        if backend != "file":
            assert [r["status"] for r in jobs.runs(first[0]["id"])] == ["ok", "running"]  # type: ignore[attr-defined]


OPS = st.lists(st.one_of(
    st.tuples(st.just("add"), st.sampled_from(["30m", "every 2h", "0 9 * * *", "in 10m", "banana"]),
              st.sampled_from(["a", "b", "c"])),
    st.tuples(st.sampled_from(["pause", "resume", "trigger", "remove"]), st.sampled_from(["a", "b", "c", "zz"])),
    st.tuples(st.just("edit"), st.sampled_from(["a", "b"]), st.sampled_from(["every 3h", "x y", None])),
    st.tuples(st.just("tick"), st.integers(0, 600)),
), max_size=12)


def play(jobs: Jobs, ops: list[tuple[Any, ...]]) -> list[Any]:
    """Apply `ops`; what each one said, and what the jobs were after it."""
    said: list[Any] = []
    clock = T0
    for op in ops:
        try:
            if op[0] == "add":
                jobs.add(op[1], f"prompt {op[2]}", clock, UTC, name=op[2])
            elif op[0] in ("pause", "resume"):
                jobs.set_paused(op[1], op[0] == "pause", clock, UTC)
            elif op[0] == "trigger":
                jobs.trigger(op[1], clock, UTC)
            elif op[0] == "remove":
                jobs.remove(op[1], clock)
            elif op[0] == "edit":
                jobs.edit(op[1], clock, UTC, schedule=op[2], prompt="edited")
            else:
                clock += dt.timedelta(minutes=op[1])
                claimed, _ = jobs.claim_due(clock, 0)
                for job in claimed:
                    jobs.finish(job["id"], lambda j: j.update(last_status="ok", next_run_at=None, state="completed",
                                                              enabled=False), clock, {"status": "ok"})
                said.append(sorted(job["name"] for job in claimed))
            said.append("ok")
        except CronError as exc:
            said.append(str(exc).split(" (jobs:")[0].split("; use an id")[0])
        said.append(seen(jobs))
    return said


@settings(max_examples=15, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(ops=OPS)
def test_the_same_operations_give_the_same_results_on_every_backend(tmp_path_factory: pytest.TempPathFactory,
                                                                   pg_cluster: Any, ops: list[tuple[Any, ...]]) -> None:
    url = pg_cluster.create_database()
    try:
        root = tmp_path_factory.mktemp("jobs")
        results = []
        for name, backend in (("file", "file"), ("sqlite", None), ("postgresql", url)):
            with jobs_of(root / name, backend) as jobs:
                results.append(play(jobs, ops))
        assert results[0] == results[1] == results[2]
    finally:
        pg_cluster.drop_database(url.rsplit("/", 1)[1])


HERMES_JOBS = {"jobs": [
    {"id": "a1b2c3d4e5f6", "name": "news", "prompt": "Summarise the news", "skills": [], "skill": None,
     "provider_snapshot": "openrouter", "schedule": {"kind": "interval", "minutes": 60, "display": "every 60m"},
     "schedule_display": "every 60m", "repeat": {"times": None, "completed": 4}, "enabled": True, "state": "scheduled",
     "created_at": "2026-11-20T09:00:00+00:00", "next_run_at": "2026-11-23T07:45:00+00:00", "deliver": "local",
     "origin": None, "last_run_at": None, "last_status": None, "last_error": None, "last_delivery_error": None},
    {"id": "0f0f0f0f0f0f", "name": "paused one", "prompt": "x", "schedule": {"kind": "interval", "minutes": 30,
     "display": "every 30m"}, "schedule_display": "every 30m", "repeat": {"times": None, "completed": 0},
     "enabled": False, "state": "paused", "next_run_at": "2026-11-23T07:45:00+00:00",
     "claim": {"at": "2026-11-23T07:45:00+00:00", "pid": 1, "host": "elsewhere"}},
], "updated_at": "2026-11-23T07:30:01+00:00"}


def test_a_hermes_jobs_json_is_imported_once_across_hosts_and_left_as_it_was(tmp_path: Path, pg_url: str) -> None:
    raw = ("\ufeff" + json.dumps(HERMES_JOBS, indent=2)).encode()
    homes = [tmp_path / "a", tmp_path / "b"]
    for home in homes:
        (home / "cron").mkdir(parents=True)
        (home / "cron" / "jobs.json").write_bytes(raw)
    with SharedJobs(homes[0], pg_url) as first, SharedJobs(homes[1], pg_url) as second:
        assert [j["name"] for j in first.read()] == ["news", "paused one"]
        assert [j["name"] for j in second.read()] == ["news", "paused one"]  # not imported twice
        news = first.get("news")
        assert news["provider_snapshot"] == "openrouter" and news["repeat"]["completed"] == 4 and "claim" not in news
        first.remove("news", T0)
        assert [j["name"] for j in SharedJobs(homes[1], pg_url).read()] == ["paused one"]  # not brought back
        claimed, _ = second.claim_due(T0, 0)
        assert claimed == []  # the paused one is not due; the file's claim was the file's
    for home in homes:
        assert (home / "cron" / "jobs.json").read_bytes() == raw  # kept as it was


def test_an_unreadable_jobs_json_is_not_imported_and_said_in_one_line(tmp_path: Path, pg_url: str) -> None:
    (tmp_path / "cron").mkdir()
    (tmp_path / "cron" / "jobs.json").write_bytes(b'{"jobs": [' + b"\xff")
    with pytest.raises(CronError, match="jobs.json.*move it aside"):
        SharedJobs(tmp_path, pg_url).read()
    (tmp_path / "cron" / "jobs.json").write_text('{"jobs": []}')
    assert SharedJobs(tmp_path, pg_url).read() == []


CLAIM_AND_DIE = """
import datetime as dt, json, os, sys
from pathlib import Path
from hermes_core.cron.shared import SharedJobs

claimed, gave_up = SharedJobs(Path(sys.argv[1]), sys.argv[2], kind="gateway").claim_due(
    dt.datetime.fromisoformat(sys.argv[3]), 0)
print(json.dumps([[job["name"], job["claim"]["retry"]] for job in claimed]), flush=True)
os.kill(os.getpid(), 9)
"""


def test_a_dead_hosts_claim_is_run_again_once_by_another_host_never_twice(tmp_path: Path, pg_url: str) -> None:
    import subprocess
    import sys
    import time

    def home(name: str) -> Path:
        path = tmp_path / name
        path.mkdir()
        (path / "config.yaml").write_text("state:\n  lease_seconds: 1\n")
        return path

    def host_that_dies(name: str) -> list[list[Any]]:
        done = subprocess.run([sys.executable, "-c", CLAIM_AND_DIE, str(home(name)), pg_url, due.isoformat()],
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == -9, done.stderr
        return json.loads(done.stdout)

    due = T0 + dt.timedelta(hours=1)
    with SharedJobs(home("keeper"), pg_url) as keeper:
        job = keeper.add("every 1h", "slow job", T0, UTC, name="slow")
        assert host_that_dies("first") == [["slow", 0]]
        assert keeper.claim_due(due, 0) == ([], [])  # its host beat less than twice the lease ago
        time.sleep(2.5)
        assert host_that_dies("second") == [["slow", 1]]  # taken over once, the retry recorded on the claim
        time.sleep(2.5)
        claimed, gave_up = keeper.claim_due(due, 0)
        assert claimed == [] and [j["name"] for j in gave_up] == ["slow"]  # never a third run
        assert "not run a third time" in gave_up[0]["claim"]["why"]
        runs = keeper.runs(job["id"])
        assert [(r["retry"], r["status"]) for r in runs] == [(0, "host_died"), (1, "host_died")]
        assert runs[0]["host"] != runs[1]["host"] and all("died during the run" in r["error"] for r in runs)


@pytest.mark.slow  # a hundred runs, each an agent in a process of its own: about two minutes on two cores
def test_three_gateways_on_one_database_run_each_due_job_exactly_once_through_a_kill_9(
        tmp_path: Path, pg_url: str, llm_server: Any) -> None:
    import os
    import re
    import signal
    import time

    from hermes_core.testing import Reply
    from tests.helpers import llm_config
    from tests.helpers.chat import GatewayProcess

    def answer(body: dict[str, Any]) -> Reply:
        found = re.search(r"job \d+", body["messages"][-1]["content"])
        return Reply(f"done: {found.group(0) if found else '?'}", delay=0.5)

    llm_server.answer(answer)
    template = JobsFile(tmp_path / "template")
    for n in range(100):
        template.add("in 1m", f"Say done for job {n:03}", T0, UTC, name=f"job{n:03}")
    due = T0 + dt.timedelta(minutes=2)
    gateways, homes = [], []
    for name in ("a", "b", "c"):
        home = tmp_path / name
        (home / "cron").mkdir(parents=True)
        (home / "cron" / "jobs.json").write_bytes(template.path.read_bytes())  # each host has the file: imported once
        llm_config(home, llm_server.url, "timezone: UTC\nplatforms:\n  webhook:\n    enabled: true\n    port: 0\n"
                   "    secret: s3cret\ncron:\n  tick_interval: 0.2\n  max_parallel: 4\n"
                   f"state:\n  url: {pg_url}\n  lease_seconds: 1\n")
        env = {**os.environ, "HERMES_HOME": str(home), "HERMES_CRON_NOW": due.isoformat(), "HERMES_TIMEZONE": "UTC"}
        gateways.append(GatewayProcess(env=env))
        homes.append(home)
    shared = SharedJobs(homes[0], pg_url)
    try:
        victim = gateways[1]
        mark = f":{victim.process.pid}:"
        deadline = time.monotonic() + 120
        while not any(mark in r["host"] and r["status"] == "running" for r in shared.runs()):
            assert time.monotonic() < deadline, victim.lines
            time.sleep(0.05)
        victim.process.send_signal(signal.SIGKILL)  # mid-run: it holds claims
        victim.kill()
        deadline = time.monotonic() + 400
        while not all(job.get("state") == "completed" for job in shared.read()):
            assert time.monotonic() < deadline, [g.lines[-5:] for g in gateways]
            time.sleep(0.5)
        for gateway in (gateways[0], gateways[2]):
            assert gateway.stop() == 0
    finally:
        for gateway in gateways:
            gateway.kill()
    jobs = shared.read()
    assert len(jobs) == 100  # three hosts, one import
    runs = shared.runs()
    for job in jobs:
        mine = [r for r in runs if r["job_id"] == job["id"]]
        assert [r["status"] for r in mine].count("ok") == 1, mine  # every due job ran to its end exactly once
        died = [r for r in mine if r["status"] == "host_died"]
        assert all(mark in r["host"] for r in died) and len(died) <= 1
        if died:  # the killed host's claim, run again once by another host
            assert [(r["retry"], r["status"]) for r in mine] == [(0, "host_died"), (1, "ok")]
        asked = [r for r in llm_server.requests if f"job {job['name'][3:]}" in r.messages[-1]["content"]]
        assert len(asked) == (1 if not died else len(asked)) and 1 <= len(asked) <= 2
    retried = {r["job_id"] for r in runs if r["status"] == "host_died"}
    assert retried, "the killed gateway held no claim"
    assert {r["host"] for r in runs if r["status"] == "ok"} - {r["host"] for r in runs if mark in r["host"]}
    shared.close()


def test_the_cli_of_two_homes_on_one_database_works_on_the_same_jobs(tmp_path: Path, pg_url: str,
                                                                      llm_server: Any) -> None:
    import os
    import subprocess

    from tests.helpers import HERMES, llm_config

    def cron(home: Path, *args: str, when: dt.datetime = T0) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "HERMES_HOME": str(home), "HERMES_CRON_NOW": when.isoformat(), "HERMES_TIMEZONE": "UTC"}
        env.pop("HERMES_STATE_URL", None)
        done = subprocess.run([str(HERMES), "cron", *args], capture_output=True, text=True, env=env, timeout=120)
        assert done.returncode == 0, done.stderr
        return done

    homes = [tmp_path / "a", tmp_path / "b"]
    for home in homes:
        home.mkdir()
        llm_config(home, llm_server.url, f"timezone: UTC\nstate:\n  url: {pg_url}\n")
    llm_server.always("All green.")
    assert cron(homes[0], "add", "every 1h", "check the build", "--name", "build").stdout.startswith("added ")
    assert [j["name"] for j in json.loads(cron(homes[1], "list", "--json").stdout)] == ["build"]
    assert cron(homes[1], "tick", when=T0 + dt.timedelta(hours=1)).stderr.splitlines()[-1] == "ran 1 job"
    assert cron(homes[0], "tick", when=T0 + dt.timedelta(hours=1)).stderr.splitlines()[-1] == "ran 0 jobs"
    job = json.loads(cron(homes[0], "list", "--json").stdout)[0]
    assert (job["last_status"], job["repeat"]["completed"], job["next_run_at"]) == ("ok", 1, "2026-11-23T10:00:00+00:00")
    assert not (homes[0] / "cron" / "jobs.json").exists() and len(llm_server.requests) == 1
    cron(homes[1], "remove", "build")
    assert json.loads(cron(homes[0], "list", "--json").stdout) == []
