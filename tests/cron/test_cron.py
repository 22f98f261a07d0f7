"""`hermes cron` as subprocesses against the scripted model, on a fixed clock (`HERMES_CRON_NOW`):
Hermes' schedule formats, jobs.json kept readable and in Hermes' shape, due runs exactly once (also
under concurrent ticks and after a `kill -9`), catch-up after downtime, failing and hanging jobs
beside a good one, delivery through a platform's `standalone_sender_fn` (with retries) and a
running gateway, and the agent's `cronjob` tool from a conversation."""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from hermes_core import CronError
from hermes_core.cron import next_run, parse_schedule
from hermes_core.testing import Fault, Reply, tool_call
from tests.helpers import HERMES, hermes, make_folder_plugin
from tests.helpers.cron import T0, at, cron, jobs

PAGER = """
import json, os

async def send(pconfig, chat_id, message, *, thread_id=None, media_files=None, force_document=False):
    home = os.environ["HERMES_HOME"]
    failures = os.path.join(home, "pager-failures")
    if os.path.exists(failures) and int(open(failures).read()) > 0:
        left = int(open(failures).read())
        open(failures, "w").write(str(left - 1))
        return {"error": "the pager service is down"}
    with open(os.path.join(home, "paged.jsonl"), "a") as out:
        out.write(json.dumps({"chat_id": chat_id, "thread_id": thread_id, "text": message}) + "\\n")
    return {"success": True, "message_id": "m1"}

def register(ctx):
    ctx.register_platform(name="pager", label="Pager", adapter_factory=lambda config: None, check_fn=lambda: True,
                          cron_deliver_env_var="PAGER_HOME", standalone_sender_fn=send)
"""


def test_hermes_schedule_formats_and_their_next_runs() -> None:
    paris = __import__("zoneinfo").ZoneInfo("Europe/Paris")
    assert parse_schedule("30m", at=T0) == {"kind": "interval", "minutes": 30, "display": "every 30m"}
    assert parse_schedule("every 2h", at=T0)["minutes"] == 120
    assert parse_schedule("every monday 9am", at=T0)["expr"] == "0 9 * * 1"
    assert parse_schedule("weekdays at 9:30", at=T0)["expr"] == "30 9 * * 1-5"
    assert parse_schedule("in 30m", at=T0)["run_at"] == "2026-11-23T08:30:00+00:00"
    once = parse_schedule("2026-12-01T09:00", at=T0, tz=paris)
    assert once["kind"] == "once" and once["run_at"] == "2026-12-01T09:00:00+01:00"
    daily = parse_schedule("0 9 * * *", at=T0)
    assert next_run(daily, T0, paris) == dt.datetime(2026, 11, 23, 8, 0, tzinfo=dt.timezone.utc) + dt.timedelta(days=1)
    spring = dt.datetime(2026, 3, 28, 12, tzinfo=dt.timezone.utc)  # Paris goes to summer time on the 29th
    assert next_run(daily, spring, paris) == dt.datetime(2026, 3, 29, 7, 0, tzinfo=dt.timezone.utc)
    for bad in ("banana", "every fortnight", "0 9 * *", "61 9 * * *", "2020-01-01T00:00", ""):
        with pytest.raises(CronError):
            parse_schedule(bad, at=T0)


def test_the_cli_adds_lists_edits_pauses_and_removes_and_a_bad_schedule_changes_nothing(configured: Path) -> None:
    home = configured
    added = cron("add", "every 1h", "check the build", "--name", "build").stdout
    assert re.match(r"added [0-9a-f]{12} 'build': every 60m, next 2026-11-23 09:00", added), added
    cron("add", "0 9 * * 1-5", "standup notes", "--repeat", "3")
    before = (home / "cron" / "jobs.json").read_bytes()
    refused = cron("add", "every fortnight", "x", check=1).stderr
    assert refused.startswith("hermes: error: the schedule 'every fortnight': 'fortnight' is not a duration")
    assert cron("edit", "build", "--schedule", "banana", check=1).returncode == 1
    assert (home / "cron" / "jobs.json").read_bytes() == before  # untouched
    listed = json.loads(cron("list", "--json").stdout)
    assert [(j["name"], j["schedule"]["kind"], j["repeat"]) for j in listed] == [
        ("build", "interval", {"times": None, "completed": 0}), ("standup notes", "cron", {"times": 3, "completed": 0})]
    assert (home / "cron" / "jobs.json").stat().st_mode & 0o777 == 0o600
    cron("edit", "build", "--schedule", "every 2h", "--prompt", "check CI")
    cron("pause", "build")
    assert [j["state"] for j in jobs(home)] == ["paused", "scheduled"]
    cron("resume", "build", when=T0 + dt.timedelta(hours=5))
    build = jobs(home)[0]
    assert (build["prompt"], build["state"], build["next_run_at"]) == ("check CI", "scheduled",
                                                                      "2026-11-23T15:00:00+00:00")
    assert "no cron job 'nope'" in cron("remove", "nope", check=1).stderr
    cron("remove", "build")
    assert [j["name"] for j in jobs(home)] == ["standup notes"]
    assert "standup notes" in cron("list").stdout


def test_a_due_job_runs_once_and_catches_up_once_after_downtime(configured: Path, llm_server) -> None:
    home = configured
    llm_server.always("All green.")
    cron("add", "every 1h", "check the build", "--name", "build")
    assert cron("tick").stderr.strip() == "ran 0 jobs"  # due at 09:00
    later = T0 + dt.timedelta(hours=5, minutes=10)  # five slots missed
    assert cron("tick", when=later).stderr.splitlines()[-1] == "ran 1 job"
    assert cron("tick", when=later).stderr.strip() == "ran 0 jobs"
    job = jobs(home)[0]
    assert (job["repeat"]["completed"], job["last_status"], job["next_run_at"]) == (
        1, "ok", "2026-11-23T14:10:00+00:00")  # the next slot after now, not the missed ones
    assert "claim" not in job
    outputs = list((home / "cron" / "output" / job["id"]).glob("*.md"))
    assert [p.name for p in outputs] == ["2026-11-23_13-10-00.md"]
    text = outputs[0].read_text()
    assert text.startswith("# Cron Job: build\n\n**Job ID:** " + job["id"]) and "## Response\n\nAll green.\n" in text
    assert len(llm_server.requests) == 1
    sent = llm_server.requests[0]
    assert "You are running as a scheduled cron job" in sent.messages[-1]["content"]
    assert "cronjob" not in [t["function"]["name"] for t in sent.body.get("tools", [])]  # no jobs from a job


def test_concurrent_ticks_run_a_due_slot_exactly_once(configured: Path, llm_server) -> None:
    home = configured
    llm_server.always(Reply("Done once.", delay=1.0))
    cron("add", "in 5m", "one shot")
    due = T0 + dt.timedelta(minutes=6)
    ticks = [subprocess.Popen([str(HERMES), "cron", "tick"], env=at(due), stderr=subprocess.PIPE, text=True)
             for _ in range(3)]
    ran = [int(re.search(r"ran (\d+) job", t.communicate(timeout=120)[1]).group(1)) for t in ticks]
    assert sorted(ran) == [0, 0, 1] and len(llm_server.requests) == 1
    job = jobs(home)[0]
    assert (job["state"], job["enabled"], job["repeat"], job["next_run_at"]) == (
        "completed", False, {"times": 1, "completed": 1}, None)
    assert cron("tick", when=due + dt.timedelta(hours=1)).stderr.strip() == "ran 0 jobs"


def test_a_failing_and_a_hanging_job_never_stop_a_good_one(configured: Path, llm_server) -> None:
    home = configured
    with open(home / "config.yaml", "a") as config:
        config.write("cron:\n  time_limit: 15\n")  # room for a run's start on a loaded machine

    def answer(body: dict[str, Any]) -> Reply | Fault:
        prompt = body["messages"][-1]["content"]
        if "hang" in prompt:
            return Reply("too late", delay=60)
        if "fail" in prompt:
            return Fault("status", 400, b'{"error": {"message": "bad request"}}')
        return Reply("Fine.")

    llm_server.answer(answer)
    for prompt in ("please hang", "please fail", "please work"):
        cron("add", "every 1h", prompt, "--name", prompt.split()[1])
    started = time.monotonic()
    tick = cron("tick", when=T0 + dt.timedelta(hours=1))
    assert time.monotonic() - started < 50
    assert tick.stderr.splitlines()[-1] == "ran 3 jobs"
    state = {j["name"]: (j["last_status"], j["last_error"] or "") for j in jobs(home)}
    assert state["work"] == ("ok", "")
    assert state["fail"][0] == "error" and "400" in state["fail"][1]
    assert state["hang"][0] == "error" and "time limit (15s, cron.time_limit)" in state["hang"][1]
    assert all(j["next_run_at"] == "2026-11-23T10:00:00+00:00" for j in jobs(home))
    failed = next((home / "cron" / "output").glob(f"{jobs(home)[1]['id']}/*.md")).read_text()
    assert failed.startswith("# Cron Job: fail (FAILED)") and "## Error" in failed


def test_kill_9_during_a_run_leaves_the_job_readable_and_due_again(configured: Path, llm_server) -> None:
    home = configured
    llm_server.push(Reply("never delivered", delay=30))
    llm_server.always("Second time lucky.")
    cron("add", "every 1h", "slow job")
    due = T0 + dt.timedelta(hours=1)
    tick = subprocess.Popen([str(HERMES), "cron", "tick"], env=at(due), stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while not llm_server.requests:  # the run has started
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert "claim" in jobs(home)[0]  # written before the run started
    tick.send_signal(signal.SIGKILL)
    tick.wait()
    job = jobs(home)[0]  # readable
    assert job["repeat"]["completed"] == 0
    assert cron("tick", when=due).stderr.splitlines()[-1] == "ran 1 job"  # the dead claim is void
    assert jobs(home)[0]["last_status"] == "ok" and jobs(home)[0]["repeat"]["completed"] == 1


def test_answers_are_delivered_through_the_platforms_standalone_sender_and_retried(
        configured: Path, llm_server, monkeypatch: pytest.MonkeyPatch) -> None:
    home = configured
    make_folder_plugin(home / "plugins", "pager", PAGER, "name: pager\n")
    with open(home / "config.yaml", "a") as config:
        config.write("plugins:\n  enabled: [pager]\n")
    monkeypatch.setenv("PAGER_HOME", "ops-room")
    llm_server.always("Build is green.")
    cron("add", "every 1h", "check the build", "--name", "build", "--deliver", "pager,pager:oncall")
    (home / "pager-failures").write_text("1")  # the first send fails
    cron("tick", when=T0 + dt.timedelta(hours=1))
    paged = [json.loads(line) for line in (home / "paged.jsonl").read_text().splitlines()]
    assert [p["chat_id"] for p in paged] == ["oncall"]  # the home channel's send failed and waits
    assert paged[0]["text"].startswith("Cronjob Response: build\n(job_id: ") and "Build is green." in paged[0]["text"]
    job = jobs(home)[0]
    assert job["last_status"] == "delivery_failed" and "the pager service is down" in job["last_delivery_error"]
    waiting = json.loads((home / "cron" / "deliveries.json").read_text())
    assert [(w["chat_id"], w["attempts"]) for w in waiting] == [("ops-room", 1)]
    cron("tick", when=T0 + dt.timedelta(hours=1, minutes=2))  # the retry is due after a minute
    paged = [json.loads(line) for line in (home / "paged.jsonl").read_text().splitlines()]
    assert [p["chat_id"] for p in paged] == ["oncall", "ops-room"]
    assert json.loads((home / "cron" / "deliveries.json").read_text()) == []
    job = jobs(home)[0]
    assert (job["last_status"], job["last_delivery_error"]) == ("ok", None)


def test_the_running_gateway_ticks_and_delivers_through_its_adapter(configured: Path, llm_server,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.helpers.chat import ADAPTER_PLUGIN, FakeChat, GatewayProcess

    home = configured
    chat = FakeChat()
    try:
        monkeypatch.setenv("FAKECHAT_URL", chat.url)
        make_folder_plugin(home / "plugins", "fakechat", ADAPTER_PLUGIN, "name: fakechat\n")
        with open(home / "config.yaml", "a") as config:
            config.write("plugins:\n  enabled: [fakechat]\ncron:\n  tick_interval: 0.5\n")
        llm_server.always("Morning summary.")
        cron("add", "in 1m", "morning summary", "--name", "morning", "--deliver", "fakechat:c1")
        monkeypatch.setenv("HERMES_CRON_NOW", (T0 + dt.timedelta(minutes=2)).isoformat())
        with GatewayProcess() as gateway:
            gateway.wait_for(r"fakechat: connected")
            sent = chat.wait_sent(1, "c1")
            assert sent[0]["text"].startswith("Cronjob Response: morning") and "Morning summary." in sent[0]["text"]
            gateway.wait_for(r"cron: morning \([0-9a-f]{12}\) ran")
            assert gateway.stop() == 0
        assert jobs(home)[0]["state"] == "completed"
    finally:
        chat.close()


def test_the_cronjob_tool_makes_jobs_from_a_conversation(configured: Path, llm_server) -> None:
    home = configured
    llm_server.reply("", tool_calls=[tool_call("cronjob", {"action": "create", "schedule": "weekdays at 9",
                                                           "prompt": "Check the build", "name": "build"})])
    llm_server.reply("", tool_calls=[tool_call("cronjob", {"action": "list"})]).reply("Scheduled.")
    assert hermes("run", "remind me every weekday at 9 to check the build").stdout.strip() == "Scheduled."
    job = jobs(home)[0]
    assert (job["name"], job["schedule"], job["deliver"]) == (
        "build", {"kind": "cron", "expr": "0 9 * * 1-5", "display": "weekdays at 9"}, "local")
    listed = json.loads(llm_server.requests[2].messages[-1]["content"])
    assert listed["success"] is True and listed["jobs"][0]["job_id"] == job["id"]
    llm_server.reply("", tool_calls=[tool_call("cronjob", {"action": "pause"})]).reply("Which one?")
    hermes("run", "pause it")
    refused = json.loads(llm_server.requests[4].messages[-1]["content"])
    assert refused == {"success": False, "error": "action 'pause' needs job_id (list the jobs first)"}


def test_a_jobs_json_that_cannot_be_read_is_one_line_naming_it_and_is_left_as_it_is(configured: Path) -> None:
    (configured / "cron").mkdir()
    broken = b'{"jobs": [' + b"[" * 30_000 + b"\xff"
    (configured / "cron" / "jobs.json").write_bytes(broken)
    said = cron("list", check=1).stderr
    assert said.startswith("hermes: error: ") and "jobs.json" in said and "move it aside" in said
    assert len(said.splitlines()) == 1 and "internal error" not in said
    assert cron("add", "30m", "x", check=1).returncode == 1
    assert (configured / "cron" / "jobs.json").read_bytes() == broken  # nothing written over it


def test_a_jobs_json_hermes_wrote_runs_here_unchanged(configured: Path, llm_server) -> None:
    home = configured
    (home / "cron").mkdir()
    written = {"jobs": [{
        "id": "a1b2c3d4e5f6", "name": "news", "prompt": "Summarise the news", "skills": [], "skill": None,
        "model": None, "provider": None, "provider_snapshot": "openrouter", "base_url": None, "script": None,
        "no_agent": False, "schedule": {"kind": "interval", "minutes": 60, "display": "every 60m"},
        "schedule_display": "every 60m", "repeat": {"times": None, "completed": 4}, "enabled": True,
        "state": "scheduled", "paused_at": None, "paused_reason": None, "created_at": "2026-11-20T09:00:00.123456+00:00",
        "next_run_at": "2026-11-23T07:45:00+00:00", "last_run_at": "2026-11-23T06:45:00+00:00", "last_status": "ok",
        "last_error": None, "last_delivery_error": None, "failure_streak": 0, "deliver": "local", "origin": None,
        "enabled_toolsets": None, "workdir": None}], "updated_at": "2026-11-23T07:30:01+00:00"}
    (home / "cron" / "jobs.json").write_text("\ufeff" + json.dumps(written, indent=2), encoding="utf-8")
    assert "a1b2c3d4e5f6  news" in cron("list").stdout
    llm_server.always("Headlines.")
    assert cron("tick").stderr.splitlines()[-1] == "ran 1 job"
    job = jobs(home)[0]
    assert job["repeat"]["completed"] == 5 and job["provider_snapshot"] == "openrouter" and job["failure_streak"] == 0
    assert job["next_run_at"] == "2026-11-23T09:00:00+00:00"


def test_a_jobs_skills_come_before_its_prompt_as_hermes_invokes_them(configured: Path, llm_server) -> None:
    home = configured
    skill = home / "skills" / "devops" / "triage"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: triage\ndescription: Triage failures\n---\nGroup failures by cause.\n")
    llm_server.always("Triaged.")
    cron("add", "every 1h", "Look at last night's failures", "--skill", "triage", "--skill", "missing-one")
    assert cron("run", jobs(home)[0]["id"]).stdout.strip() == "Triaged."
    sent = llm_server.requests[0].messages[-1]["content"]
    assert "skill(s) were listed for this job but could not be found and were skipped: missing-one" in sent
    assert '[IMPORTANT: The user has invoked the "triage" skill' in sent and "Group failures by cause." in sent
    assert sent.index("Group failures by cause.") < sent.index("alongside the skill invocation: Look at last night's")
    job = jobs(home)[0]
    assert job["repeat"]["completed"] == 1 and job["next_run_at"] == "2026-11-23T09:00:00+00:00"  # run by hand


def test_the_gateway_runs_what_is_due_when_it_starts(configured: Path, llm_server,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.helpers.chat import GatewayProcess

    home = configured
    with open(home / "config.yaml", "a") as config:  # the next tick is an hour away: only the one at start runs it
        config.write("platforms:\n  webhook:\n    enabled: true\n    port: 0\n    secret: s3cret\n"
                     "cron:\n  tick_interval: 3600\n")
    llm_server.always("Done at start.")
    cron("add", "in 1m", "at start", "--name", "early")
    monkeypatch.setenv("HERMES_CRON_NOW", (T0 + dt.timedelta(minutes=2)).isoformat())
    with GatewayProcess() as gateway:
        gateway.wait_for(r"cron: early \([0-9a-f]{12}\) ran", timeout=60)
        assert gateway.stop() == 0
    assert jobs(home)[0]["last_status"] == "ok"
