"""Callers kept apart: every id a request can name (a session, a conversation, a response, a run,
a cron job) belongs to the key that made it. Another named key's id answers exactly as an id that
never existed (same status, same body), and its history never reaches the model. The full key
(`API_SERVER_KEY`) and a keyless loopback server see everything, as `hermes sessions` does."""

from __future__ import annotations

import json
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hermes_core.testing import Reply
from tests.helpers.api_server import KEY, Serve, call, until
from tests.helpers import HERMES, hermes, llm_config

ANN, BEN = "ann-key-0123456789", "ben-key-0123456789"
SECRET = "my locker code is 7141"
KEYS = ("api_server:\n  keys:\n"
        "    ann:\n      key_env: ANN_KEY\n"
        "    ben:\n      key_env: BEN_KEY\n")


@pytest.fixture
def two_keys(home: Path, llm_server, monkeypatch: pytest.MonkeyPatch) -> Iterator[Serve]:
    llm_config(home, llm_server.url, KEYS)
    monkeypatch.setenv("API_SERVER_KEY", KEY)
    monkeypatch.setenv("ANN_KEY", ANN)
    monkeypatch.setenv("BEN_KEY", BEN)
    with Serve() as server:
        yield server


def _ann_session(served: Serve, llm_server) -> str:
    """A session Ann started with a chat completion: the model was told her secret."""
    llm_server.reply("Noted.")
    with served.client(ANN) as ann:
        answer = ann.chat.completions.with_raw_response.create(
            model="hermes-agent", messages=[{"role": "user", "content": SECRET}])
    return str(answer.headers["x-hermes-session-id"])


def _leaked(llm_server, since: int = 1) -> list[int]:
    """The model requests after the first `since` that carried Ann's secret."""
    return [index for index, request in enumerate(llm_server.requests[since:], since)
            if SECRET in json.dumps(request.messages)]


def _same_as_unknown(got: tuple[int, Any, Any], unknown: tuple[int, Any, Any], theirs: str, nothing: str) -> None:
    """`got` (naming another key's id) answers exactly as `unknown` (naming an id that never existed)."""
    assert got[0] == 404, got
    assert json.loads(json.dumps(got[1]).replace(theirs, nothing)) == unknown[1] and unknown[0] == 404, (got, unknown)


def test_another_keys_session_id_is_unknown_to_chat_completions_and_runs(two_keys: Serve, llm_server) -> None:
    theirs, nothing = _ann_session(two_keys, llm_server), "20991231-000000-abcdef"
    chat = f"{two_keys.url}/chat/completions"
    asked = {"messages": [{"role": "user", "content": "what is my locker code?"}]}
    for stream in (False, True):
        body = {**asked, "stream": stream}
        _same_as_unknown(call(chat, body, key=BEN, headers={"X-Hermes-Session-Id": theirs}),
                         call(chat, body, key=BEN, headers={"X-Hermes-Session-Id": nothing}), theirs, nothing)
    run = {"input": "what is my locker code?", "session_id": theirs}
    _same_as_unknown(call(f"{two_keys.url}/runs", run, key=BEN),
                     call(f"{two_keys.url}/runs", {**run, "session_id": nothing}, key=BEN), theirs, nothing)
    assert len(llm_server.requests) == 1 and _leaked(llm_server) == []

    # While Ann's session is answering, Ben is not told it exists (a 409 would say so).
    held = threading.Event()
    llm_server.push(Reply("still thinking about it", hold=held, hold_after=1))
    started = call(f"{two_keys.url}/runs", {"input": "and then?", "session_id": theirs}, key=ANN)
    assert started[0] == 202
    run_id = started[1]["run_id"]
    try:
        until(lambda: call(f"{two_keys.url}/runs/{run_id}", key=ANN)[1].get("last_event") == "message.delta")
        _same_as_unknown(call(chat, asked, key=BEN, headers={"X-Hermes-Session-Id": theirs}),
                         call(chat, asked, key=BEN, headers={"X-Hermes-Session-Id": nothing}), theirs, nothing)
    finally:
        held.set()
    until(lambda: call(f"{two_keys.url}/runs/{run_id}", key=ANN)[1]["status"] != "running")

    # Ann herself goes on with her session; so does the full key.
    llm_server.reply("It is 7141.").reply("Still 7141.")
    for key in (ANN, KEY):
        status, _, headers = call(chat, asked, key=key, headers={"X-Hermes-Session-Id": theirs})
        assert (status, headers["x-hermes-session-id"]) == (200, theirs)
    assert _leaked(llm_server) == [1, 2, 3]  # Ann's run, then Ann's and the full key's turns


def test_another_keys_session_is_unknown_to_the_sessions_api(two_keys: Serve, llm_server, home: Path) -> None:
    theirs, nothing = _ann_session(two_keys, llm_server), "20991231-000000-abcdef"
    sessions = f"{two_keys.root}/api/sessions"
    for tail, body in (("", None), ("/messages", None), ("/fork", {}), ("/chat", {"message": "my code?"})):
        _same_as_unknown(call(f"{sessions}/{theirs}{tail}", body, key=BEN),
                         call(f"{sessions}/{nothing}{tail}", body, key=BEN), theirs, nothing)
    assert len(llm_server.requests) == 1

    llm_server.reply("Hello Ben.")
    with two_keys.client(BEN) as ben_client:
        ben_client.chat.completions.create(model="hermes-agent", messages=[{"role": "user", "content": "hello"}])
    ben = call(sessions, key=BEN)[1]["data"]
    assert [row["title"] for row in ben] == ["hello"]  # his own only
    status, forked, _ = call(f"{sessions}/{ben[0]['id']}/fork", {}, key=BEN)
    assert status == 201
    assert sorted(row["id"] for row in call(sessions, key=BEN)[1]["data"]) == \
        sorted([ben[0]["id"], forked["session"]["id"]])  # his fork is his
    assert [row["id"] for row in call(sessions, key=ANN)[1]["data"]] == [theirs]

    # A session another host started (`hermes run`) is no named key's; the full key sees every one.
    llm_server.reply("From the command line.")
    hermes("run", "a local question")
    everything = {row["title"] for row in call(sessions, key=KEY)[1]["data"]}
    assert everything == {SECRET, "hello", "a local question"}
    local = next(row["id"] for row in call(sessions, key=KEY)[1]["data"] if row["title"] == "a local question")
    for key in (ANN, BEN):
        _same_as_unknown(call(f"{sessions}/{local}/messages", key=key),
                         call(f"{sessions}/{nothing}/messages", key=key), local, nothing)
    assert call(f"{sessions}/{theirs}/messages", key=KEY)[0] == 200
    assert _leaked(llm_server) == []


def test_conversations_responses_and_runs_stay_with_their_key(two_keys: Serve, llm_server) -> None:
    llm_server.reply("Noted.")
    with two_keys.client(ANN) as ann:
        first = ann.responses.with_raw_response.create(model="hermes-agent", input=SECRET, conversation="locker")
    theirs = first.headers["x-hermes-session-id"]
    response_id = first.parse().id
    llm_server.reply("I do not know your code.")
    with two_keys.client(BEN) as ben:
        ben.responses.create(model="hermes-agent", input="what is my code?", conversation="locker")
    assert _leaked(llm_server) == []  # Ben's "locker" is his own, new conversation

    responses = f"{two_keys.url}/responses"
    for got, unknown in ((call(f"{responses}/{response_id}", key=BEN), call(f"{responses}/resp_nope", key=BEN)),
                         (call(f"{responses}/{response_id}", key=BEN, method="DELETE"),
                          call(f"{responses}/resp_nope", key=BEN, method="DELETE"))):
        _same_as_unknown(got, unknown, response_id, "resp_nope")
    follow = call(responses, {"input": "my code?", "previous_response_id": response_id}, key=BEN)
    assert follow[0] == 400 and json.loads(json.dumps(follow[1]).replace(response_id, "resp_nope")) == \
        call(responses, {"input": "my code?", "previous_response_id": "resp_nope"}, key=BEN)[1]

    llm_server.reply("Run done.")
    run_id = call(f"{two_keys.url}/runs", {"input": "go on", "session_id": theirs}, key=ANN)[1]["run_id"]
    until(lambda: call(f"{two_keys.url}/runs/{run_id}", key=ANN)[1]["status"] != "running")
    for tail, body in (("", None), ("/events", None), ("/stop", {}), ("/approval", {})):
        _same_as_unknown(call(f"{two_keys.url}/runs/{run_id}{tail}", body, key=BEN),
                         call(f"{two_keys.url}/runs/run_nope{tail}", body, key=BEN), run_id, "run_nope")
    session_of_run = call(f"{two_keys.url}/runs/{run_id}", key=ANN)[1]["session_id"]
    assert session_of_run == theirs
    _same_as_unknown(call(f"{two_keys.url}/runs", {"input": "my code?", "session_id": session_of_run}, key=BEN),
                     call(f"{two_keys.url}/runs", {"input": "my code?", "session_id": "nope"}, key=BEN),
                     session_of_run, "nope")
    assert _leaked(llm_server) == [2]  # Ann's own run only


def test_cron_jobs_made_through_a_key_are_that_keys(two_keys: Serve, llm_server) -> None:
    jobs = f"{two_keys.root}/api/jobs"
    status, created, _ = call(jobs, {"name": "ann's digest", "schedule": "every 2h", "prompt": SECRET}, key=ANN)
    assert status == 200
    job_id, nothing = created["job"]["id"], "0123456789ab"
    assert call(f"{jobs}?include_disabled=true", key=BEN)[1] == {"jobs": []}
    for tail, method, body in (("", "GET", None), ("", "PATCH", {"prompt": "mine now"}), ("/pause", "POST", {}),
                               ("/run", "POST", {}), ("", "DELETE", None)):
        _same_as_unknown(call(f"{jobs}/{job_id}{tail}", body, key=BEN, method=method),
                         call(f"{jobs}/{nothing}{tail}", body, key=BEN, method=method), job_id, nothing)
    assert [job["id"] for job in call(jobs, key=ANN)[1]["jobs"]] == [job_id]
    assert [job["id"] for job in call(jobs, key=KEY)[1]["jobs"]] == [job_id]  # the full key sees every job
    assert call(f"{jobs}/{job_id}", key=ANN)[1]["job"]["prompt"] == SECRET  # untouched by Ben

    # The agent's cronjob tool reaches every job of the home: a named key's agent is not offered it.
    llm_server.always("ok")
    for key in (BEN, KEY):
        call(f"{two_keys.url}/chat/completions", {"messages": [{"role": "user", "content": f"list jobs {key}"}]},
             key=key)
    offered = [{tool["function"]["name"] for tool in request.body.get("tools", [])} for request in llm_server.requests]
    assert "cronjob" not in offered[0] and "cronjob" in offered[1], offered


def test_a_named_key_cannot_take_the_full_keys_name(home: Path, llm_server, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("API_SERVER_KEY", "loopback"):
        llm_config(home, llm_server.url, f"api_server:\n  keys:\n    {name}:\n      key_env: SOME_KEY\n")
        monkeypatch.setenv("SOME_KEY", "some-key-0123456789")
        try:
            done = subprocess.run([str(HERMES), "serve", "--port", "0"], capture_output=True, text=True, timeout=30)
        except subprocess.TimeoutExpired:
            pytest.fail(f"hermes serve started with a named key called {name}")
        assert done.returncode == 1 and f"api_server.keys.{name}: " in done.stderr and "rename" in done.stderr, \
            done.stderr


def test_a_job_a_named_key_made_runs_with_that_keys_tools_and_memory(home: Path, llm_server,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """A key offered only `current_time` makes a job through /api/jobs: its runs are offered
    `current_time` alone (not every tool of the home), under the key's caller; a job whose key was
    removed since does not run with anyone else's rights."""
    import os

    llm_config(home, llm_server.url, "timezone: UTC\napi_server:\n  keys:\n"
                                     "    ann:\n      key_env: ANN_KEY\n      tools: [current_time]\n")
    monkeypatch.setenv("API_SERVER_KEY", KEY)
    monkeypatch.setenv("ANN_KEY", ANN)
    with Serve() as served:
        jobs = f"{served.root}/api/jobs"
        for name in ("digest", "operator's"):
            status, made, _ = call(jobs, {"name": name, "schedule": "every 1h", "prompt": f"run {name}"},
                                   key=ANN if name == "digest" else KEY)
            assert status == 200, made
            call(f"{jobs}/{made['job']['id']}/run", {}, key=ANN if name == "digest" else KEY)
    assert made["job"].get("origin") is None  # the full key's job: the home's own rights, as before
    llm_server.always("done")
    env = {**os.environ, "HERMES_TIMEZONE": "UTC"}
    ran = subprocess.run([str(HERMES), "cron", "tick"], capture_output=True, text=True, timeout=120, env=env)
    assert ran.stderr.splitlines()[-1] == "ran 2 jobs", ran.stderr
    offered = {("digest" if "run digest" in json.dumps(r.messages) else "operator"):
               {tool["function"]["name"] for tool in r.body.get("tools", [])} for r in llm_server.requests}
    assert offered["digest"] == {"current_time"}, offered
    assert "current_time" in offered["operator"] and len(offered["operator"]) > 1, offered

    llm_config(home, llm_server.url, "timezone: UTC\n")  # the key is gone
    job = next(j for j in hermes_json_jobs(home) if j["name"] == "digest")
    subprocess.run([str(HERMES), "cron", "run", job["id"]], capture_output=True, text=True, timeout=60, env=env)
    before = len(llm_server.requests)
    ran = subprocess.run([str(HERMES), "cron", "tick"], capture_output=True, text=True, timeout=120, env=env)
    assert len(llm_server.requests) == before, ran.stderr  # never run with the home's rights
    job = next(j for j in hermes_json_jobs(home) if j["name"] == "digest")
    assert "'ann'" in job["last_error"] and "api_server.keys" in job["last_error"], job


def hermes_json_jobs(home: Path) -> list[dict[str, Any]]:
    return list(json.loads((home / "cron" / "jobs.json").read_text())["jobs"])
