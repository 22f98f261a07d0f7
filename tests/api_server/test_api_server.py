"""`hermes serve` as a subprocess against the scripted model, driven by the stock `openai` SDK
(chat, streaming, responses, models) and raw HTTP for the rest: Hermes' routes with OpenAI's
shapes, keys and their scopes, the caller's identity reaching a plugin, runs with idempotency,
the concurrency cap, a client that goes away, errors, and a restart."""

from __future__ import annotations

import json
import signal
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest

from hermes_core.testing import Reply, tool_call
from tests.helpers import hermes, hermes_json, llm_config, make_folder_plugin
from tests.helpers.api_server import KEY, Serve, call, sse_events, until

PLUGINS = "plugins:\n  enabled: [clock, witness]\n"

WITNESS = """
import json, os
from gateway.session_context import get_session_env

def register(ctx):
    def who(sender_id="", platform="", **kwargs):
        with open(os.path.join(os.environ["HERMES_HOME"], "senders.txt"), "a") as out:
            out.write(f"{platform}:{sender_id}\\n")

    def whoami(args, **kwargs):
        return json.dumps({"user": get_session_env("HERMES_SESSION_USER_ID"),
                           "platform": get_session_env("HERMES_SESSION_PLATFORM")})

    ctx.register_hook("pre_llm_call", who)
    ctx.register_tool("whoami", "witness", {"name": "whoami", "description": "Who is asking",
                      "parameters": {"type": "object", "properties": {}}}, whoami)
"""


@pytest.fixture
def served(home: Path, llm_server, monkeypatch: pytest.MonkeyPatch) -> Iterator[Serve]:
    make_folder_plugin(home / "plugins", "witness", WITNESS, "name: witness\n")
    llm_config(home, llm_server.url, PLUGINS)
    monkeypatch.setenv("API_SERVER_KEY", KEY)
    with Serve() as server:
        yield server


def test_the_stock_sdk_chats_streams_and_continues_responses(served: Serve, llm_server, home: Path) -> None:
    client = served.client()
    assert [m.id for m in client.models.list()] == ["hermes-agent"]
    llm_server.reply("", tool_calls=[tool_call("current_time", {})]).reply("It is noon.")
    answer = client.chat.completions.create(model="hermes-agent", messages=[
        {"role": "system", "content": "Be terse."}, {"role": "user", "content": "what time is it?"}])
    assert answer.choices[0].message.content == "It is noon." and answer.choices[0].finish_reason == "stop"
    assert answer.usage is not None and answer.usage.total_tokens > 0
    system = llm_server.requests[0].messages[0]["content"]
    assert system.startswith("You are Hermes") and "\n\nBe terse." in system  # added to the prompt, not instead

    llm_server.reply("Hello there, friend.")
    pieces = [chunk.choices[0].delta.content for chunk in client.chat.completions.create(
        model="hermes-agent", messages=[{"role": "user", "content": "hi"}], stream=True) if chunk.choices]
    assert "".join(p or "" for p in pieces) == "Hello there, friend." and len([p for p in pieces if p]) > 1

    llm_server.reply("Noted: blue.").reply("You said blue.")
    first = client.responses.create(model="hermes-agent", input="my colour is blue")
    second = client.responses.create(model="hermes-agent", input="what colour?", previous_response_id=first.id)
    assert (first.output_text, second.output_text, second.previous_response_id) == \
        ("Noted: blue.", "You said blue.", first.id)
    sent = [(m["role"], m.get("content")) for m in llm_server.requests[-1].messages[1:]]
    assert sent == [("user", "my colour is blue"), ("assistant", "Noted: blue."), ("user", "what colour?")]
    assert client.responses.retrieve(second.id).output_text == "You said blue."

    llm_server.reply("Streamed words here.")
    kinds = [event.type for event in client.responses.create(model="hermes-agent", input="stream", stream=True)]
    assert kinds[:2] == ["response.created", "response.in_progress"] and kinds[-1] == "response.completed"
    assert kinds.count("response.output_text.delta") == 3

    listed = hermes_json("sessions", "list")
    assert {row["platform"] for row in listed} == {"api_server"} and len(listed) == 4  # two responses: one session


def test_streamed_chat_reports_tool_progress_a_stock_client_steps_over(served: Serve, llm_server) -> None:
    llm_server.reply("", tool_calls=[tool_call("current_time", {}, "call_1")]).reply("Done.")
    events = sse_events(f"{served.url}/chat/completions", {"model": "hermes-agent", "stream": True,
                                                           "messages": [{"role": "user", "content": "time?"}]})
    progress = [data for event, data in events if event == "hermes.tool.progress"]
    assert [(p["tool"], p["toolCallId"], p["status"]) for p in progress] == \
        [("current_time", "call_1", "running"), ("current_time", "call_1", "completed")]
    assert events[-1] == (None, "[DONE]")
    final = events[-2][1]
    assert final["choices"][0]["finish_reason"] == "stop" and final["usage"]["total_tokens"] > 0


def test_bad_input_gets_an_openai_error_object_naming_the_field(served: Serve, llm_server) -> None:
    chat = f"{served.url}/chat/completions"
    cases = [
        (call(chat, raw=b'{"model": "hermes-agent", "messages": ['), 400, "Invalid JSON"),
        (call(chat, {"model": "gpt-9", "messages": [{"role": "user", "content": "x"}]}), 400, "model 'gpt-9'"),
        (call(chat, {"model": "hermes-agent"}), 400, "'messages'"),
        (call(chat, {"messages": [{"role": "user", "content": [{"type": "input_audio"}]}]}), 400,
         "messages[0].content[0]"),
        (call(f"{served.url}/responses", {"input": "x", "previous_response_id": "resp_nope"}), 400, "resp_nope"),
        (call(chat, raw=b"{}", headers={"X-Hermes-User": "a\x01b"}), 400, "X-Hermes-User"),
        (call(f"{served.url}/runs/run_nope"), 404, "run_nope"),
    ]
    for (status, body, _), expected, says in cases:
        assert status == expected and says in body["error"]["message"], (status, body)
        assert set(body["error"]) == {"message", "type", "param", "code"}
    assert cases[4][0][1]["error"]["param"] == "previous_response_id"
    port = int(served.root.rsplit(":", 1)[1])
    status, body = _raw(port, b"Content-Length: 10485760\r\n\r\n" + b"x" * 65536)  # a 10 MB body, refused unread
    assert status == 413 and "larger than" in body["error"]["message"]
    status, body = _raw(port, b"Content-Length: abc\r\n\r\n")  # refused by uvicorn's HTTP parser, in plain text
    assert (status, body) == (400, "Invalid HTTP request received.")
    assert llm_server.requests == []  # nothing reached the model
    assert "Traceback" not in "\n".join(served.lines)


def _raw(port: int, rest: bytes) -> tuple[int, Any]:
    """A chat completions request written by hand (headers end with `rest`): its status and JSON body."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        try:
            sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nConnection: close\r\n"
                         b"Content-Type: application/json\r\nAuthorization: Bearer %b\r\n%b" % (port, KEY.encode(), rest))
        except OSError:  # the server answered and closed before reading it all
            pass
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    return int(head.split()[1]), json.loads(body) if b"application/json" in head else body.decode()


def test_keys_scope_endpoints_and_tools_and_the_caller_reaches_plugins(home: Path, llm_server,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    make_folder_plugin(home / "plugins", "witness", WITNESS, "name: witness\n")
    llm_config(home, llm_server.url, PLUGINS + "api_server:\n  keys:\n    reports:\n      key_env: REPORTS_KEY\n"
                                               "      endpoints: [chat]\n      tools: [who*]\n")
    monkeypatch.setenv("API_SERVER_KEY", KEY)
    monkeypatch.setenv("REPORTS_KEY", "reports-key-0123456789")
    with Serve() as served:
        assert call(f"{served.url}/models", key=None)[0] == 401
        assert call(f"{served.url}/models", key="wrong")[0] == 401
        health = call(f"{served.root}/health", key=None)
        assert health[0] == 200 and health[1]["status"] == "ok" and health[1]["platform"] == "hermes-core"
        status, body, _ = call(f"{served.url}/models", key="reports-key-0123456789")
        assert status == 403 and "endpoints" in body["error"]["message"]
        llm_server.reply("", tool_calls=[tool_call("whoami", {})]).reply("You are ada.")
        reports = served.client("reports-key-0123456789", **{"X-Hermes-User": "ada"})
        answer = reports.chat.completions.create(model="hermes-agent", messages=[{"role": "user", "content": "who?"}])
        assert answer.choices[0].message.content == "You are ada."
        offered = [t["function"]["name"] for t in llm_server.requests[0].body["tools"]]
        assert offered == ["whoami"]  # the key's tools only: not current_time
        assert json.loads(llm_server.requests[1].messages[-1]["content"]) == {"user": "ada", "platform": "api_server"}
        llm_server.reply("Hi Bo.")
        served.client(**{"X-Hermes-User": "bo"}).chat.completions.create(
            model="hermes-agent", messages=[{"role": "user", "content": "hello"}])
        assert {t["function"]["name"] for t in llm_server.requests[2].body["tools"]} >= {"whoami", "current_time"}
        served.stop()
    assert (home / "senders.txt").read_text().splitlines() == ["api_server:ada", "api_server:bo"]  # once a turn
    ada = hermes_json("sessions", "list", "--user", "ada")
    assert [row["user"] for row in ada] == ["ada"]
    assert "showing" not in hermes("sessions", "list", "--user", "nobody").stderr


def test_another_host_needs_a_key_and_a_named_key_needs_its_variable(home: Path, llm_server,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    llm_config(home, llm_server.url)
    monkeypatch.delenv("API_SERVER_KEY", raising=False)
    refused = hermes("serve", "--host", "0.0.0.0", "--port", "0", check=1).stderr
    assert "0.0.0.0 is not a loopback address; set API_SERVER_KEY" in refused
    llm_config(home, llm_server.url, "api_server:\n  keys:\n    ci:\n      key_env: CI_KEY\n")
    monkeypatch.delenv("CI_KEY", raising=False)
    assert "the environment variable CI_KEY is not set" in hermes("serve", "--port", "0", check=1).stderr


def test_runs_events_idempotency_and_a_restart(served: Serve, llm_server, home: Path) -> None:
    llm_server.reply("", tool_calls=[tool_call("current_time", {})]).reply("Run finished fine.")
    body = {"input": "do the thing"}
    status, started, headers = call(f"{served.url}/runs", body, headers={"Idempotency-Key": "job-1"})
    assert status == 202 and started["status"] == "started" and started["replayed"] is False
    run_id = started["run_id"]
    events = sse_events(f"{served.url}/runs/{run_id}/events")
    names = [data["event"] for _, data in events]
    assert names[0] == "tool.started" and names[-1] == "run.completed" and "message.delta" in names
    assert events[-1][1]["output"] == "Run finished fine."
    assert call(f"{served.url}/runs/{run_id}")[1]["status"] == "completed"
    replay = call(f"{served.url}/runs", body, headers={"Idempotency-Key": "job-1"})
    assert replay[:2] == (202, {"run_id": run_id, "status": "completed", "replayed": True})
    assert replay[2]["idempotency-replayed"] == "true"
    conflict = call(f"{served.url}/runs", {"input": "another thing"}, headers={"Idempotency-Key": "job-1"})
    assert conflict[0] == 409 and conflict[1]["error"]["code"] == "idempotency_key_conflict"
    llm_server.reply("Kept.")
    response = served.client().responses.create(model="hermes-agent", input="keep me")
    assert served.stop() == 0

    with Serve() as again:
        assert call(f"{again.url}/runs/{run_id}")[1]["status"] == "completed"
        assert [d["event"] for _, d in sse_events(f"{again.url}/runs/{run_id}/events")] == names
        assert call(f"{again.url}/runs", body, headers={"Idempotency-Key": "job-1"})[1]["replayed"] is True
        assert again.client().responses.retrieve(response.id).output_text == "Kept."
        status, deleted, _ = call(f"{again.url}/responses/{response.id}", method="DELETE")
        assert (status, deleted["deleted"]) == (200, True)
        assert call(f"{again.url}/responses/{response.id}")[0] == 404
    assert len(llm_server.requests) == 3  # the replayed run never ran again


def test_the_concurrency_cap_answers_429_and_a_client_that_leaves_stops_its_turn(
        home: Path, llm_server, monkeypatch: pytest.MonkeyPatch) -> None:
    make_folder_plugin(home / "plugins", "witness", WITNESS, "name: witness\n")
    llm_config(home, llm_server.url, PLUGINS + "api_server:\n  max_concurrent_runs: 1\n")
    monkeypatch.setenv("API_SERVER_KEY", KEY)
    held = threading.Event()
    llm_server.push(Reply("one two three four five six", hold=held, hold_after=2))
    with Serve() as served:
        stream = served.client().chat.completions.create(
            model="hermes-agent", messages=[{"role": "user", "content": "long answer"}], stream=True)
        chunks = iter(stream)
        seen = ""
        while "two" not in seen:
            chunk = next(chunks)
            seen += (chunk.choices[0].delta.content or "") if chunk.choices else ""
        status, body, headers = call(f"{served.url}/chat/completions",
                                     {"messages": [{"role": "user", "content": "me too"}]})
        assert (status, body["error"]["code"], headers["retry-after"]) == (429, "rate_limit_exceeded", "1")
        stream.close()  # the client goes away mid-answer, while the model still holds the rest
        llm_server.reply("Next one.")
        # The cap frees only once the server has stopped the broken-off turn: the model never finished it.
        answer = _retry_429(lambda: served.client().chat.completions.create(
            model="hermes-agent", messages=[{"role": "user", "content": "after"}]))
        held.set()
        assert answer.choices[0].message.content == "Next one."
        served.stop()
    shown = hermes_json("sessions", "show", _session_with(home, "long answer"))
    assert [m["role"] for m in shown["messages"]] == ["user"]  # the broken-off answer was not stored as said


def _retry_429(ask: Any, timeout: float = 30) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            return ask()
        except openai.RateLimitError:
            time.sleep(0.1)
    return ask()


def _session_with(home: Path, text: str) -> str:
    for row in hermes_json("sessions", "list"):
        if row["title"] == text:
            return str(row["id"])
    raise AssertionError(f"no session titled {text!r}")


def test_sessions_api_lists_reads_forks_and_chats(served: Serve, llm_server) -> None:
    llm_server.reply("First answer.")
    client = served.client(**{"X-Hermes-User": "cy"})
    client.chat.completions.create(model="hermes-agent", messages=[{"role": "user", "content": "first"}])
    status, listed, _ = call(f"{served.root}/api/sessions?user=cy")
    assert status == 200 and listed["object"] == "list" and len(listed["data"]) == 1
    session = listed["data"][0]
    assert (session["user_id"], session["source"], session["message_count"]) == ("cy", "api_server", 2)
    messages = call(f"{served.root}/api/sessions/{session['id']}/messages")[1]
    assert [m["content"] for m in messages["data"]] == ["first", "First answer."]
    status, forked, _ = call(f"{served.root}/api/sessions/{session['id']}/fork", {})
    assert status == 201 and forked["session"]["message_count"] == 2 and forked["session"]["id"] != session["id"]
    llm_server.reply("Second answer.")
    status, chatted, headers = call(f"{served.root}/api/sessions/{forked['session']['id']}/chat",
                                    {"message": "second"})
    assert (status, chatted["message"]["content"]) == (200, "Second answer.")
    assert [m["content"] for m in llm_server.requests[-1].messages[1:]] == ["first", "First answer.", "second"]
    assert call(f"{served.root}/api/sessions/nope")[0] == 404
    assert call(f"{served.root}/api/sessions?limit=x")[0] == 400
    assert call(f"{served.root}/api/sessions?limit=%C2%B2")[0] == 400  # "²" is a digit to str.isdigit, not to int
    beyond = call(f"{served.root}/api/sessions?offset={10**40}")  # past every row, and past SQLite's integers
    assert beyond[0] == 200 and beyond[1]["data"] == [] and beyond[1]["has_more"] is False


def test_a_chat_ui_resending_its_history_goes_on_in_one_session(served: Serve, llm_server) -> None:
    client = served.client()
    llm_server.reply("A1.").reply("A2.").reply("B2.").reply("A3.")
    turn1 = [{"role": "user", "content": "q1"}]
    client.chat.completions.create(model="hermes-agent", messages=turn1)
    turn2 = [*turn1, {"role": "assistant", "content": "A1."}, {"role": "user", "content": "q2"}]
    second = client.chat.completions.with_raw_response.create(model="hermes-agent", messages=turn2)
    edited = [*turn1, {"role": "assistant", "content": "edited"}, {"role": "user", "content": "q2"}]
    third = client.chat.completions.with_raw_response.create(model="hermes-agent", messages=edited)
    first_id = second.headers["x-hermes-session-id"]
    assert first_id.startswith("api-") and third.headers["x-hermes-session-id"] != first_id
    assert len(hermes_json("sessions", "show", first_id)["messages"]) == 4
    followed = client.chat.completions.with_raw_response.create(
        model="hermes-agent", messages=[{"role": "user", "content": "q3"}],
        extra_headers={"X-Hermes-Session-Id": first_id})
    assert followed.headers["x-hermes-session-id"] == first_id


def test_sigterm_lets_a_running_request_finish_and_exits_0(served: Serve, llm_server) -> None:
    llm_server.push(Reply("Slow but whole.", delay=1.0))
    result: list[Any] = []
    worker = threading.Thread(target=lambda: result.append(served.client().chat.completions.create(
        model="hermes-agent", messages=[{"role": "user", "content": "slow"}])))
    worker.start()
    until(lambda: len(llm_server.requests) == 1)  # the turn is running: the model has the request
    served.process.send_signal(signal.SIGTERM)
    worker.join(30)
    assert result and result[0].choices[0].message.content == "Slow but whole."
    assert served.process.wait(30) == 0


def test_a_key_budget_refuses_with_429(home: Path, llm_server, monkeypatch: pytest.MonkeyPatch) -> None:
    llm_config(home, llm_server.url, "api_server:\n  keys:\n    tiny:\n      key_env: TINY_KEY\n"
                                     "      budget:\n        requests_per_minute: 1\n        on_limit: refuse\n")
    monkeypatch.setenv("TINY_KEY", "tiny-key-0123456789")
    llm_server.always("ok")
    with Serve() as served:
        tiny = served.client("tiny-key-0123456789")
        assert tiny.chat.completions.create(model="hermes-agent", messages=[{"role": "user", "content": "a"}])
        with pytest.raises(openai.RateLimitError) as refused:
            tiny.chat.completions.create(model="hermes-agent", messages=[{"role": "user", "content": "b"}])
        error = refused.value.body
        assert isinstance(error, dict) and error["code"] == "budget_exceeded"
        assert "API key 'tiny'" in error["message"] and "api_server.keys.tiny.budget" in error["message"]


def test_the_gateway_serves_it_as_hermes_api_server_platform(home: Path, llm_server,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.helpers import free_port
    from tests.helpers.chat import GatewayProcess

    port = free_port()
    llm_config(home, llm_server.url, f"platforms:\n  api_server:\n    enabled: true\n    port: {port}\n")
    monkeypatch.delenv("API_SERVER_KEY", raising=False)
    llm_server.reply("From the gateway.")
    with GatewayProcess() as gateway:
        gateway.wait_for(r"^hermes: gateway: api_server: connected$")
        client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="none", max_retries=0)
        answer = client.chat.completions.create(model="hermes-agent", messages=[{"role": "user", "content": "hi"}])
        assert answer.choices[0].message.content == "From the gateway."
        assert gateway.stop() == 0
    with pytest.raises(OSError):  # stopped with the gateway
        socket.create_connection(("127.0.0.1", port), timeout=5).close()


def test_a_run_can_be_stopped_and_old_responses_give_way_to_new(home: Path, llm_server,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    llm_config(home, llm_server.url, "api_server:\n  max_stored: 3\n")
    monkeypatch.setenv("API_SERVER_KEY", KEY)
    held = threading.Event()
    llm_server.push(Reply("one two three four", hold=held, hold_after=1))
    with Serve() as served:
        run_id = call(f"{served.url}/runs", {"input": "long job"})[1]["run_id"]
        until(lambda: call(f"{served.url}/runs/{run_id}")[1].get("last_event") == "message.delta")
        assert call(f"{served.url}/runs/{run_id}/stop", {})[1] == {"run_id": run_id, "status": "stopping"}
        held.set()
        until(lambda: call(f"{served.url}/runs/{run_id}")[1]["status"] == "cancelled")
        assert [d["event"] for _, d in sse_events(f"{served.url}/runs/{run_id}/events")][-1] == "run.cancelled"
        llm_server.always("fine")
        client = served.client()
        ids = [client.responses.create(model="hermes-agent", input=f"n{i}").id for i in range(5)]
        kept = [call(f"{served.url}/responses/{rid}")[0] for rid in ids]
        assert kept == [404, 404, 200, 200, 200]  # the newest max_stored


def test_text_no_encoder_takes_still_reaches_the_caller_and_users_get_their_own_sessions(served: Serve,
                                                                                      llm_server) -> None:
    llm_server.reply("half \ud800 a pair").reply("half \ud800 a pair")
    client = served.client()
    answer = client.chat.completions.create(model="hermes-agent", messages=[{"role": "user", "content": "odd"}])
    assert answer.choices[0].message.content == "half \ud800 a pair"
    streamed = "".join(c.choices[0].delta.content or "" for c in client.chat.completions.create(
        model="hermes-agent", messages=[{"role": "user", "content": "odd again"}], stream=True) if c.choices)
    assert streamed == "half \ud800 a pair"
    llm_server.always("hello")
    sessions = {client.chat.completions.with_raw_response.create(
        model="hermes-agent", messages=[{"role": "user", "content": "hi"}],
        extra_headers={"X-Hermes-User": who}).headers["x-hermes-session-id"] for who in ("ann", "ben")}
    assert len(sessions) == 2  # the same first message from two callers: two conversations


def test_hermes_jobs_routes_manage_the_cron_jobs(served: Serve, home: Path) -> None:
    jobs = f"{served.root}/api/jobs"
    status, created, _ = call(jobs, {"name": "digest", "schedule": "every 2h", "prompt": "Summarise the inbox"})
    assert status == 200 and created["job"]["schedule"] == {"kind": "interval", "minutes": 120, "display": "every 120m"}
    job_id = created["job"]["id"]
    assert [j["id"] for j in call(jobs)[1]["jobs"]] == [job_id]
    assert call(f"{jobs}/{job_id}", {"prompt": "Summarise the inbox briefly"}, method="PATCH")[1]["job"]["prompt"] == \
        "Summarise the inbox briefly"
    assert call(f"{jobs}/{job_id}/pause", {})[1]["job"]["state"] == "paused"
    assert call(jobs)[1]["jobs"] == [] and len(call(f"{jobs}?include_disabled=true")[1]["jobs"]) == 1
    assert call(f"{jobs}/{job_id}/run", {})[1]["job"]["state"] == "scheduled"
    assert call(f"{jobs}/{job_id}", {"deliver": [None]}, method="PATCH")[1]["error"]["param"] == "deliver"
    assert call(jobs, {"name": "x", "schedule": "every 2h", "prompt": 7})[1]["error"]["param"] == "prompt"
    bad = call(jobs, {"name": "x", "schedule": "every fortnight"})
    assert bad[0] == 400 and bad[1]["error"]["param"] == "schedule"
    assert call(f"{jobs}/nothex", method="DELETE")[0] == 400 and call(f"{jobs}/0123456789ab")[0] == 404
    assert call(f"{jobs}/{job_id}", method="DELETE")[1] == {"ok": True}
    assert json.loads((home / "cron" / "jobs.json").read_text())["jobs"] == []
