"""Cancelled means cancelled on `hermes serve`: a client that goes away mid-stream and a run
stopped with `POST /v1/runs/{id}/stop` leave no broken-off answer stored as if it had been said,
and the stopped run ends `run.cancelled`. Also against a model server whose stream, broken off,
looks as if it had ended (no chunked framing: the body ends when the connection closes)."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from hermes_core.testing import Reply
from tests.helpers import hermes_json, llm_config
from tests.helpers.api_server import KEY, Serve, call, sse_events, until

ANSWER = "PIECE0 PIECE1 PIECE2 PIECE3 PIECE4"
FRAMINGS = pytest.mark.parametrize("streams", ["yes", "unframed"], ids=["chunked", "closed-at-end"])


def _said(home: Path, title: str) -> list[tuple[str, str]]:
    for row in hermes_json("sessions", "list"):
        if row["title"] == title:
            shown = hermes_json("sessions", "show", str(row["id"]))
            return [(m["role"], m["content"]) for m in shown["messages"]]
    raise AssertionError(f"no session titled {title!r}")


@FRAMINGS
def test_a_client_gone_mid_stream_leaves_no_half_answer_stored(home: Path, llm_server, streams: str,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    llm_server.streams = streams
    llm_config(home, llm_server.url)
    monkeypatch.setenv("API_SERVER_KEY", KEY)
    held = threading.Event()
    llm_server.push(Reply(ANSWER, hold=held, hold_after=3))
    try:
        with Serve() as served:
            stream = served.client().chat.completions.create(
                model="hermes-agent", messages=[{"role": "user", "content": "long answer"}], stream=True)
            seen = ""
            for chunk in stream:
                seen += (chunk.choices[0].delta.content or "") if chunk.choices else ""
                if "PIECE2" in seen:
                    break
            stream.close()  # the client goes away mid-answer, while the model still holds the rest
            llm_server.reply("Next one.")
            until(lambda: _turn_ended(served))
            served.stop()
    finally:
        held.set()
    assert _said(home, "long answer") == [("user", "long answer")]


def _turn_ended(served: Serve) -> bool:
    try:
        answer = served.client().chat.completions.create(model="hermes-agent",
                                                         messages=[{"role": "user", "content": "after"}])
    except Exception:  # noqa: BLE001 - 429 while the broken-off turn still holds its place
        return False
    return answer.choices[0].message.content == "Next one."


@FRAMINGS
def test_a_stopped_run_ends_cancelled_with_no_half_answer_stored(home: Path, llm_server, streams: str,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    llm_server.streams = streams
    llm_config(home, llm_server.url)
    monkeypatch.setenv("API_SERVER_KEY", KEY)
    held = threading.Event()
    llm_server.push(Reply(ANSWER, hold=held, hold_after=3))
    try:
        with Serve() as served:
            run_id = call(f"{served.url}/runs", {"input": "long job"})[1]["run_id"]
            until(lambda: call(f"{served.url}/runs/{run_id}")[1].get("last_event") == "message.delta")
            assert call(f"{served.url}/runs/{run_id}/stop", {})[1] == {"run_id": run_id, "status": "stopping"}
            until(lambda: call(f"{served.url}/runs/{run_id}")[1]["status"] not in ("running", "stopping"))
            status = call(f"{served.url}/runs/{run_id}")[1]
            events = [d["event"] for _, d in sse_events(f"{served.url}/runs/{run_id}/events")]
            served.stop()
    finally:
        held.set()
    assert status["status"] == "cancelled" and "output" not in status, status
    assert events[-1] == "run.cancelled" and "run.completed" not in events
    assert _said(home, "long job") == [("user", "long job")]



def test_a_client_gone_mid_responses_stream_leaves_no_half_answer_stored_nor_a_response(
        home: Path, llm_server, monkeypatch: pytest.MonkeyPatch) -> None:
    llm_config(home, llm_server.url)
    monkeypatch.setenv("API_SERVER_KEY", KEY)
    held = threading.Event()
    llm_server.push(Reply(ANSWER, hold=held, hold_after=3))
    try:
        with Serve() as served:
            stream = served.client().responses.create(model="hermes-agent", input="long response", stream=True)
            seen, response_id = "", ""
            for event in stream:
                response_id = response_id or getattr(getattr(event, "response", None), "id", "")
                seen += getattr(event, "delta", "") if event.type == "response.output_text.delta" else ""
                if "PIECE2" in seen:
                    break
            stream.close()
            llm_server.reply("Next one.")
            until(lambda: _turn_ended(served))
            assert call(f"{served.url}/responses/{response_id}")[0] == 404
            served.stop()
    finally:
        held.set()
    assert _said(home, "long response") == [("user", "long response")]
