"""`X-Hermes-Session-Key` on `hermes serve`, as Hermes' API server takes it: a client says who or
what it is (`webui:user-42`); the memory provider's `initialize` gets it as `gateway_session_key`,
the answer echoes it (also a streamed one), `/v1/capabilities` names the header. It selects no
session: what a key reaches stays that key's. A value of more than one line or 256 characters is
a 400 naming the header; an open server (no keys) refuses it with a 403, as Hermes does."""

from __future__ import annotations

from pathlib import Path

import openai
import pytest

from tests.helpers import llm_config
from tests.helpers.api_server import KEY, Serve, call, until
from tests.helpers.keyed_memory import SELECT, initialized, install

WHO = "agent:main:reachy-mini:robot-123"


@pytest.fixture
def served(home: Path, llm_server, monkeypatch: pytest.MonkeyPatch):
    install(home)
    llm_config(home, llm_server.url, SELECT)
    monkeypatch.setenv("API_SERVER_KEY", KEY)
    with Serve() as server:
        yield server


def test_the_memory_provider_is_told_who_the_client_is(served: Serve, llm_server, home: Path) -> None:
    client = served.client()
    llm_server.reply("Hello robot.")
    raw = client.chat.completions.with_raw_response.create(
        model="hermes-agent", messages=[{"role": "user", "content": "Hi"}], extra_headers={"X-Hermes-Session-Key": WHO})
    assert raw.parse().choices[0].message.content == "Hello robot."
    assert raw.headers["x-hermes-session-key"] == WHO
    first = initialized(home)[-1]
    assert first["gateway_session_key"] == WHO and first["session_id"] == raw.headers["x-hermes-session-id"]
    assert first["chat_id"] == first["session_id"] and first["chat_type"] == "dm"  # as Hermes' API server says
    assert first["platform"] == "api_server" and first["agent_context"] == "primary"

    llm_server.reply("Streamed.")
    with client.chat.completions.with_streaming_response.create(
            model="hermes-agent", messages=[{"role": "user", "content": "Stream"}], stream=True,
            extra_headers={"X-Hermes-Session-Key": "webui:user-42"}) as streamed:
        assert streamed.headers["x-hermes-session-key"] == "webui:user-42"
        assert "Streamed." in "".join(streamed.iter_lines())
    assert initialized(home)[-1]["gateway_session_key"] == "webui:user-42"

    llm_server.reply("No key.")
    plain = client.chat.completions.with_raw_response.create(
        model="hermes-agent", messages=[{"role": "user", "content": "Who am I?"}])
    assert "x-hermes-session-key" not in plain.headers
    assert "gateway_session_key" not in initialized(home)[-1]  # nothing said: nothing handed on

    caps = call(served.url + "/capabilities")[1]
    assert caps["features"]["session_key_header"] == "X-Hermes-Session-Key"


def test_a_run_hands_it_on_and_echoes_it(served: Serve, llm_server, home: Path) -> None:
    llm_server.reply("Ran.")
    status, body, headers = call(served.url + "/runs", {"input": "Go"}, headers={"X-Hermes-Session-Key": WHO})
    assert status == 202 and {k.lower(): v for k, v in headers.items()}["x-hermes-session-key"] == WHO
    until(lambda: call(f"{served.url}/runs/{body['run_id']}")[1]["status"] == "completed")
    assert initialized(home)[-1]["gateway_session_key"] == WHO


def test_a_bad_value_is_a_400_naming_the_header(served: Serve, llm_server, home: Path) -> None:
    client = served.client()
    for bad, said in (("a" * 257, "longer than 256"), ("tab\there", "control character")):
        with pytest.raises(openai.BadRequestError) as refused:
            client.chat.completions.create(model="hermes-agent", messages=[{"role": "user", "content": "Hi"}],
                                           extra_headers={"X-Hermes-Session-Key": bad})
        assert "X-Hermes-Session-Key" in str(refused.value) and said in str(refused.value)
        status, body, _ = call(served.url + "/runs", {"input": "Go"}, headers={"X-Hermes-Session-Key": bad})
        assert status == 400 and "X-Hermes-Session-Key" in body["error"]["message"]
    assert llm_server.requests == [] and initialized(home) == []


def test_it_reaches_no_other_keys_session(home: Path, llm_server, monkeypatch: pytest.MonkeyPatch) -> None:
    install(home)
    llm_config(home, llm_server.url, SELECT + "api_server:\n  keys:\n    team:\n      key_env: TEAM_KEY\n")
    monkeypatch.setenv("API_SERVER_KEY", KEY)
    monkeypatch.setenv("TEAM_KEY", "team-key-0123456789abcdef")
    with Serve() as served:
        llm_server.reply("Mine.")
        mine = served.client().chat.completions.with_raw_response.create(
            model="hermes-agent", messages=[{"role": "user", "content": "Hi"}],
            extra_headers={"X-Hermes-Session-Key": WHO})
        llm_server.reply("Theirs.")
        theirs = served.client("team-key-0123456789abcdef").chat.completions.with_raw_response.create(
            model="hermes-agent", messages=[{"role": "user", "content": "Hi"}],
            extra_headers={"X-Hermes-Session-Key": WHO})
        assert mine.headers["x-hermes-session-id"] != theirs.headers["x-hermes-session-id"]
        assert len(llm_server.requests[1].messages) == len(llm_server.requests[0].messages)  # no history of the other's


def test_an_open_server_refuses_it(home: Path, llm_server) -> None:
    install(home)
    llm_config(home, llm_server.url, SELECT)
    with Serve() as served:
        status, body, _ = call(served.url + "/chat/completions", {"model": "hermes-agent", "messages": [
            {"role": "user", "content": "Hi"}]}, key=None, headers={"X-Hermes-Session-Key": WHO})
        assert status == 403 and "X-Hermes-Session-Key requires API key authentication" in body["error"]["message"]
        assert llm_server.requests == []
