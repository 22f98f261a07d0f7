"""Cron expressions as Hermes writes them, checked where a job's schedule is parsed: five fields
(croniter alone reads a sixth as seconds and a seventh as years) and ranges from low to high
(croniter alone wraps `5-1` round). `hermes cron add|edit`, `/api/jobs` and a job hand-edited into
jobs.json all refuse the same expressions in one line that says what is wrong and what is expected."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers.api_server import KEY, Serve, call
from tests.helpers.cron import cron, hand_edit, jobs, one_line_error

REFUSED = [
    ("* * * * * *", "has 6 fields; a cron expression has 5 (seconds and years are not taken): minute hour day "
                    "month weekday"),
    ("0 9 * * 1-5 2027", "has 6 fields; a cron expression has 5"),
    ("* * * * * * *", "has 7 fields"),
    ("5-1 * * * *", "the minute range 5-1 runs backwards; write it from low to high, or as two ranges (5-59,0-1)"),
    ("0 22-2 * * *", "the hour range 22-2 runs backwards"),
    ("0 9 * * FRI-MON", "the weekday range FRI-MON runs backwards; write it from low to high, or as two ranges "
                        "(5-6,0-1)"),
    ("0 0 1 dec-jan *", "the month range dec-jan runs backwards"),
    ("0 9 * * 1,5-2/2", "the weekday range 5-2 runs backwards"),
]


def test_a_range_whose_end_is_past_its_field_is_left_to_croniter_not_called_backwards(configured: Path) -> None:
    """Sunday is 7 as well as 0 in the weekday field, so `7-1` is Sunday to Monday (taken as croniter
    reads it); a minute of 60 is no minute at all: invalid, never "write it as 60-59,0-5"."""
    cron("add", "0 9 * * 7-1", "sunday and monday", "--name", "sm")
    assert [job["schedule"]["expr"] for job in jobs(configured)] == ["0 9 * * 7-1"]
    said = one_line_error(cron("add", "60-5 * * * *", "x", check=1))
    assert "is not a valid cron expression" in said and "backwards" not in said, said


@pytest.mark.parametrize(("schedule", "words"), REFUSED)
def test_an_expression_of_other_than_five_fields_or_with_a_backward_range_is_refused_in_one_line(
        configured: Path, schedule: str, words: str) -> None:
    cron("add", "0 9 * * mon-fri", "fine", "--name", "fine")  # names and ranges written forwards are taken
    before = (configured / "cron" / "jobs.json").read_bytes()
    said = one_line_error(cron("add", schedule, "x", check=1))
    assert f"the schedule {schedule!r}" in said and words in said, said
    assert words in one_line_error(cron("edit", "fine", "--schedule", schedule, check=1))
    assert (configured / "cron" / "jobs.json").read_bytes() == before


def test_a_hand_edited_job_with_such_an_expression_is_listed_with_its_problem_and_never_runs(
        configured: Path, llm_server) -> None:
    cron("add", "every 1h", "fine", "--name", "fine")
    hand_edit(configured, *({"id": f"bad00000000{n}", "name": f"bad {n}", "schedule": {"kind": "cron", "expr": expr}}
                            for n, (expr, _) in enumerate(REFUSED[:5])))
    listed = cron("list")
    assert "Traceback" not in listed.stderr
    for n, (expr, words) in enumerate(REFUSED[:5]):
        assert f"job 'bad00000000{n}' is skipped: schedule {expr!r}" in listed.stdout and words in listed.stdout, \
            (expr, listed.stdout)
    assert "cannot run: schedule '5-1 * * * *'" in one_line_error(cron("run", "bad 3", check=1))
    assert [job["name"] for job in json.loads(cron("list", "--json").stdout) if "problem" not in job] == ["fine"]


def test_the_api_refuses_them_as_a_400_naming_the_schedule(home: Path, llm_server,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.helpers import llm_config

    llm_config(home, llm_server.url, "timezone: UTC\n")
    monkeypatch.setenv("API_SERVER_KEY", KEY)
    with Serve() as served:
        url = f"{served.root}/api/jobs"
        for schedule, words in REFUSED:
            status, body, _ = call(url, {"name": "x", "schedule": schedule, "prompt": "p"})
            assert (status, body["error"]["param"]) == (400, "schedule"), (schedule, body)
            assert words in body["error"]["message"], body
        made = call(url, {"name": "ok", "schedule": "0 9 * * 1-5", "prompt": "p"})[1]["job"]["id"]
        status, body, _ = call(f"{url}/{made}", {"schedule": "5-1 * * * *"}, method="PATCH")
        assert (status, body["error"]["param"]) == (400, "schedule") and "runs backwards" in body["error"]["message"]
    assert [job["schedule"]["expr"] for job in jobs(home)] == ["0 9 * * 1-5"]
