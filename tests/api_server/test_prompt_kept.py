"""A conversation's system prompt through `hermes serve`: built when the conversation starts, kept
with its session, and sent byte for byte by every request that continues it (a chat client
re-sending its history, `X-Hermes-Session-Id`, `previous_response_id`, a named `conversation`),
though SOUL.md and the memory files change in between; a new conversation reads the files again."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import llm_config
from tests.helpers.api_server import KEY, Serve


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def system_of(request: object) -> str:
    messages = request.messages  # type: ignore[attr-defined]
    assert messages[0]["role"] == "system"
    return str(messages[0]["content"])


@pytest.fixture
def served(home: Path, llm_server, monkeypatch: pytest.MonkeyPatch) -> Iterator[Serve]:
    llm_config(home, llm_server.url)
    monkeypatch.setenv("API_SERVER_KEY", KEY)
    write(home / "SOUL.md", "You are Quill.")
    write(home / "memories" / "MEMORY.md", "The CI runs on Fridays.")
    with Serve() as server:
        yield server


def change_the_files(home: Path) -> None:
    write(home / "SOUL.md", "You are Nib.")
    write(home / "memories" / "MEMORY.md", "The CI runs on Mondays.")


def test_a_chat_client_resending_its_history_gets_the_same_system_prompt(served: Serve, llm_server,
                                                                        home: Path) -> None:
    client = served.client()
    llm_server.reply("Hello.").reply("Still me.").reply("A new one.")
    history = [{"role": "system", "content": "Be terse."}, {"role": "user", "content": "hi"}]
    first = client.chat.completions.create(model="hermes-agent", messages=history)
    change_the_files(home)
    history += [{"role": "assistant", "content": first.choices[0].message.content}, {"role": "user", "content": "again"}]
    client.chat.completions.create(model="hermes-agent", messages=history)
    one, two = (system_of(request) for request in llm_server.requests[:2])
    assert one == two and one.startswith("You are Quill.\n\nBe terse.") and "Fridays" in one
    assert [m["content"] for m in llm_server.requests[1].messages[1:]] == ["hi", "Hello.", "again"]
    client.chat.completions.create(model="hermes-agent", messages=[{"role": "user", "content": "hello"}])
    fresh = system_of(llm_server.requests[2])
    assert fresh.startswith("You are Nib.") and "Mondays" in fresh and "Fridays" not in fresh


def test_a_session_id_and_a_previous_response_continue_with_the_kept_prompt(served: Serve, llm_server,
                                                                           home: Path) -> None:
    client = served.client()
    llm_server.always("ok")
    first = client.chat.completions.with_raw_response.create(
        model="hermes-agent", messages=[{"role": "user", "content": "start"}])
    session = first.headers["X-Hermes-Session-Id"]
    answer = client.responses.create(model="hermes-agent", input="colour is blue")
    client.responses.create(model="hermes-agent", input="name?", conversation="talk")
    change_the_files(home)
    client.chat.completions.create(model="hermes-agent", messages=[{"role": "user", "content": "more"}],
                                   extra_headers={"X-Hermes-Session-Id": session})
    client.responses.create(model="hermes-agent", input="what colour?", previous_response_id=answer.id)
    client.responses.create(model="hermes-agent", input="and?", conversation="talk")
    systems = [system_of(request) for request in llm_server.requests]
    assert systems[3] == systems[0] and systems[4] == systems[1] and systems[5] == systems[2]
    assert all(s.startswith("You are Quill.") and "Fridays" in s for s in systems)
    client.responses.create(model="hermes-agent", input="new")
    assert system_of(llm_server.requests[-1]).startswith("You are Nib.")


def test_the_callers_instructions_are_the_requests_own_in_the_kept_prompt(served: Serve, llm_server,
                                                                         home: Path) -> None:
    client = served.client()
    llm_server.always("ok")
    first = client.chat.completions.with_raw_response.create(
        model="hermes-agent", messages=[{"role": "system", "content": "Be terse."}, {"role": "user", "content": "a"}])
    session = first.headers["X-Hermes-Session-Id"]
    change_the_files(home)
    client.chat.completions.create(model="hermes-agent", extra_headers={"X-Hermes-Session-Id": session}, messages=[
        {"role": "system", "content": "Be verbose."}, {"role": "user", "content": "b"}])
    one, two = (system_of(request) for request in llm_server.requests)
    assert one.replace("Be terse.", "Be verbose.") == two and "You are Quill." in two
