"""The session store's writes: each one committed at once, or the writes of one step of the
agent's loop committed together, and nothing committed lost when the process dies."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from hermes_core import MemoryStoreError
from hermes_core.agent import SessionStore


def roles(home: Path, session_id: str = "s") -> list[str]:
    """What another process would read now."""
    shown = SessionStore(home).show(session_id)
    return [] if shown is None else [m["role"] for m in shown["messages"]]


def test_a_message_appended_outside_a_step_is_committed_at_once(home: Path) -> None:
    store = SessionStore(home)
    store.start("s", "m")
    assert store.append("s", {"role": "user", "content": "hello"}) == 1
    assert roles(home) == ["user"]


def test_the_writes_of_a_step_are_committed_together_when_it_ends(home: Path) -> None:
    store = SessionStore(home)
    store.start("s", "m")
    store.append("s", {"role": "user", "content": "what time is it?"})
    with store.step():
        store.usage("s", "p", "m", 100, 5, 0.01)
        assert store.append("s", {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "now", "arguments": "{}"}}]}) == 2
        assert store.append("s", {"role": "tool", "tool_call_id": "c1", "content": "noon"}) == 3
        store.tool_call("s", "c1", "now", "{}", "noon")
        assert roles(home) == ["user"]  # not yet
    shown = SessionStore(home).show("s")
    assert shown is not None
    assert [m["role"] for m in shown["messages"]] == ["user", "assistant", "tool"]
    assert shown["tool_calls"][0]["call_id"] == "c1" and shown["usage"][0]["input_tokens"] == 100
    assert shown["title"] == "what time is it?" and shown["updated"] >= shown["created"]


def test_a_step_that_ends_with_an_exception_keeps_what_it_wrote(home: Path) -> None:
    store = SessionStore(home)
    store.start("s", "m")
    with pytest.raises(KeyboardInterrupt), store.step():
        store.append("s", {"role": "user", "content": "hello"})
        raise KeyboardInterrupt
    assert roles(home) == ["user"]


def test_a_read_inside_a_step_sees_the_steps_writes(home: Path) -> None:
    store = SessionStore(home)
    store.start("s", "m")
    with store.step():
        store.append("s", {"role": "user", "content": "hello"})
        assert store.window("s") == [{"role": "user", "content": "hello"}]
        store.append("s", {"role": "assistant", "content": "hi"})
    assert roles(home) == ["user", "assistant"]


def test_two_stores_appending_to_one_session_number_every_message(home: Path) -> None:
    first, second = SessionStore(home), SessionStore(home)
    first.start("s", "m")
    assert first.append("s", {"role": "user", "content": "1"}) == 1
    assert second.append("s", {"role": "assistant", "content": "2"}) == 2
    assert first.append("s", {"role": "user", "content": "3"}) == 3  # not 2: the other store wrote 2
    with second.step():
        second.append("s", {"role": "assistant", "content": "4"})
        first.append("s", {"role": "user", "content": "5"})
    shown = SessionStore(home).show("s")
    assert shown is not None
    assert sorted(m["content"] for m in shown["messages"]) == ["1", "2", "3", "4", "5"]
    assert second.append("s", {"role": "assistant", "content": "6"}) == 6


def test_a_failed_step_writes_nothing_and_the_next_message_follows_the_last_stored(home: Path) -> None:
    store = SessionStore(home)
    store.start("s", "m")
    store.append("s", {"role": "user", "content": "1"})
    with pytest.raises(MemoryStoreError), store.step():
        store.append("s", {"role": "assistant", "content": "lost"})
        store.tool_call("s", "c1", "now", "{}", None)  # type: ignore[arg-type]  # NOT NULL: the step rolls back
    assert roles(home) == ["user"]
    assert store.append("s", {"role": "assistant", "content": "2"}) == 2


CRASH = """
import os, signal, sys
from pathlib import Path
from hermes_core.agent import SessionStore

store = SessionStore(Path(sys.argv[1]))
store.start("s", "m")
store.append("s", {"role": "user", "content": "question"})
with store.step():
    store.append("s", {"role": "assistant", "content": "answer"})
with store.step():
    store.append("s", {"role": "assistant", "content": "never committed"})
    os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_killed_process_keeps_every_committed_step(home: Path) -> None:
    run = subprocess.run([sys.executable, "-c", textwrap.dedent(CRASH), str(home)], capture_output=True)
    assert run.returncode == -9, run.stderr
    shown = SessionStore(home).show("s")
    assert shown is not None
    assert [m["content"] for m in shown["messages"]] == ["question", "answer"]


def test_the_session_written_to_last_is_listed_first_with_its_last_messages_time(home: Path) -> None:
    store = SessionStore(home)
    store.start("older", "m")
    store.start("newer", "m")
    store.append("newer", {"role": "user", "content": "hi"})
    store.append("older", {"role": "user", "content": "back again"})
    listed = store.sessions()
    assert [s["id"] for s in listed] == ["older", "newer"]
    shown = store.show("older")
    assert shown is not None and shown["updated"] == listed[0]["updated"] >= shown["created"]
