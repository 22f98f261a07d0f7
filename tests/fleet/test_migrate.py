"""`hermes state migrate --to URL`: a home's state copied into a real PostgreSQL database, as a
user runs it: what it copied is printed, the hosts then see the same sessions, search, cron jobs
and plugin state on the database, a migration killed mid-way resumes without copying a row
twice, a second run copies nothing, and the home's files are only read."""

from __future__ import annotations

import gc
import hashlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from hermes_core import PluginManager
from hermes_core.agent import SessionStore
from tests.helpers import hermes

HERMES = str(Path(sys.executable).with_name("hermes"))


def fill(home: Path, sessions: int, messages: int) -> None:
    """`sessions` sessions of `messages` messages each (with usage and a tool call), one cron job,
    and a plugin's ctx.state."""
    store = SessionStore(home)
    for n in range(sessions):
        sid = f"s{n:05d}"
        with store.step():
            store.start(sid, "model-x", platform="cli", user=f"user{n % 3}")
            for m in range(messages):
                store.append(sid, {"role": "user" if m % 2 == 0 else "assistant",
                                   "content": f"message {m} about zebras {n}" if m == 0 else f"words {n} {m}"})
            store.usage(sid, "custom", "model-x", 10, 5, 0.001)
            store.tool_call(sid, f"call-{n}", "text_stats", {"text": "x"}, '{"words": 1}')
    store.close()
    hermes("cron", "add", "every 1h", "water the plants", "--name", "plants")
    manager = PluginManager(home=home, discover_plugins=False)
    manager.add_plugin(lambda ctx: ctx.state.update({"count": 41, "name": "zebra"}), "counter")
    manager.load()
    manager.close()
    del manager
    gc.collect()  # its ctx.state's connection closed now (its WAL folded in), not at some later moment


def digests(home: Path) -> dict[str, str]:
    """The home's files and their contents (SQLite's `-shm` index and an empty `-wal`, which any
    reader of a WAL database may leave beside it, are no data)."""
    return {str(p.relative_to(home)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(home.rglob("*")) if p.is_file() and ".cache" not in p.parts
            and not p.name.endswith("-shm") and not (p.name.endswith("-wal") and p.stat().st_size == 0)}


def test_a_home_migrated_is_what_every_host_then_sees(home: Path, pg_url: str,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    fill(home, sessions=3, messages=4)
    before = digests(home)
    done = hermes("state", "migrate", "--to", pg_url)
    assert before == digests(home)  # the files are only read
    password = pg_url.split(":")[2].split("@")[0]
    assert password not in done.stdout + done.stderr
    assert "messages" in done.stdout and "12 copied" in done.stdout and "cron/jobs.json: 1 jobs" in done.stdout
    again = json.loads(hermes("state", "migrate", "--to", pg_url, "--json").stdout)
    assert {row["copied"] for row in again["copied"]} == {0}  # nothing twice

    elsewhere = home.parent / "machine2"  # another machine's home, naming the database
    elsewhere.mkdir()
    monkeypatch.setenv("HERMES_HOME", str(elsewhere))
    monkeypatch.setenv("HERMES_STATE_URL", pg_url)
    listed = json.loads(hermes("sessions", "list", "--json").stdout)
    assert sorted(row["id"] for row in listed) == ["s00000", "s00001", "s00002"]
    assert {row["messages"] for row in listed} == {4} and {row["user"] for row in listed} == {"user0", "user1", "user2"}
    found = json.loads(hermes("sessions", "search", "zebras", "--json").stdout)
    assert sorted(hit["session_id"] for hit in found) == ["s00000", "s00001", "s00002"]
    shown = json.loads(hermes("sessions", "show", "s00001", "--json").stdout)
    assert len(shown["tool_calls"]) == 1 and shown["usage"][0]["input_tokens"] == 10
    assert [job["name"] for job in json.loads(hermes("cron", "list", "--json").stdout)] == ["plants"]
    manager = PluginManager(home=elsewhere, discover_plugins=False)
    seen: dict[str, object] = {}
    manager.add_plugin(lambda ctx: seen.update(ctx.state.items()), "counter")
    manager.load()
    assert seen == {"count": 41, "name": "zebra"}


def test_a_migration_killed_mid_way_resumes_and_never_copies_a_row_twice(home: Path, pg_url: str) -> None:
    fill(home, sessions=400, messages=30)  # 12,000 messages: several batches
    migration = subprocess.Popen([HERMES, "state", "migrate", "--to", pg_url], stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True, env=os.environ.copy())
    assert migration.stderr is not None
    for line in migration.stderr:
        if "messages:" in line:  # a batch of messages is in: kill it now
            migration.send_signal(signal.SIGKILL)
            break
    migration.wait(60)
    migration.stdout.close()  # type: ignore[union-attr]
    migration.stderr.close()
    assert migration.returncode == -signal.SIGKILL
    done = json.loads(hermes("state", "migrate", "--to", pg_url, "--json").stdout)
    totals = {row["table"]: row["total"] for row in done["copied"]}
    assert totals["messages"] == 12_000 and totals["usage"] == 400 and totals["tool_calls"] == 400
    import psycopg

    with psycopg.connect(pg_url) as conn:
        counts = {table: conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
                  for table in ("sessions", "messages", "usage", "tool_calls", "origins")}
    assert counts == {"sessions": 400, "messages": 12_000, "usage": 400, "tool_calls": 400, "origins": 400}


def test_a_bad_target_is_one_line_without_its_password(home: Path, pg_url: str) -> None:
    fill(home, sessions=1, messages=2)
    wrong = pg_url.replace(pg_url.split(":")[2].split("@")[0], "not-the-password")
    done = hermes("state", "migrate", "--to", wrong, check=1)
    assert done.stderr.count("\n") == 1 and "wrong password" in done.stderr and "not-the-password" not in done.stderr
    assert "must start with postgresql://" in hermes("state", "migrate", "--to", "mysql://x/y", check=1).stderr
