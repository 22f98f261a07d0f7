"""The session store's contract, on both backends: SQLite under the home (FTS5) and the shared
PostgreSQL database `state.url` names (its own text search). The same tests run on each, and a
state machine applies one random sequence of operations to a store of each kind side by side:
every answer (numbers, windows, listings, counts, search hits) is the same on both."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hermes_core import MemoryStoreError
from hermes_core.agent import SessionStore


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request: pytest.FixtureRequest) -> str | None:
    """None (SQLite under the home) or a fresh PostgreSQL database's URL: each test runs on both."""
    return None if request.param == "sqlite" else str(request.getfixturevalue("pg_url"))


@pytest.fixture
def store(tmp_path: Path, url: str | None) -> Iterator[SessionStore]:
    opened = SessionStore(tmp_path, url=url)
    yield opened
    opened.close()


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def assistant(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text}


def test_it_keeps_its_sqlite_file_or_names_the_database(tmp_path: Path, url: str | None) -> None:
    store = SessionStore(tmp_path, url=url)
    store.start("s", "m")
    if url is None:
        assert store.location == str(tmp_path / "sessions.db") and (tmp_path / "sessions.db").exists()
    else:
        assert store.location.startswith("postgresql://hermes:***@") and not (tmp_path / "sessions.db").exists()


def test_messages_are_numbered_in_their_session_and_a_step_commits_together(tmp_path: Path, url: str | None) -> None:
    store, other = SessionStore(tmp_path, url=url), SessionStore(tmp_path, url=url)
    store.start("s", "gpt", platform="cli", user="ada")
    assert store.append("s", user("what time is it?")) == 1
    assert other.last_seq("s") == 1  # committed at once
    with store.step():
        store.usage("s", "openai", "gpt", 100, 5, 0.01)
        assert store.append("s", {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "now", "arguments": "{}"}}]}) == 2
        assert store.append("s", {"role": "tool", "tool_call_id": "c1", "content": "noon"}) == 3
        store.tool_call("s", "c1", "now", {}, "noon")
        assert other.last_seq("s") == 1 and other.show("s")["usage"] == []  # type: ignore[index]  # not yet
        assert len(store.window("s") or []) == 3  # this store's reads see its step (committing it)
    shown = other.show("s")
    assert shown is not None
    assert [m["role"] for m in shown["messages"]] == ["user", "assistant", "tool"]
    assert shown["tool_calls"] == [{"call_id": "c1", "name": "now", "arguments": "{}", "result": "noon"}]
    assert shown["usage"] == [{"provider": "openai", "model": "gpt", "input_tokens": 100, "output_tokens": 5,
                               "cost": 0.01}]
    assert (shown["title"], shown["model"], shown["platform"], shown["user"]) == ("what time is it?", "gpt", "cli", "ada")
    assert shown["updated"] >= shown["created"]


def test_a_failed_step_writes_nothing_and_numbering_goes_on(store: SessionStore) -> None:
    store.start("s", "m")
    store.append("s", user("1"))
    with pytest.raises(MemoryStoreError), store.step():
        store.append("s", assistant("lost"))
        store.tool_call("s", "c1", "now", "{}", None)  # type: ignore[arg-type]  # NOT NULL: the step rolls back
    assert [m["content"] for m in store.show("s")["messages"]] == ["1"]  # type: ignore[index]
    assert store.append("s", assistant("2")) == 2


def test_two_stores_appending_to_one_session_number_every_message(tmp_path: Path, url: str | None) -> None:
    first, second = SessionStore(tmp_path, url=url), SessionStore(tmp_path, url=url)
    first.start("s", "m")
    assert first.append("s", user("1")) == 1
    assert second.append("s", assistant("2")) == 2
    assert first.append("s", user("3")) == 3  # not 2: the other store wrote 2
    with second.step():
        second.append("s", assistant("4"))
        first.append("s", user("5"))
    assert second.append("s", assistant("6")) == 6
    assert sorted(m["content"] for m in first.show("s")["messages"]) == list("123456")  # type: ignore[index]


def test_hosts_appending_at_once_lose_no_message(tmp_path: Path, url: str | None) -> None:
    stores = [SessionStore(tmp_path, url=url) for _ in range(4)]
    stores[0].start("s", "m")
    numbers: list[int] = []

    def host(n: int) -> None:
        for i in range(15):
            numbers.append(stores[n].append("s", user(f"{n}-{i}")))

    threads = [threading.Thread(target=host, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    shown = stores[0].show("s")
    assert shown is not None and len(shown["messages"]) == 60 and stores[0].last_seq("s") == 60
    assert sorted(numbers) == list(range(1, 61))


def test_resume_reads_the_window_after_the_last_compression(store: SessionStore) -> None:
    assert store.window("nope") is None
    store.start("s", "m")
    for n in range(4):
        store.append("s", user(f"q{n}"))
        store.append("s", assistant(f"a{n}"))
    store.compression("s", "compressor", [user("q0"), assistant("a0")],
                      [{"role": "system", "content": "sys"}, user("summary one")])
    store.append("s", user("q4"))
    store.compression("s", "lcm", [user("q1")], [user("summary two")])
    store.append("s", assistant("a4"))
    assert store.window("s") == [user("summary two"), assistant("a4")]
    shown = store.show("s")
    assert shown is not None and len(shown["messages"]) == 10
    assert [(c["engine"], c["at_seq"], c["replaced"]) for c in shown["compressions"]] == [
        ("compressor", 8, 2), ("lcm", 9, 1)]


def test_sessions_are_listed_latest_first_and_by_user(store: SessionStore) -> None:
    assert store.sessions() == [] and store.count() == 0 and store.show("nope") is None
    store.start("a", "m1", platform="telegram", user="ada")
    store.start("b", "m2", platform="api", user="bob")
    store.start("c", "m3")
    store.append("a", user("hello from ada"))
    store.usage("a", "p", "m1", 10, 2, 0.5)
    store.usage("a", "p", "m1", 5, 1, None)
    store.append("b", user("hello from bob"))
    listed = store.sessions()
    assert [s["id"] for s in listed] == ["b", "a", "c"]
    first = listed[1]
    assert {k: first[k] for k in ("title", "model", "messages", "input_tokens", "output_tokens", "cost",
                                  "compressions", "platform", "user")} == {
        "title": "hello from ada", "model": "m1", "messages": 1, "input_tokens": 15, "output_tokens": 3,
        "cost": 0.5, "compressions": 0, "platform": "telegram", "user": "ada"}
    assert [s["id"] for s in store.sessions(user="ada")] == ["a"]
    assert [s["id"] for s in store.sessions(1, offset=1)] == ["a"]
    assert (store.count(), store.count(user="bob"), store.count(user="nobody")) == (3, 1, 0)
    store.start("a", "other model", user="someone else")  # a session is recorded once
    assert store.show("a")["model"] == "m1" and store.count(user="someone else") == 0  # type: ignore[index]


def test_search_reads_each_chunk_as_a_phrase_and_finds_any_of_them(store: SessionStore) -> None:
    store.start("s", "m")
    store.start("t", "m")
    store.append("s", user("The quick brown fox jumps over the lazy dog."))  # 1
    store.append("s", assistant("Running databases is what she does at the Café Crème."))  # 2
    store.append("t", user("a fox, quick and brown; dogs were lazy"))  # 1
    store.append("t", assistant("résumé attached: file_name.txt, version 3.14"))  # 2

    def hits(query: str) -> set[tuple[str, int]]:
        found = {(h["session_id"], h["seq"]) for h in store.search(query, 100)}
        assert store.count(query) == len(found)
        return found

    assert hits("quick fox") == {("s", 1), ("t", 1)}  # two phrases: either
    assert hits("quick-brown") == {("s", 1)}  # one phrase: the words in a row
    assert hits("lazy-dog") == {("s", 1)}
    assert hits("LAZY") == {("s", 1), ("t", 1)}  # case is ignored
    assert hits("run database") == {("s", 2)}  # stems: running, databases
    assert hits("cafe creme") == {("s", 2)} and hits("RESUME") == {("t", 2)}  # accents are ignored
    assert hits("the") == {("s", 1), ("s", 2)}  # no stop words
    assert hits("name") == {("t", 2)} and hits("3.14") == {("t", 2)} and hits("txt") == {("t", 2)}
    assert hits("14 version") == {("t", 2)}
    assert hits("nothing-here") == set() and hits("!!! ...") == set() and hits("") == set()
    assert hits('"fox"') == {("s", 1), ("t", 1)}  # quotes are no syntax
    (hit,) = store.search("jumps over")
    assert hit["role"] == "user" and "[jumps" in hit["snippet"] and "over" in hit["snippet"]
    (hit,) = store.search("crème")
    assert "[Crème]" in hit["snippet"]


def test_a_query_matching_more_than_search_ranks_ranks_its_newest_matches(store: SessionStore) -> None:
    """A word in most messages is not ranked over all of them (no index makes that fast at a million
    messages): the best of the newest `RANKED` matches come first; older ones, however good, do not."""
    from hermes_core.agent.store_pg import RANKED

    store.start("s", "m")
    with store.step():
        for _ in range(30):  # the best matches by far, but the oldest
            store.append("s", user("deploy deploy deploy"))
        for n in range(RANKED + 10):
            store.append("s", assistant(f"the deploy of build {n} went through the usual checks and waited"))
    found = store.search("deploy", 20)
    assert len(found) == 20 and min(hit["seq"] for hit in found) > 30 + 10
    assert store.count("deploy") == 30 + RANKED + 10  # counted whole
    assert len(store.search("deploy", RANKED + 40)) == RANKED + 40  # asked for all: all ranked


def test_a_long_message_is_found_and_snipped_around_the_match(store: SessionStore) -> None:
    store.start("s", "m")
    words = [f"word{n}" for n in range(2000)]
    store.append("s", {"role": "tool", "tool_call_id": "c", "content": " ".join([*words, "needle", *words])})
    (hit,) = store.search("needle")
    assert "[needle]" in hit["snippet"] and hit["snippet"].startswith("…") and hit["snippet"].endswith("…")
    assert len(hit["snippet"]) < 200


def test_text_is_stored_as_it_was_sent(store: SessionStore) -> None:
    store.start("s", "m")
    odd = "a NUL \x00 here, a lone surrogate \ud800, emoji ☕ and 'quotes' ? %s %%"
    store.append("s", user(odd))
    store.tool_call("s", "c\x00", "t", "{\"x\": \"\x00\"}", "out \x00")
    shown = store.show("s")
    assert shown is not None
    assert shown["messages"][0]["content"] == odd  # the message itself is kept whole (JSON)
    assert shown["tool_calls"][0]["result"].startswith("out ")
    assert {h["seq"] for h in store.search("emoji quotes")} == {1}


def test_a_database_that_refuses_unaccent_still_stores_and_searches(tmp_path: Path, pg_url: str) -> None:
    from urllib.parse import urlsplit

    import psycopg
    from psycopg import sql

    at = urlsplit(pg_url)
    role = f"{at.path.lstrip('/')}_app"  # a role that may create tables, not extensions
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE ROLE {} LOGIN PASSWORD 'limited-pw'").format(sql.Identifier(role)))
        conn.execute(sql.SQL("GRANT CREATE ON SCHEMA public TO {}").format(sql.Identifier(role)))
    store = SessionStore(tmp_path, url=f"postgresql://{role}:limited-pw@{at.hostname}:{at.port}{at.path}")
    store.start("s", "m")
    store.append("s", user("Running to the Café"))
    assert [h["seq"] for h in store.search("run")] == [1] and [h["seq"] for h in store.search("CAFÉ")] == [1]
    assert store.search("cafe") == []  # accents kept
    with psycopg.connect(pg_url, autocommit=True) as conn:
        assert conn.execute("SELECT count(*) FROM pg_extension WHERE extname = 'unaccent'").fetchone() == (0,)


def test_a_count_of_matches_can_stop_at_a_cap(store: SessionStore) -> None:
    store.start("s", "m")
    for n in range(12):
        store.append("s", user(f"tide table {n}"))
    assert (store.count("tide"), store.count("tide", at_most=5), store.count("tide", at_most=50)) == (12, 5, 12)
    assert store.count("nothing-like-it", at_most=5) == 0


UPGRADE = """
import sys
from pathlib import Path
from hermes_core.agent import SessionStore
store = SessionStore(Path(sys.argv[1]), url=sys.argv[2] or None)
print(" ".join(s["id"] for s in store.sessions()))
print(store.show("early")["updated"] > store.show("late")["created"])
"""


def test_a_schema_3_store_is_upgraded_to_list_by_last_message(tmp_path: Path, url: str | None) -> None:
    """Schema 3 kept the start time in `sessions.updated` and read the last message at each listing;
    schema 4 has the database keep it, and an upgrade sets it from the messages already stored."""
    import subprocess
    import sys
    import time

    store = SessionStore(tmp_path, url=url)
    store.start("early", "m")
    store.append("early", user("first"))
    time.sleep(0.01)
    store.start("late", "m")
    time.sleep(0.01)
    store.append("early", user("written to after late started"))
    assert [s["id"] for s in store.sessions()] == ["early", "late"]
    store.close()
    as_schema_3 = ("UPDATE sessions SET updated = created", "DROP TRIGGER IF EXISTS messages_touch" +
                   ("" if url is None else " ON messages"), "DROP INDEX IF EXISTS sessions_updated")
    if url is None:
        import sqlite3

        db = sqlite3.connect(tmp_path / "sessions.db")
        with db:
            for statement in as_schema_3:
                db.execute(statement)
            db.execute("PRAGMA user_version = 3")
        assert [r[0] for r in db.execute("SELECT id FROM sessions ORDER BY updated DESC")] == ["late", "early"]
        db.close()
    else:
        import psycopg

        with psycopg.connect(url, autocommit=True) as conn:
            for statement in as_schema_3:
                conn.execute(statement)
            conn.execute("UPDATE hermes_schema SET version = 3 WHERE stage = 'sessions'")
    shown = subprocess.run([sys.executable, "-c", UPGRADE, str(tmp_path), url or ""], capture_output=True, text=True,
                           check=True).stdout.split("\n")
    assert shown[:2] == ["early late", "True"]
    latest = "SELECT id FROM sessions ORDER BY updated DESC"  # the column itself, read along its index
    if url is None:
        import sqlite3

        assert [r[0] for r in sqlite3.connect(tmp_path / "sessions.db").execute(latest)] == ["early", "late"]
    else:
        with psycopg.connect(url, autocommit=True) as conn:
            assert [r[0] for r in conn.execute(latest)] == ["early", "late"]


def test_a_sessions_system_prompt_is_kept_read_back_whole_and_replaced(store: SessionStore) -> None:
    prompt = {"parts": [["identity", "SOUL.md", "You are Quill. ü \x00 \u2028 \ud800", "/h/SOUL.md", False]],
              "left_out": [], "max_chars": 20_000}
    assert store.prompt("s") is None and store.resumed("s") is None
    store.start("s", "m")
    assert store.resumed("s") == ([], None)
    with store.step():  # kept in the transaction of the session's first message
        store.save_prompt("s", prompt)
        store.append("s", user("hi"))
    stored = store.prompt("s")
    assert stored is not None and stored["parts"][0][2] == "You are Quill. ü \x00 \u2028 \ud800"
    assert store.resumed("s") == ([user("hi")], stored) and store.window("s") == [user("hi")]
    store.save_prompt("s", {**prompt, "parts": [["identity", "built-in", "after a reset", "", False]]})
    assert store.prompt("s") == {**prompt, "parts": [["identity", "built-in", "after a reset", "", False]]}


def test_a_schema_3_store_is_upgraded_to_keep_prompts(tmp_path: Path, url: str | None) -> None:
    """A database made by the previous version (schema 3, no session_prompts) is upgraded in place."""
    import sqlite3

    from hermes_core.agent.store_pg import PG_SCHEMA

    if url is None:
        with sqlite3.connect(tmp_path / "sessions.db") as db:
            db.executescript(SessionStore.schema.split("CREATE TABLE IF NOT EXISTS session_prompts")[0])
            db.execute("INSERT INTO sessions(id, model, created, updated) VALUES ('old', 'm', 1, 1)")
            db.execute("PRAGMA user_version = 3")
    else:
        import psycopg

        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(PG_SCHEMA.split("CREATE TABLE IF NOT EXISTS session_prompts")[0])
            conn.execute("CREATE TABLE hermes_schema (stage TEXT PRIMARY KEY, version INTEGER NOT NULL, "
                         "updated DOUBLE PRECISION NOT NULL)")
            conn.execute("INSERT INTO hermes_schema VALUES ('sessions', 3, 0)")
            conn.execute("INSERT INTO sessions(id, model, created, updated) VALUES ('old', 'm', 1, 1)")
    store = SessionStore(tmp_path, url=url)
    assert store.resumed("old") == ([], None)
    store.save_prompt("old", {"parts": []})
    assert store.prompt("old") == {"parts": []}
    store.close()
    if url is None:
        with sqlite3.connect(tmp_path / "sessions.db") as db:
            assert db.execute("PRAGMA user_version").fetchone() == (4,)
    else:
        import psycopg

        with psycopg.connect(url) as conn:
            assert conn.execute("SELECT version FROM hermes_schema WHERE stage = 'sessions'").fetchone() == (4,)
