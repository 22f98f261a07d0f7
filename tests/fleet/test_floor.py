"""The floor under every stage that keeps state (`hermes_core.hosting.Store`): the same stage
code on SQLite under the home and on a real PostgreSQL started by the tests, schemas created
once by hosts starting together, a newer schema refused, bad settings answered in one line
with no password in it, and a database restarted under a host that reconnects by itself."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import pytest

from hermes_core import ConfigError, StateStoreError, StateUnavailableError
from hermes_core.hosting import Heartbeat, Hosts, state_url
from tests.helpers.notes_store import Notes



@pytest.fixture(params=["sqlite", "postgresql"])
def url(request: pytest.FixtureRequest) -> str | None:
    """None (SQLite under the home) or a fresh PostgreSQL database's URL: each test runs on both."""
    return None if request.param == "sqlite" else str(request.getfixturevalue("pg_url"))


def test_a_stage_written_once_reads_the_same_on_both_backends(tmp_path: Path, url: str | None) -> None:
    notes = Notes(tmp_path / "notes.db", url=url)
    assert notes.dialect == ("sqlite" if url is None else "postgresql")
    first = notes.add("100% sure?", 0.5)
    notes.add_many(["a?b", "what's this", "50%"])
    assert notes.add("last") > first
    assert notes.like("%?%") == ["100% sure?", "a?b"]
    assert notes.literal() == ["100% sure?"]
    with notes._batch():
        notes.queue("one")
        notes.queue("two")
        assert notes.like("t%") == ["two"]  # a read inside the block sees what was queued
    assert notes.like("%o") == ["two"]
    with pytest.raises(RuntimeError), notes._writing() as db:
        db.execute("INSERT INTO notes (text) VALUES (?)", ("rolled back",))
        raise RuntimeError("boom")
    assert notes.like("rolled%") == []


def test_without_a_url_the_store_is_the_sqlite_file_it_always_was(tmp_path: Path) -> None:
    notes = Notes(tmp_path / "notes.db")
    assert not notes.exists() and notes.like("%") == []
    notes.add("kept")
    assert (tmp_path / "notes.db").exists() and notes.location == str(tmp_path / "notes.db")
    script = (f"import sys; sys.path.insert(0, {str(Path(__file__).parents[2])!r})\n"
              "from tests.helpers.notes_store import Notes\n"
              f"Notes(__import__('pathlib').Path({str(tmp_path)!r}) / 'n.db').add('x')\n"
              "print(sorted(m for m in sys.modules if m.startswith('psycopg')))\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "[]", done.stderr  # no driver imported without a URL


def test_the_url_comes_from_the_environment_before_the_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HERMES_STATE_URL", raising=False)
    assert state_url(tmp_path) is None
    (tmp_path / "config.yaml").write_text("state:\n  url: postgresql://app:s3cret@db.internal:6543/hermes\n")
    found = state_url(tmp_path)
    assert found is not None and found.masked == "postgresql://app:***@db.internal:6543/hermes"
    assert (found.host, found.port, found.database, found.user) == ("db.internal", 6543, "hermes", "app")
    assert "s3cret" not in repr(found)
    monkeypatch.setenv("HERMES_STATE_URL", "postgresql://other@127.0.0.1/x")
    assert state_url(tmp_path).database == "x"  # type: ignore[union-attr]


@pytest.mark.parametrize("raw, says", [
    ("mysql://u:pw@h/db", "must start with postgresql://"),
    ("postgresql://u:pw@h:99999/db", "not a valid URL"),
    ("postgresql://u:pw@h:5432/", "names no database"),
    ("[a, b]", "state.url"),
])
def test_a_malformed_url_is_one_line_without_its_password(tmp_path: Path, raw: object, says: str) -> None:
    (tmp_path / "config.yaml").write_text(f"state:\n  url: {raw}\n")
    with pytest.raises(ConfigError) as caught:
        state_url(tmp_path)
    assert says in str(caught.value) and "pw" not in str(caught.value) and "\n" not in str(caught.value)


def test_a_wrong_password_a_missing_database_and_a_stopped_server_are_named(pg_url: str, tmp_path: Path) -> None:
    secret = password(pg_url)
    wrong = pg_url.replace(f":{secret}@", ":not-the-password@")
    with pytest.raises(StateStoreError, match="wrong password") as caught:
        Notes(tmp_path / "n.db", url=wrong).add("x")
    assert "not-the-password" not in str(caught.value)
    missing = pg_url.rsplit("/", 1)[0] + "/no_such_database"
    with pytest.raises(StateStoreError, match="does not exist.*createdb"):
        Notes(tmp_path / "n.db", url=missing).add("x")
    closed = f"postgresql://hermes:{secret}@127.0.0.1:1/db"
    with pytest.raises(StateUnavailableError, match="cannot be reached") as caught:
        Notes(tmp_path / "n.db", url=closed).add("x")
    assert secret not in str(caught.value)


def password(url: str) -> str:
    from urllib.parse import urlsplit

    return urlsplit(url).password or ""


HOST_SCRIPT = textwrap.dedent("""
    import sys
    sys.path.insert(0, {tests!r})
    from tests.helpers.notes_store import Notes
    notes = Notes(__import__("pathlib").Path({folder!r}) / "n.db", url={url!r})
    for i in range(20):
        notes.add(f"{{sys.argv[1]}}-{{i}}")
""")


def test_hosts_starting_together_create_the_schema_once(pg_url: str, tmp_path: Path) -> None:
    script = HOST_SCRIPT.format(tests=str(Path(__file__).parents[2]), folder=str(tmp_path), url=pg_url)
    hosts = [subprocess.Popen([sys.executable, "-c", script, str(n)], stderr=subprocess.PIPE, text=True)
             for n in range(4)]
    errors = [host.communicate(timeout=120)[1] for host in hosts]
    assert [host.returncode for host in hosts] == [0, 0, 0, 0], errors
    notes = Notes(tmp_path / "n.db", url=pg_url)
    assert len(notes.like("%")) == 80
    import psycopg

    with psycopg.connect(pg_url) as conn:
        assert conn.execute("SELECT version FROM hermes_schema WHERE stage = 'notes_test'").fetchall() == [(1,)]


def test_a_schema_newer_than_this_hermes_core_is_refused_never_downgraded(pg_url: str, tmp_path: Path) -> None:
    import psycopg

    Notes(tmp_path / "n.db", url=pg_url).add("made by an older host")
    with psycopg.connect(pg_url) as conn:
        conn.execute("UPDATE hermes_schema SET version = 7 WHERE stage = 'notes_test'")
    script = (f"import sys; sys.path.insert(0, {str(Path(__file__).parents[2])!r})\n"
              "from tests.helpers.notes_store import Notes\n"
              f"Notes(__import__('pathlib').Path('/nonexistent'), url={pg_url!r}).like('%')\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode != 0
    assert "schema 7, newer than this hermes-core knows (1); upgrade hermes-core" in done.stderr
    with psycopg.connect(pg_url) as conn:
        assert conn.execute("SELECT version FROM hermes_schema WHERE stage = 'notes_test'").fetchone() == (7,)


def test_without_the_driver_the_extra_to_install_is_named(pg_url: str, tmp_path: Path) -> None:
    script = (f"import sys; sys.modules['psycopg'] = None; sys.path.insert(0, {str(Path(__file__).parents[2])!r})\n"
              "from hermes_core import StateStoreError\n"
              "from tests.helpers.notes_store import Notes\n"
              f"try:\n    Notes(__import__('pathlib').Path({str(tmp_path)!r}) / 'n.db', url={pg_url!r}).add('x')\n"
              "except StateStoreError as exc:\n    print(exc)\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert "pip install 'hermes-core[postgres]'" in done.stdout, done.stderr


def test_a_restarted_database_is_unavailable_then_used_again_without_a_new_store(
        pg_url: str, pg_cluster: Any, tmp_path: Path) -> None:
    notes = Notes(tmp_path / "n.db", url=pg_url)
    notes.add("before")
    pg_cluster.stop()
    try:
        with pytest.raises(StateUnavailableError, match="cannot be reached"):
            notes.add("while down")
    finally:
        pg_cluster.start()
    notes.add("after")
    assert notes.like("%") == ["before", "after"]


def test_a_read_sends_its_statements_alone_and_a_write_one_transaction(
        pg_url: str, pg_cluster: Any, tmp_path: Path) -> None:
    """What the database is sent, from its own log: a read block its statements and nothing else (no
    BEGIN and COMMIT, no ping of a pooled connection that is quiet: each a round trip a request pays),
    a write block its statements between BEGIN and COMMIT."""
    import re

    import psycopg
    from psycopg import sql

    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(sql.SQL("ALTER DATABASE {} SET log_statement = 'all'").format(sql.Identifier(pg_url.rsplit("/", 1)[1])))
    notes = Notes(tmp_path / "notes.db", url=pg_url)
    notes.add("one")
    mark = pg_cluster.log_path.stat().st_size
    for _ in range(3):
        assert notes.like("o%") == ["one"]
    notes.add("two")
    logged = pg_cluster.log_path.read_bytes()[mark:].decode(errors="replace")
    sent = re.findall(r"LOG:  (?:statement|execute [^:]*): ?(.*)", logged)
    assert sent == ["SELECT text FROM notes WHERE text LIKE $1 ORDER BY id"] * 3 + [
        "BEGIN", "INSERT INTO notes (text, score) VALUES ($1, $2) RETURNING id", "COMMIT"], logged


def test_hosts_are_alive_while_they_beat_and_dead_after(tmp_path: Path, url: str | None) -> None:
    hosts = Hosts(tmp_path, url=url)
    quiet, beating = hosts.register("serve"), hosts.register("gateway")
    stopped = hosts.register("cron")
    hosts.stop(stopped)
    assert hosts.alive([quiet, beating, stopped], within=30.0) == {quiet, beating}
    seen = threading.Event()
    with Heartbeat(hosts, beating, every=0.05):
        start = hosts.now()
        while hosts.now() - start < 0.6:
            seen.wait(0.05)
        assert hosts.alive([quiet, beating], within=0.5) == {beating}
    assert hosts.alive([beating], within=30.0) == set()  # stopped when its block ended
    listed = {row["id"]: row for row in hosts.listing(within=30.0)}
    assert listed[quiet]["alive"] and not listed[beating]["alive"] and listed[quiet]["kind"] == "serve"


def test_a_deadlock_between_hosts_is_a_conflict_to_retry_not_an_outage(pg_url: str, tmp_path: Path) -> None:
    """Two transactions taking two rows in opposite orders: the one PostgreSQL picks as the victim
    is rolled back and said to be a conflict (worth trying again), and the store works on."""
    import psycopg

    notes = Notes(tmp_path / "n.db", url=pg_url)
    first, second = notes.add("a"), notes.add("b")
    holder = psycopg.connect(pg_url)
    holder.execute("SET deadlock_timeout = '30s'")  # the store's side finds the deadlock: it is the victim
    holder.execute("UPDATE notes SET score = 1 WHERE id = %s", (second,))
    errors: list[BaseException] = []

    def other() -> None:
        import time

        time.sleep(0.5)  # the store's transaction holds `first` and waits for `second` by then
        try:
            holder.execute("UPDATE notes SET score = 2 WHERE id = %s", (first,))
            holder.commit()
        except psycopg.Error as exc:
            errors.append(exc)
            holder.rollback()

    thread = threading.Thread(target=other)
    thread.start()
    try:
        with notes._writing() as db:
            db.execute("UPDATE notes SET score = 3 WHERE id = ?", (first,))
            db.execute("UPDATE notes SET score = 3 WHERE id = ?", (second,))
    except StateUnavailableError as exc:
        errors.append(exc)
    finally:
        thread.join(30)
        holder.close()
    assert len(errors) == 1 and isinstance(errors[0], StateUnavailableError), errors
    assert "met another host's at once" in str(errors[0]) and "cannot be reached" not in str(errors[0])
    assert notes.like("%") == ["a", "b"]  # and the store works on


def test_a_write_transaction_is_one_round_trip_and_waits_only_where_it_reads(pg_url: str, tmp_path: Path) -> None:
    """Counted on the wire (a proxy between the store and PostgreSQL): the BEGIN, the statements and
    the COMMIT of a write go out together (one round trip), and a write that reads an answer in the
    middle (a row, or how many rows a statement changed) waits there and only there."""
    from urllib.parse import urlsplit

    from tests.helpers.turns_proxy import TurnsProxy

    parts = urlsplit(pg_url)
    with TurnsProxy(parts.hostname or "127.0.0.1", parts.port or 5432) as proxy:
        notes = Notes(tmp_path / "n.db", url=pg_url.replace(f":{parts.port}/", f":{proxy.port}/"), pool_size=1)
        notes.add("warm")  # the schema, the pool's connection
        notes.like("%")

        def counted(work: Any) -> int:
            proxy.reset()
            work()
            return proxy.turns

        assert counted(lambda: notes.queue("one")) == 1
        assert counted(lambda: notes.add_many(["a", "b", "c"])) == 1
        with notes._batch():
            notes.queue("two")
            notes.queue("three")
        assert notes.like("t%") == ["two", "three"]

        def changed() -> None:
            with notes._writing() as db:
                db.execute("INSERT INTO notes (text) VALUES (?)", ("four",))
                assert db.execute("UPDATE notes SET score = 1 WHERE text = ?", ("four",)).rowcount == 1
                db.execute("INSERT INTO notes (text) VALUES (?)", ("five",))

        assert counted(changed) == 2  # up to the rowcount, then the rest with the COMMIT
        assert counted(lambda: notes.like("f%")) == 1
        with pytest.raises(StateStoreError, match="refused a statement"), notes._writing() as db:
            db.execute("INSERT INTO notes (text) VALUES (?)", ("six",))
            db.execute("INSERT INTO nowhere (text) VALUES (?)", ("seven",))
        assert notes.like("%") == ["warm", "one", "a", "b", "c", "two", "three", "four", "five"]
