"""`hermes cron` and `hermes gateway run` given hostile or careless input, as subprocesses on real
files: a test clock out of range, a job hand-edited into something no run can use, a job id that
is a path, a run that fails with a traceback, a schedule that never fires or is out of range.
Each is answered in one line that names it; nothing crashes, nothing is written outside the home,
and every other job runs."""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from tests.helpers import HERMES
from tests.helpers.cron import T0, cron, hand_edit, jobs, one_line_error


@pytest.mark.parametrize("clock", ["inf", "-1e300", "1e20", "nan", "9999-12-31T23:59", "0001-01-01T00:00+05:00",
                                   "tomorrow"])
def test_a_test_clock_out_of_range_is_one_line_naming_the_variable(configured: Path, clock: str) -> None:
    env = {**os.environ, "HERMES_CRON_NOW": clock}
    for args in (("cron", "add", "every 1h", "x"), ("cron", "list"), ("cron", "tick")):
        said = one_line_error(subprocess.run([str(HERMES), *args], capture_output=True, text=True, env=env, timeout=60))
        assert "HERMES_CRON_NOW=" in said and "ISO-8601" in said and "UNIX seconds" in said, said
    assert not (configured / "cron" / "jobs.json").exists()


def test_the_gateway_refuses_a_test_clock_it_cannot_use_before_it_starts(configured: Path) -> None:
    with open(configured / "config.yaml", "a") as config:
        config.write("platforms:\n  webhook:\n    enabled: true\n    port: 0\n    secret: s3cret\n")
    env = {**os.environ, "HERMES_CRON_NOW": "1e20"}
    said = one_line_error(subprocess.run([str(HERMES), "gateway", "run"], capture_output=True, text=True, env=env,
                                         timeout=60))
    assert "HERMES_CRON_NOW='1e20'" in said


def test_a_hand_edited_job_no_run_can_use_is_listed_with_its_problem_and_skipped_while_the_others_run(
        configured: Path, llm_server) -> None:
    home = configured
    llm_server.always("All green.")
    cron("add", "every 1h", "check the build", "--name", "build")
    hand_edit(home, {"id": "bad000000001", "name": "bad schedule", "schedule": "x"},
              {"id": "bad000000002", "name": "bad repeat", "repeat": "lots"},
              {"id": "bad000000003", "name": "never", "schedule": {"kind": "cron", "expr": "0 0 31 2 *"}},
              {"id": "bad000000004", "name": "bad deliver", "deliver": 7},
              {"id": "bad000000005", "name": "bad time", "next_run_at": "soon"},
              {"id": "bad000000006", "name": "huge", "schedule": {"kind": "interval", "minutes": 10**12}})
    listed = cron("list")
    assert "Traceback" not in listed.stderr
    for job_id, words in [("bad000000001", "schedule 'x' is not one Hermes stores"),
                          ("bad000000002", "repeat 'lots' is not an object"),
                          ("bad000000003", "never fires"), ("bad000000004", "deliver 7 is not text"),
                          ("bad000000005", "next_run_at 'soon' is not an ISO timestamp"),
                          ("bad000000006", "out of range")]:
        assert f"job '{job_id}' is skipped: " in listed.stdout and words in listed.stdout, (job_id, listed.stdout)
    as_json = json.loads(cron("list", "--json").stdout)
    assert [("problem" in job) for job in as_json] == [False] + [True] * 6
    before = [job for job in jobs(home) if job["name"] != "build"]

    ticked = cron("tick", when=T0 + dt.timedelta(hours=1, minutes=1))
    assert "Traceback" not in ticked.stderr and ticked.stderr.strip().splitlines()[-1] == "ran 1 job", ticked.stderr
    skipped = [line for line in ticked.stderr.splitlines() if line.startswith("hermes: cron: skipped job ")]
    assert [line.split("'")[1] for line in skipped] == [job["id"] for job in before]
    assert jobs(home)[0]["last_status"] == "ok" and [j for j in jobs(home) if j["name"] != "build"] == before
    assert "cannot run: schedule 'x'" in one_line_error(cron("run", "bad schedule", check=1))
    cron("edit", "bad schedule", "--schedule", "every 2h")  # fixed by hand: it runs again
    assert "problem" not in json.loads(cron("list", "--json").stdout)[1]
    cron("remove", "bad repeat")


def test_a_job_id_that_is_a_path_writes_its_output_inside_cron_output(configured: Path, llm_server) -> None:
    home = configured
    llm_server.always("Contained.")
    cron("add", "every 1h", "stay home", "--name", "inside")
    hand_edit(home, {"id": "../../../escaped", "name": "escaper"}, {"id": "/tmp/../abs", "name": "absolute"})
    assert cron("tick", when=T0 + dt.timedelta(hours=1, minutes=1)).stderr.splitlines()[-1] == "ran 3 jobs"
    outside = [path for path in home.parent.parent.rglob("*") if not path.is_relative_to(home) and
               ("escaped" in path.name or "abs" == path.name)]
    assert outside == []
    folders = sorted(path.name for path in (home / "cron" / "output").iterdir())
    assert len(folders) == 3 and any(name.startswith("escaped-") for name in folders), folders
    assert all(job["last_status"] == "ok" for job in jobs(home))


def test_a_run_that_fails_with_a_traceback_is_stored_and_shown_in_one_line(configured: Path, llm_server) -> None:
    home = configured
    llm_server.always("Never saved.")
    job_id = cron("add", "every 1h", "save me", "--name", "blocked").stdout.split()[1]
    (home / "cron" / "output").mkdir(parents=True)
    (home / "cron" / "output" / job_id).write_text("a file where the job's output folder goes")
    failed = cron("run", "blocked", check=1)
    assert "Traceback" not in failed.stderr and len(failed.stderr.strip().splitlines()) == 2  # the run, the error
    assert failed.stderr.strip().splitlines()[-1].startswith("hermes: error: the run failed: FileExistsError: ")
    stored = jobs(home)[0]["last_error"]
    assert stored.startswith("FileExistsError") and "\n" not in stored
    hand_edit(home, {"id": "old000000001", "name": "older",
                     "last_error": 'Traceback (most recent call last):\n  File "x.py", line 1, in <module>\n'
                                   "ValueError: an older run's failure"})
    shown = json.loads(cron("list", "--json").stdout)
    assert [job["last_error"] for job in shown][1] == "ValueError: an older run's failure"


@pytest.mark.parametrize(("schedule", "words"), [("0 0 31 2 *", "never fires"), ("in 99999999999m", "out of range"),
                                                 ("every 99999999999m", "out of range"),
                                                 ("in " + "9" * 5000 + "m", "out of range"),
                                                 ("9999-12-31T23:59", "out of range")])
def test_a_schedule_that_never_fires_or_is_out_of_range_is_one_line_and_changes_nothing(
        configured: Path, schedule: str, words: str) -> None:
    cron("add", "every 1h", "fine", "--name", "fine")
    before = (configured / "cron" / "jobs.json").read_bytes()
    assert words in one_line_error(cron("add", schedule, "x", check=1))
    assert words in one_line_error(cron("edit", "fine", "--schedule", schedule, check=1))
    assert (configured / "cron" / "jobs.json").read_bytes() == before


def test_the_gateway_skips_a_job_no_run_can_use_with_one_line_and_runs_the_others(
        configured: Path, llm_server, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.helpers.chat import GatewayProcess

    home = configured
    with open(home / "config.yaml", "a") as config:
        config.write("platforms:\n  webhook:\n    enabled: true\n    port: 0\n    secret: s3cret\n"
                     "cron:\n  tick_interval: 0.5\n")
    llm_server.always("Done.")
    cron("add", "in 1m", "at start", "--name", "early")
    hand_edit(home, {"id": "bad000000001", "name": "bad schedule", "schedule": "x"})
    monkeypatch.setenv("HERMES_CRON_NOW", (T0 + dt.timedelta(minutes=2)).isoformat())
    with GatewayProcess() as gateway:
        gateway.wait_for(r"cron: early \([0-9a-f]{12}\) ran", timeout=60)
        gateway.wait_for(r"cron: skipped job 'bad000000001' \('bad schedule'\): schedule 'x' is not one Hermes stores")
        time.sleep(2)  # more ticks, which do not say it again
        assert gateway.stop() == 0
    assert sum("skipped job 'bad000000001'" in line for line in gateway.lines) == 1
    assert not any("Traceback" in line or "periodic task" in line for line in gateway.lines), gateway.lines
    assert jobs(home)[0]["last_status"] == "ok" and jobs(home)[1]["schedule"] == "x"
