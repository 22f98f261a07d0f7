"""`hermes serve` with several callers and the built-in memory: what one caller saved (with
`memory_save` or "remember that ...") is never sent to another caller's model requests, found by
their `memory_search` or deleted by their `memory_forget`; its own next turns have it. A named key
is a caller of its own, and the same `X-Hermes-User` through another key is someone else. The
CLI (one home, one user) keeps the home's own memories and sees none of the callers'."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from hermes_core.testing import tool_call
from tests.helpers import hermes, llm_config
from tests.helpers.api_server import KEY, Serve

TEAM_KEY = "team-key-0123456789abcdef"
LOCKER = "Alice's locker code is 4417"


def _sent(request: Any) -> str:
    """Everything one model request was sent (the system prompt, the messages, the tools' results)."""
    return json.dumps(request.messages, ensure_ascii=False)


def _ask(client: Any, text: str) -> str:
    answer = client.chat.completions.create(model="hermes-agent", messages=[{"role": "user", "content": text}])
    return str(answer.choices[0].message.content)


@pytest.fixture
def served(home: Path, llm_server, monkeypatch: pytest.MonkeyPatch):
    llm_config(home, llm_server.url, "api_server:\n  keys:\n    team:\n      key_env: TEAM_KEY\n"
                                     "      endpoints: [chat]\n")
    monkeypatch.setenv("API_SERVER_KEY", KEY)
    monkeypatch.setenv("TEAM_KEY", TEAM_KEY)
    with Serve() as server:
        yield server


def test_what_alice_asked_to_remember_reaches_only_alices_turns(served: Serve, llm_server, home: Path) -> None:
    alice, bob = served.client(**{"X-Hermes-User": "alice"}), served.client(**{"X-Hermes-User": "bob"})

    llm_server.reply("", tool_calls=[tool_call("memory_save", {"content": LOCKER})]).reply("Saved.")
    assert _ask(alice, "Remember that my badge number is 5512. Also save my locker code, 4417.") == "Saved."
    saved = json.loads(llm_server.requests[1].messages[-1]["content"])
    assert saved["saved"] is True

    llm_server.reply("", tool_calls=[tool_call("memory_search", {"query": "locker code badge number"}, "c1"),
                                     tool_call("memory_forget", {"id": saved["id"]}, "c2")]).reply("I don't know.")
    assert _ask(bob, "What are my locker code and badge number?") == "I don't know."
    first, second = llm_server.requests[2:4]
    assert "4417" not in _sent(first) and "5512" not in _sent(first)
    assert "Possibly relevant memories" not in _sent(first) and "Nothing is saved yet." in first.messages[0]["content"]
    results = {m["tool_call_id"]: json.loads(m["content"]) for m in second.messages if m["role"] == "tool"}
    assert results["c1"] == {"results": [], "count": 0}
    assert results["c2"] == {"error": f"memory_forget: there is no memory with id {saved['id']}"}

    for client in (served.client(TEAM_KEY, **{"X-Hermes-User": "alice"}), served.client(TEAM_KEY)):
        llm_server.reply("No idea.")
        assert _ask(client, "What are my locker code and badge number?") == "No idea."
        assert "4417" not in _sent(llm_server.requests[-1]) and "5512" not in _sent(llm_server.requests[-1])

    llm_server.reply("4417 and 5512.")
    assert _ask(alice, "What are my locker code and badge number?") == "4417 and 5512."
    sent = llm_server.requests[-1].messages
    assert LOCKER in sent[0]["content"] and "my badge number is 5512" in sent[0]["content"]  # the digest
    assert "Possibly relevant memories:" in sent[-1]["content"] and LOCKER in sent[-1]["content"]
    served.stop()

    llm_server.reply("No idea.")
    hermes("run", "What are my locker code and badge number?")
    assert "4417" not in _sent(llm_server.requests[-1]) and "5512" not in _sent(llm_server.requests[-1])


def test_a_named_keys_callers_keep_their_own_memories(served: Serve, llm_server) -> None:
    team = served.client(TEAM_KEY)
    llm_server.reply("", tool_calls=[tool_call("memory_save", {"content": "The team's deploy day is Tuesday"})])
    llm_server.reply("Saved.")
    _ask(team, "Save that our deploy day is Tuesday.")

    for client in (served.client(), served.client(TEAM_KEY, **{"X-Hermes-User": "carol"})):
        llm_server.reply("No idea.")
        _ask(client, "Which day is the deploy day?")
        assert "Tuesday" not in _sent(llm_server.requests[-1])

    llm_server.reply("Tuesday.")
    _ask(team, "Which day is the deploy day?")
    assert "The team's deploy day is Tuesday" in _sent(llm_server.requests[-1])


def test_memory_per_caller_false_gives_every_caller_the_homes_memory(home: Path, llm_server,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    llm_config(home, llm_server.url, "memory:\n  per_caller: false\n")
    monkeypatch.setenv("API_SERVER_KEY", KEY)
    with Serve() as served:
        llm_server.reply("", tool_calls=[tool_call("memory_save", {"content": LOCKER})]).reply("Saved.")
        _ask(served.client(**{"X-Hermes-User": "alice"}), "Save my locker code, 4417.")
        llm_server.reply("4417.")
        _ask(served.client(**{"X-Hermes-User": "bob"}), "What is the locker code?")
        assert LOCKER in llm_server.requests[-1].messages[0]["content"]
    llm_server.reply("4417.")
    hermes("run", "What is the locker code?")
    assert LOCKER in llm_server.requests[-1].messages[0]["content"]
