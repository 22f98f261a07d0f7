"""`hermes serve` given what a careless or hostile client sends: a body too large without a
declared length, a job whose schedule never comes or lies beyond any date, a `deliver` that is no
target, and a second SIGTERM while an answer streams. Each is answered in words (an OpenAI error
object naming the field), never a 500 or a traceback."""

from __future__ import annotations

import json
import signal
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hermes_core.testing import Reply
from tests.helpers import llm_config
from tests.helpers.api_server import KEY, Serve, call, until


@pytest.fixture
def served(home: Path, llm_server, monkeypatch: pytest.MonkeyPatch) -> Iterator[Serve]:
    llm_config(home, llm_server.url)
    monkeypatch.setenv("API_SERVER_KEY", KEY)
    with Serve() as server:
        yield server


def _chunked(port: int, path: str, size: int) -> tuple[int, Any]:
    """A POST of `size` bytes in chunks of 64 KiB, with no Content-Length: its status and JSON body."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(b"POST %b HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nConnection: close\r\n"
                     b"Content-Type: application/json\r\nAuthorization: Bearer %b\r\n"
                     b"Transfer-Encoding: chunked\r\n\r\n" % (path.encode(), port, KEY.encode()))
        piece = b"x" * 65536
        try:
            for _ in range(size // len(piece)):
                sock.sendall(b"%x\r\n%b\r\n" % (len(piece), piece))
            sock.sendall(b"0\r\n\r\n")
        except OSError:  # the server answered and closed before reading it all
            pass
        answer = b""
        try:
            while chunk := sock.recv(65536):
                answer += chunk
        except ConnectionResetError:
            pass
    head, _, body = answer.partition(b"\r\n\r\n")
    return int(head.split()[1]), json.loads(body)


def test_a_chunked_body_too_large_is_a_413_like_a_declared_one(served: Serve, llm_server) -> None:
    port = int(served.root.rsplit(":", 1)[1])
    for path in ("/v1/chat/completions", "/api/jobs"):
        status, body = _chunked(port, path, 5 * 1024 * 1024)
        assert status == 413, (path, status, body)
        assert "larger than" in body["error"]["message"] and body["error"]["code"] == "body_too_large"
    assert call(f"{served.root}/health", key=None)[0] == 200  # and it goes on serving
    assert llm_server.requests == []
    assert not [line for line in served.lines if "Traceback" in line or "internal error" in line], served.lines


def test_a_job_whose_schedule_never_comes_or_cannot_be_dated_is_a_400_naming_it(served: Serve) -> None:
    jobs = f"{served.root}/api/jobs"
    for schedule in ("0 0 31 2 *", "in 99999999999m", "every 99999999999m"):
        status, body, _ = call(jobs, {"name": "x", "schedule": schedule, "prompt": "p"})
        assert status == 400, (schedule, status, body)
        assert body["error"]["param"] == "schedule" and schedule in body["error"]["message"], body
        assert "internal error" not in body["error"]["message"], body
    made = call(jobs, {"name": "ok", "schedule": "every 1h", "prompt": "p"})[1]["job"]["id"]
    status, body, _ = call(f"{jobs}/{made}", {"schedule": "0 0 31 2 *"}, method="PATCH")
    assert (status, body["error"]["param"]) == (400, "schedule") and "0 0 31 2 *" in body["error"]["message"]
    assert call(f"{jobs}/{made}")[1]["job"]["schedule"]["minutes"] == 60  # unchanged
    assert not [line for line in served.lines if "Traceback" in line], served.lines


@pytest.mark.parametrize("clock", ["inf", "-1e300", "9999-12-31T23:59"])
def test_a_bad_cron_clock_is_a_500_naming_the_variable(home: Path, llm_server, monkeypatch: pytest.MonkeyPatch,
                                                        clock: str) -> None:
    llm_config(home, llm_server.url)
    monkeypatch.setenv("API_SERVER_KEY", KEY)
    monkeypatch.setenv("HERMES_CRON_NOW", clock)
    with Serve() as served:
        status, body, _ = call(f"{served.root}/api/jobs", {"name": "x", "schedule": "every 1h", "prompt": "p"})
        assert status == 500 and "HERMES_CRON_NOW" in body["error"]["message"], body
        assert "internal error" not in body["error"]["message"]
        assert not [line for line in served.lines if "Traceback" in line], served.lines


@pytest.mark.parametrize("deliver", [7, ["telegram"], {"to": "x"}, True, "telegram:", ":123", "a b"])
def test_deliver_must_be_targets_in_words(served: Serve, deliver: Any) -> None:
    jobs = f"{served.root}/api/jobs"
    status, body, _ = call(jobs, {"name": "x", "schedule": "every 1h", "prompt": "p", "deliver": deliver})
    assert (status, body["error"]["param"]) == (400, "deliver"), body
    if isinstance(deliver, str):  # a string that names no target: what one looks like
        assert "local" in body["error"]["message"] and "origin" in body["error"]["message"]
    made = call(jobs, {"name": "ok", "schedule": "every 1h", "prompt": "p", "deliver": "telegram:42,local"})
    assert made[0] == 200 and made[1]["job"]["deliver"] == "telegram:42,local"
    status, body, _ = call(f"{jobs}/{made[1]['job']['id']}", {"deliver": deliver}, method="PATCH")
    assert (status, body["error"]["param"]) == (400, "deliver"), body


def test_a_second_sigterm_mid_stream_stops_at_once_without_a_traceback(served: Serve, llm_server) -> None:
    held = threading.Event()
    llm_server.push(Reply("one two three four", hold=held, hold_after=1))
    seen: list[str] = []

    def read() -> None:
        try:
            for chunk in served.client().chat.completions.create(
                    model="hermes-agent", messages=[{"role": "user", "content": "long"}], stream=True):
                seen.append((chunk.choices[0].delta.content or "") if chunk.choices else "")
        except Exception:  # noqa: BLE001 - the server went away mid-answer: expected here
            seen.append("<broken>")

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    until(lambda: "one" in "".join(seen))
    served.process.send_signal(signal.SIGTERM)
    until(lambda: served.process.poll() is not None or _waiting(served), timeout=10)
    served.process.send_signal(signal.SIGTERM)
    try:
        assert served.process.wait(30) == 0
    finally:
        held.set()
    reader.join(30)
    served.kill()
    shown = "\n".join(served.lines)
    assert "Traceback" not in shown and "CancelledError" not in shown, shown


def _waiting(served: Serve) -> bool:
    """Whether the first signal has been taken (uvicorn stops listening, waiting for the stream)."""
    port = int(served.root.rsplit(":", 1)[1])
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except OSError:
        return True
    return False


HALF = "\\ud800"  # an escaped lone surrogate, as JSON allows and json.loads reads


@pytest.mark.parametrize(("path", "body"), [
    ("/v1/responses", '{"input": "hi", "instructions": "be brief %s"}'),
    ("/v1/responses", '{"input": "hi", "conversation": "talk %s"}'),
    ("/v1/responses", '{"input": "hi", "metadata": {"tag %s": "v %s"}}'),
    ("/v1/responses", '{"input": "hi", "previous_response_id": "resp_%s"}'),
    ("/v1/runs", '{"input": "hi", "session_id": "s%s"}'),
    ("/v1/chat/completions", '{"messages": [{"role": "user", "name": "ann %s", "content": "hi %s"}]}'),
    ("/api/jobs", '{"name": "n %s", "schedule": "every 1h", "prompt": "p %s"}'),
])
def test_a_lone_surrogate_in_any_field_of_a_body_is_read_as_a_replacement_character(
        served: Serve, llm_server, path: str, body: str) -> None:
    llm_server.reply("ok")
    status, answer, _ = call(f"{served.root}{path}", raw=(body % ((HALF,) * body.count("%s"))).encode())
    assert status in (200, 202, 400, 404), (status, answer)
    assert "internal error" not in json.dumps(answer) and "\\ud800" not in json.dumps(answer), answer
    assert not [line for line in served.lines if "Traceback" in line or "UnicodeEncodeError" in line], served.lines
    if path == "/api/jobs":
        assert answer["job"]["name"] == "n \ufffd" and answer["job"]["prompt"] == "p \ufffd"


@pytest.mark.parametrize("repeat", [1e400, True, 2.5, "x", {"times": 2}, [3]])
def test_a_repeat_that_is_no_number_of_runs_is_a_400_naming_it(served: Serve, repeat: Any) -> None:
    jobs = f"{served.root}/api/jobs"
    raw = json.dumps({"name": "x", "schedule": "every 1h", "prompt": "p", "repeat": repeat}).replace("Infinity", "1e400")
    status, body, _ = call(jobs, raw=raw.encode())
    assert (status, body["error"]["param"]) == (400, "repeat"), body
    assert "repeat" in body["error"]["message"] and "internal error" not in body["error"]["message"], body
    made = call(jobs, {"name": "ok", "schedule": "every 1h", "prompt": "p", "repeat": 3})
    assert made[0] == 200 and made[1]["job"]["repeat"]["times"] == 3
    edit = json.dumps({"repeat": repeat}).replace("Infinity", "1e400")
    status, body, _ = call(f"{jobs}/{made[1]['job']['id']}", raw=edit.encode(), method="PATCH")
    assert (status, body["error"]["param"]) == (400, "repeat"), body


def test_a_path_or_a_method_the_server_does_not_have_is_an_openai_error_in_json(served: Serve) -> None:
    for path, method, status in (("/v1/nope", "GET", 404), ("/v1/responses/resp_x/input_items", "GET", 404),
                                 ("/v1/chat/completions", "GET", 405), ("/api/sessions", "DELETE", 405)):
        got, body, headers = call(f"{served.root}{path}", method=method)
        assert got == status and headers["content-type"] == "application/json", (path, got, headers)
        assert path in body["error"]["message"] and body["error"]["type"] == "invalid_request_error", body
        if status == 405:
            assert method not in headers["allow"] and method not in body["error"]["message"].split("takes")[-1]


@pytest.mark.parametrize("enabled", ["false", 0, "no", {"value": False}])
def test_enabled_must_be_true_or_false_not_a_word_that_is_ignored(served: Serve, enabled: Any) -> None:
    jobs = f"{served.root}/api/jobs"
    made = call(jobs, {"name": "ok", "schedule": "every 1h", "prompt": "p"})[1]["job"]["id"]
    status, body, _ = call(f"{jobs}/{made}", {"enabled": enabled}, method="PATCH")
    assert (status, body["error"]["param"]) == (400, "enabled"), body
    assert call(f"{jobs}/{made}")[1]["job"]["enabled"] is True
    assert call(f"{jobs}/{made}", {"enabled": False}, method="PATCH")[1]["job"]["enabled"] is False
