"""One random sequence of session-store operations applied to a SQLite store and a PostgreSQL
store side by side: after every step, everything either can be asked (numbers, windows, shown
sessions, listings, counts, the messages a search finds) is the same on both."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, initialize, invariant, rule, run_state_machine_as_test

import hermes_core.agent.store as store_module
from hermes_core.agent import SessionStore

# Words whose stems Porter's stemmer (FTS5) and Snowball's English (PostgreSQL) agree on, with
# their inflections, accents and cases, and words both read as stop words elsewhere.
WORDS = ["tea", "teas", "coffee", "run", "running", "runs", "quick", "fox", "foxes", "jump", "jumped", "jumps",
         "database", "databases", "session", "sessions", "search", "searching", "café", "cafe", "Crème", "creme",
         "naïve", "naive", "the", "and", "of", "HTTP", "x", "42", "3", "résumé", "resume", "Über", "uber"]
SEPARATORS = [" ", " ", " ", ", ", "-", ".", "_", "/", "\n", "'", ": "]
SESSIONS = ["s1", "s2", "s3", "s4"]
USERS = ["", "ada", "bob"]

words = st.lists(st.sampled_from(WORDS), min_size=1, max_size=8)
texts = st.builds(lambda ws, seps: "".join(w + s for w, s in zip(ws, seps)).strip(),
                  words, st.lists(st.sampled_from(SEPARATORS), min_size=8, max_size=8))
chunks = st.builds(lambda ws, sep: sep.join(ws), st.lists(st.sampled_from(WORDS), min_size=1, max_size=2),
                   st.sampled_from(["-", "_", "."]))
queries = st.lists(chunks, min_size=1, max_size=3).map(" ".join)


class Clock:
    """The stores' `time`: both read the same instant for the same operation."""

    now = 1_800_000_000.0

    @classmethod
    def time(cls) -> float:
        return cls.now


def clear(url: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        if conn.execute("SELECT to_regclass('messages')").fetchone()[0] is not None:
            conn.execute("TRUNCATE sessions, messages, tool_calls, usage, origins, compressions, session_prompts")


class SideBySide(RuleBasedStateMachine):
    """A SQLite store and a PostgreSQL store, given the same operations."""

    folder: Path
    url: str
    examples = 0

    started = Bundle("started")

    def __init__(self) -> None:
        super().__init__()
        SideBySide.examples += 1
        clear(self.url)
        self.stores = [SessionStore(self.folder / str(self.examples)), SessionStore(self.folder, url=self.url)]

    def both(self, call: Any) -> Any:
        Clock.now += 1.0
        sqlite, postgres = (call(store) for store in self.stores)
        assert sqlite == postgres
        return sqlite

    @initialize(target=started, session=st.sampled_from(SESSIONS), user=st.sampled_from(USERS))
    def first(self, session: str, user: str) -> str:
        self.both(lambda s: s.start(session, "model", platform="cli" if user else "", user=user))
        return session

    @rule(target=started, session=st.sampled_from(SESSIONS), user=st.sampled_from(USERS))
    def start(self, session: str, user: str) -> str:
        self.both(lambda s: s.start(session, "model", platform="api" if user else "", user=user))
        return session

    @rule(session=started, role=st.sampled_from(["user", "assistant", "tool"]), text=texts)
    def append(self, session: str, role: str, text: str) -> None:
        self.both(lambda s: s.append(session, {"role": role, "content": text}))

    @rule(session=started, texts=st.lists(texts, min_size=1, max_size=3), tokens=st.integers(0, 5000),
          cost=st.none() | st.sampled_from([0.5, 0.25]))
    def step(self, session: str, texts: list[str], tokens: int, cost: float | None) -> None:
        def step(store: SessionStore) -> list[int]:
            with store.step():
                store.usage(session, "p", "model", tokens, tokens // 10, cost)
                numbers = [store.append(session, {"role": "assistant", "content": text}) for text in texts]
                store.tool_call(session, "c", "tool", {"q": texts[0]}, texts[-1])
            return numbers

        self.both(step)

    @rule(session=started, summary=texts)
    def compress(self, session: str, summary: str) -> None:
        self.both(lambda s: s.compression(session, "compressor", (s.window(session) or [])[:-1],
                                          [{"role": "user", "content": summary}, *(s.window(session) or [])[-1:]]))

    @rule(query=queries)
    def search(self, query: str) -> None:
        self.both(lambda s: (s.count(query), sorted((h["session_id"], h["seq"]) for h in s.search(query, 1000))))

    @rule(session=st.sampled_from(SESSIONS))
    def resume(self, session: str) -> None:
        self.both(lambda s: (s.window(session), s.resumed(session)))

    @rule(session=started, text=texts)
    def keep_prompt(self, session: str, text: str) -> None:
        self.both(lambda s: s.save_prompt(session, {"parts": [["identity", "SOUL.md", text, "", False]]}))

    @invariant()
    def same_listings(self) -> None:
        for user in (None, *USERS):
            self.both(lambda s: (s.sessions(user=user), s.count(user=user)))

    @invariant()
    def same_sessions(self) -> None:
        for session in SESSIONS:
            self.both(lambda s: (s.show(session), s.last_seq(session), s.prompt(session)))

    def teardown(self) -> None:
        for store in self.stores:
            store.close()


def test_the_same_operations_give_the_same_answers_on_sqlite_and_postgresql(
        tmp_path: Path, pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(store_module, "time", Clock)
    SideBySide.folder, SideBySide.url = tmp_path, pg_url
    run_state_machine_as_test(SideBySide, settings=settings(
        max_examples=25, stateful_step_count=25, deadline=None, suppress_health_check=list(HealthCheck)))
