"""The API server's store (`ApiStore`) as a contract, on both backends: SQLite under the home and
the shared PostgreSQL database give the same answers to the same calls (a hypothesis state
machine runs one sequence of calls on both and compares every answer); an Idempotency-Key is
claimed once by hosts racing for it; a run's host is recorded and a gone host's runs are ended
once; pruning keeps the newest; a schema 1 file is upgraded in place."""

from __future__ import annotations

import json
import sqlite3
import tempfile
import threading
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, precondition, rule, run_state_machine_as_test

from hermes_core.api_server.fleet import Fleet
from hermes_core.api_server.store import ApiStore


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request: pytest.FixtureRequest) -> str | None:
    """None (SQLite under the home) or a fresh PostgreSQL database's URL: each test runs on both."""
    return None if request.param == "sqlite" else str(request.getfixturevalue("pg_url"))


def _run(run_id: str, status: str = "running") -> dict[str, Any]:
    return {"object": "hermes.run", "run_id": run_id, "status": status, "last_event": None}


def _event(run_id: str, name: str, **data: Any) -> dict[str, Any]:
    return {"event": name, "run_id": run_id, **data}


def test_responses_and_conversations_are_kept_per_owner(tmp_path: Path, url: str | None) -> None:
    store = ApiStore(tmp_path, url=url)
    assert store.response("resp_1", "k") is None and store.conversation("chat", "k") is None
    store.save_response({"id": "resp_1", "text": "héllo 100%?"}, "k", "sess-1", 2, conversation="chat")
    store.save_response({"id": "resp_2", "text": "again"}, "k", "sess-1", 4, conversation="chat")
    assert store.response("resp_1", "k") == ({"id": "resp_1", "text": "héllo 100%?"}, "sess-1", 2)
    assert store.response("resp_1", "other") is None  # another key's
    assert store.conversation("chat", "k") == "resp_2" and store.conversation("chat", "other") is None
    store.save_response({"id": "resp_1", "text": "replaced"}, "k", "sess-9", 7)
    assert store.response("resp_1", "k") == ({"id": "resp_1", "text": "replaced"}, "sess-9", 7)
    assert not store.delete_response("resp_1", "other")
    assert store.delete_response("resp_1", "k") and not store.delete_response("resp_1", "k")
    assert store.response("resp_1", "k") is None


def test_a_runs_events_are_stored_as_they_come_and_its_end_once(tmp_path: Path, url: str | None) -> None:
    store = ApiStore(tmp_path, url=url)
    store.start_run(_run("run_a"), "k", "host-1")
    assert store.run_host("run_a") == "host-1" and store.orphans("host-2") == {"host-1": ["run_a"]}
    assert store.orphans("host-1") == {}
    store.add_events("run_a", 0, [_event("run_a", "message.delta", delta="one"),
                                  _event("run_a", "message.delta", delta="two")])
    store.add_events("run_a", 1, [_event("run_a", "message.delta", delta="two (again)")])  # kept as first stored
    assert [(seq, name) for seq, name, _ in store.events("run_a")] == [(0, "message.delta"), (1, "message.delta")]
    assert [event["delta"] for _, _, event in store.events("run_a", after=0)] == ["two"]
    assert store.run("run_a", "k")["status"] == "running" and store.run("run_a", "other") is None
    assert store.stops("host-1") == [] and store.ask_stop("run_a") == "host-1"
    assert store.stops("host-1") == ["run_a"] and store.stops("host-2") == []
    assert not store.end_run(_run("run_a", "completed"), "host-2", 2, [])  # not the host running it
    assert store.end_run(_run("run_a", "completed"), "host-1", 2,
                         [_event("run_a", "message.delta", delta="three"), _event("run_a", "run.completed")])
    assert store.run("run_a", "k")["status"] == "completed" and store.run_host("run_a") is None
    assert [name for _, name, _ in store.events("run_a")][-2:] == ["message.delta", "run.completed"]
    assert not store.end_orphan("run_a", "host-1", "gone")  # it ended: nothing to end
    assert store.ask_stop("run_a") is None and store.stops("host-1") == []


def test_a_gone_hosts_run_is_ended_once_with_the_reason(tmp_path: Path, url: str | None) -> None:
    store = ApiStore(tmp_path, url=url)
    store.start_run(_run("run_b"), "k", "host-1")
    store.add_events("run_b", 0, [_event("run_b", "message.delta", delta="said before")])
    ended = []
    barrier = threading.Barrier(4)

    def reaper() -> None:
        barrier.wait()
        ended.append(store.end_orphan("run_b", "host-1", "the host running it (host-1) stopped answering"))

    threads = [threading.Thread(target=reaper) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(ended) == [False, False, False, True]
    run = store.run("run_b", "k")
    assert run["status"] == "failed" and run["last_event"] == "run.failed"
    assert run["error"]["message"] == "the host running it (host-1) stopped answering"
    events = store.events("run_b")
    assert [name for _, name, _ in events] == ["message.delta", "run.failed"]  # nothing said before is lost
    assert events[1][2]["error"] == run["error"]["message"]
    assert not store.end_run(_run("run_b", "completed"), "host-1", 1, [_event("run_b", "run.completed")])
    assert store.run("run_b", "k")["status"] == "failed"  # the host that comes back does not overwrite it


def test_an_idempotency_key_is_claimed_once_by_hosts_racing_for_it(tmp_path: Path, url: str | None) -> None:
    hosts = [ApiStore(tmp_path, url=url) for _ in range(4)]
    barrier = threading.Barrier(len(hosts))
    answers: dict[str, tuple[str, str] | None] = {}

    def claim(n: int) -> None:
        barrier.wait()
        answers[f"run_{n}"] = hosts[n].claim("k", "job-1", "digest", f"run_{n}")

    threads = [threading.Thread(target=claim, args=(n,)) for n in range(len(hosts))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    winners = [run_id for run_id, earlier in answers.items() if earlier is None]
    assert len(winners) == 1
    assert {earlier for earlier in answers.values() if earlier is not None} == {("digest", winners[0])}
    assert hosts[0].claim("other-key", "job-1", "digest", "run_x") is None  # keys are per owner


def test_a_run_and_its_idempotency_key_are_stored_together_or_not_at_all(tmp_path: Path, url: str | None) -> None:
    hosts = [ApiStore(tmp_path, url=url) for _ in range(4)]
    barrier = threading.Barrier(len(hosts))
    answers: dict[str, tuple[str, str] | None] = {}

    def start(n: int) -> None:
        barrier.wait()
        answers[f"run_{n}"] = hosts[n].start_run(_run(f"run_{n}"), "k", f"host-{n}", idempotency=("job-7", "d"))

    threads = [threading.Thread(target=start, args=(n,)) for n in range(len(hosts))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    [winner] = [run_id for run_id, earlier in answers.items() if earlier is None]
    assert [run_id for run_id in answers if hosts[0].run(run_id, "k") is not None] == [winner]  # one run stored
    assert hosts[0].claimed("k", "job-7") == ("d", winner) and hosts[0].claimed("k", "job-8") is None
    assert set(hosts[0].orphans("nobody")) == {f"host-{winner[-1]}"}


def test_an_expired_idempotency_key_is_claimed_again(tmp_path: Path, url: str | None,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    import hermes_core.api_server.store as module

    store = ApiStore(tmp_path, url=url)
    assert store.claim("k", "job", "d1", "run_1") is None
    assert store.claim("k", "job", "d2", "run_2") == ("d1", "run_1")
    monkeypatch.setattr(module, "IDEMPOTENCY_TTL", -1.0)
    assert store.claim("k", "job", "d2", "run_2") is None
    monkeypatch.setattr(module, "IDEMPOTENCY_TTL", 3600.0)
    assert store.claim("k", "job", "d3", "run_3") == ("d2", "run_2")
    monkeypatch.setattr(module, "IDEMPOTENCY_TTL", -1.0)
    assert store.claimed("k", "job") is None  # an expired key answers nothing


def test_pruning_keeps_the_newest_and_running_runs_with_their_events(tmp_path: Path, url: str | None) -> None:
    store = ApiStore(tmp_path, url=url, max_stored=3)
    for n in range(6):
        store.save_response({"id": f"resp_{n}"}, "k", "s", n, conversation=f"c{n}")
    assert [store.response(f"resp_{n}", "k") is not None for n in range(6)] == [False] * 3 + [True] * 3
    assert store.conversation("c0", "k") is None and store.conversation("c5", "k") == "resp_5"
    store.start_run(_run("run_old"), "k", "host-1")  # still running: kept however old
    for n in range(4):
        store.start_run(_run(f"run_{n}"), "k", "host-1")
        store.add_events(f"run_{n}", 0, [_event(f"run_{n}", "message.delta", delta="x")])
        store.end_run(_run(f"run_{n}", "completed"), "host-1", 1, [_event(f"run_{n}", "run.completed")])
    store.prune()
    assert store.run("run_old", "k") is not None
    assert store.run("run_0", "k") is None and store.events("run_0") == []
    assert [store.run(f"run_{n}", "k") is not None for n in range(1, 4)] == [True] * 3
    assert len(store.events("run_3")) == 2


def test_a_schema_1_file_is_upgraded_and_its_unfinished_runs_ended_as_interrupted(tmp_path: Path) -> None:
    db = sqlite3.connect(tmp_path / "api_server.db")
    db.executescript("""
        CREATE TABLE responses (id TEXT PRIMARY KEY, created REAL NOT NULL, owner TEXT NOT NULL,
            session_id TEXT NOT NULL, seq INTEGER NOT NULL, body TEXT NOT NULL);
        CREATE INDEX responses_created ON responses(created);
        CREATE TABLE conversations (owner TEXT NOT NULL, name TEXT NOT NULL, response_id TEXT NOT NULL,
            updated REAL NOT NULL, PRIMARY KEY (owner, name));
        CREATE TABLE runs (id TEXT PRIMARY KEY, created REAL NOT NULL, owner TEXT NOT NULL, body TEXT NOT NULL);
        CREATE INDEX runs_created ON runs(created);
        CREATE TABLE run_events (run_id TEXT NOT NULL, seq INTEGER NOT NULL, event TEXT NOT NULL,
            data TEXT NOT NULL, PRIMARY KEY (run_id, seq));
        CREATE TABLE idempotency (owner TEXT NOT NULL, key TEXT NOT NULL, digest TEXT NOT NULL,
            run_id TEXT NOT NULL, created REAL NOT NULL, PRIMARY KEY (owner, key));
        PRAGMA user_version = 1;
    """)
    db.execute("INSERT INTO runs VALUES ('run_live', 1.0, 'k', ?)", (json.dumps(_run("run_live")),))
    db.execute("INSERT INTO runs VALUES ('run_done', 1.0, 'k', ?)", (json.dumps(_run("run_done", "completed")),))
    db.execute("INSERT INTO responses VALUES ('resp_old', 1.0, 'k', 's', 2, '{\"id\": \"resp_old\"}')")
    db.commit()
    db.close()
    store = ApiStore(tmp_path, retention_days=1e6)
    assert store.response("resp_old", "k") == ({"id": "resp_old"}, "s", 2)
    assert store.orphans("me") == {"": ["run_live"]}
    fleet = Fleet(tmp_path, None, lease=0.05)
    fleet.hosts.register("serve", ident=fleet.ident)
    fleet.hosts.steady_since = 0.0  # judged at once
    assert fleet.reap(store) == ["run_live"]
    assert store.run("run_live", "k")["status"] == "interrupted" and store.run("run_done", "k")["status"] == "completed"
    with sqlite3.connect(tmp_path / "api_server.db") as db:
        assert db.execute("PRAGMA user_version").fetchone() == (3,)


# -- the same calls on both backends -------------------------------------------------------------

OWNERS = st.sampled_from(["k1", "k2"])
IDS = st.sampled_from([f"id{n}" for n in range(5)])
TEXT = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=12)


def test_the_same_calls_give_the_same_answers_on_sqlite_and_postgresql(pg_url: str) -> None:
    import psycopg

    class SameAnswers(RuleBasedStateMachine):
        """Every call made on both stores; every answer compared."""

        def __init__(self) -> None:
            super().__init__()
            self.folder = tempfile.TemporaryDirectory()
            self.stores = [ApiStore(Path(self.folder.name), max_stored=4),
                           ApiStore(Path(self.folder.name), url=pg_url, max_stored=4)]
            with psycopg.connect(pg_url, autocommit=True) as conn:
                if conn.execute("SELECT to_regclass('run_hosts')").fetchone()[0] is not None:
                    conn.execute("TRUNCATE responses, conversations, runs, run_events, idempotency, run_hosts")
            self.runs: set[str] = set()

        def both(self, call: str, *args: Any, **kwargs: Any) -> Any:
            answers = [getattr(store, call)(*args, **kwargs) for store in self.stores]
            assert answers[0] == answers[1], (call, args, answers)
            return answers[0]

        @rule(response_id=IDS, owner=OWNERS, text=TEXT, seq=st.integers(0, 50),
              conversation=st.none() | st.sampled_from(["a", "b"]))
        def save_response(self, response_id: str, owner: str, text: str, seq: int, conversation: str | None) -> None:
            self.both("save_response", {"id": response_id, "text": text}, owner, f"s-{text}", seq, conversation)

        @rule(response_id=IDS, owner=OWNERS)
        def read_response(self, response_id: str, owner: str) -> None:
            self.both("response", response_id, owner)

        @rule(response_id=IDS, owner=OWNERS)
        def delete_response(self, response_id: str, owner: str) -> None:
            self.both("delete_response", response_id, owner)

        @rule(name=st.sampled_from(["a", "b"]), owner=OWNERS)
        def conversation(self, name: str, owner: str) -> None:
            self.both("conversation", name, owner)

        @rule(run_id=IDS, owner=OWNERS, host=st.sampled_from(["h1", "h2"]),
              key=st.none() | st.sampled_from(["x", "y"]), digest=st.sampled_from(["d1", "d2"]))
        def start_run(self, run_id: str, owner: str, host: str, key: str | None, digest: str) -> None:
            self.both("start_run", _run(run_id), owner, host, idempotency=None if key is None else (key, digest))
            self.runs.add(run_id)

        @rule(owner=OWNERS, key=st.sampled_from(["x", "y"]))
        def claimed(self, owner: str, key: str) -> None:
            self.both("claimed", owner, key)

        @precondition(lambda self: self.runs)
        @rule(data=st.data(), texts=st.lists(TEXT, max_size=3), first=st.integers(0, 4))
        def add_events(self, data: st.DataObject, texts: list[str], first: int) -> None:
            run_id = data.draw(st.sampled_from(sorted(self.runs)))
            self.both("add_events", run_id, first, [_event(run_id, "message.delta", delta=t) for t in texts])

        @precondition(lambda self: self.runs)
        @rule(data=st.data(), host=st.sampled_from(["h1", "h2"]), first=st.integers(0, 4))
        def end_run(self, data: st.DataObject, host: str, first: int) -> None:
            run_id = data.draw(st.sampled_from(sorted(self.runs)))
            self.both("end_run", _run(run_id, "completed"), host, first, [_event(run_id, "run.completed")])

        @precondition(lambda self: self.runs)
        @rule(data=st.data(), host=st.sampled_from(["h1", "h2"]))
        def end_orphan(self, data: st.DataObject, host: str) -> None:
            run_id = data.draw(st.sampled_from(sorted(self.runs)))
            self.both("end_orphan", run_id, host, "gone")

        @precondition(lambda self: self.runs)
        @rule(data=st.data(), owner=OWNERS, after=st.integers(-1, 3))
        def read_run(self, data: st.DataObject, owner: str, after: int) -> None:
            run_id = data.draw(st.sampled_from(sorted(self.runs)))
            answers = [(store.run(run_id, owner), store.run_host(run_id),
                        [(seq, name, {k: v for k, v in event.items() if k != "timestamp"})
                         for seq, name, event in store.events(run_id, after)]) for store in self.stores]
            for answer in answers:  # the time a gone host's run ended differs by a few microseconds
                if answer[0] is not None:
                    answer[0].pop("updated_at", None)
            assert answers[0] == answers[1]

        @precondition(lambda self: self.runs)
        @rule(data=st.data())
        def ask_stop(self, data: st.DataObject) -> None:
            self.both("ask_stop", data.draw(st.sampled_from(sorted(self.runs))))

        @rule(host=st.sampled_from(["h1", "h2"]))
        def stops(self, host: str) -> None:
            self.both("stops", host)

        @rule(host=st.sampled_from(["h1", "h2", "h3"]))
        def orphans(self, host: str) -> None:
            answers = [{h: sorted(ids) for h, ids in store.orphans(host).items()} for store in self.stores]
            assert answers[0] == answers[1]

        @rule(owner=OWNERS, key=st.sampled_from(["x", "y"]), digest=st.sampled_from(["d1", "d2"]), run_id=IDS)
        def claim(self, owner: str, key: str, digest: str, run_id: str) -> None:
            self.both("claim", owner, key, digest, run_id)

        def teardown(self) -> None:
            for store in self.stores:
                store.close()
            self.folder.cleanup()

    run_state_machine_as_test(SameAnswers, settings=settings(
        max_examples=25, stateful_step_count=20, deadline=None, suppress_health_check=list(HealthCheck)))
