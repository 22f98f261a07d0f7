"""Sessions shared by two machines: two HERMES_HOMEs naming one database (HERMES_STATE_URL), each
running `hermes` as a user would. A session made on one is listed, found, shown and resumed on
the other."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import hermes, llm_config


@pytest.fixture
def machines(tmp_path: Path, pg_url: str, llm_server: Any, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """Two homes, both configured with the scripted model and the shared database."""
    homes = {name: tmp_path / name for name in ("one", "two")}
    for home in homes.values():
        home.mkdir()
        llm_config(home, llm_server.url)
    monkeypatch.setenv("HERMES_STATE_URL", pg_url)
    monkeypatch.chdir(tmp_path)
    return homes


def on(monkeypatch: pytest.MonkeyPatch, home: Path, *args: str, **options: Any) -> Any:
    monkeypatch.setenv("HERMES_HOME", str(home))
    return hermes(*args, **options)


def test_a_session_made_on_one_machine_is_listed_found_shown_and_resumed_on_another(
        machines: dict[str, Path], llm_server: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    one, two = machines["one"], machines["two"]
    llm_server.reply("Elephants are large.").reply("Tea is a drink.")
    assert on(monkeypatch, one, "run", "tell me about purple elephants").stdout.strip() == "Elephants are large."
    assert on(monkeypatch, two, "run", "and what is tea?").stdout.strip() == "Tea is a drink."
    assert not (one / "sessions.db").exists() and not (two / "sessions.db").exists()

    listed = json.loads(on(monkeypatch, two, "sessions", "list", "--json").stdout)
    assert [s["title"] for s in listed] == ["and what is tea?", "tell me about purple elephants"]
    first = listed[1]["id"]
    assert json.loads(on(monkeypatch, one, "sessions", "list", "--json").stdout) == listed

    hits = json.loads(on(monkeypatch, two, "sessions", "search", "elephant", "--json").stdout)
    assert {(h["session_id"], h["seq"]) for h in hits} == {(first, 1), (first, 2)}
    assert all("[elephants]" in h["snippet"].lower() for h in hits)
    cut = on(monkeypatch, one, "sessions", "search", "elephant", "-n", "1")
    assert first in cut.stdout and "showing 1 of 2 matches" in cut.stderr
    shown = json.loads(on(monkeypatch, two, "sessions", "show", first, "--json").stdout)
    assert [m["content"] for m in shown["messages"]] == ["tell me about purple elephants", "Elephants are large."]

    llm_server.reply("They are grey, mostly.")
    chat = on(monkeypatch, two, "chat", "--resume", first, input="what colour are they really?\n/exit\n")
    assert "They are grey, mostly." in chat.stdout
    sent = [m["content"] for m in llm_server.requests[-1].body["messages"][1:]]
    assert sent == ["tell me about purple elephants", "Elephants are large.", "what colour are they really?"]
    again = json.loads(on(monkeypatch, one, "sessions", "show", first, "--json").stdout)
    assert len(again["messages"]) == 4 and again["messages"][-1]["content"] == "They are grey, mostly."

    status = json.loads(on(monkeypatch, one, "state", "status", "--json").stdout)
    assert status["backend"] == "postgresql" and "***" in status["location"]
    assert {s["stage"]: s["state"] for s in status["stages"]}["sessions"] == "current"
