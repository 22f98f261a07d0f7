"""The `lcm` engine's store on disk: messages stored once and whole, a full-text index brought
up to date by the search that needs it, and files written by earlier schemas kept working."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hermes_plugins_builtin.lcm import LcmEngine
from tests.helpers.lcm import engine_at, kinds_of_messages, window

# The SQL of the landed schemas, verbatim: what a file written by those versions holds.
SCHEMA_TABLES = """
CREATE TABLE IF NOT EXISTS lcm_messages (
    session_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    node_id INTEGER NOT NULL,
    role TEXT NOT NULL,
    body TEXT NOT NULL,
    text TEXT NOT NULL,
    PRIMARY KEY (session_id, seq)
);
CREATE TABLE IF NOT EXISTS lcm_nodes (
    session_id TEXT NOT NULL,
    node_id INTEGER NOT NULL,
    level INTEGER NOT NULL,
    first_seq INTEGER NOT NULL,
    last_seq INTEGER NOT NULL,
    children TEXT NOT NULL,
    parent INTEGER,
    summary TEXT NOT NULL,
    created REAL NOT NULL,
    PRIMARY KEY (session_id, node_id)
);
CREATE VIRTUAL TABLE IF NOT EXISTS lcm_fts USING fts5(
    text, content='lcm_messages', content_rowid='rowid', tokenize='porter unicode61 remove_diacritics 2'
);
"""
SCHEMA_1 = SCHEMA_TABLES + """
CREATE TRIGGER IF NOT EXISTS lcm_messages_ai AFTER INSERT ON lcm_messages BEGIN
    INSERT INTO lcm_fts(rowid, text) VALUES (new.rowid, new.text);
END;
CREATE TRIGGER IF NOT EXISTS lcm_messages_ad AFTER DELETE ON lcm_messages BEGIN
    INSERT INTO lcm_fts(lcm_fts, rowid, text) VALUES ('delete', old.rowid, old.text);
END;
"""
SCHEMA_2 = SCHEMA_TABLES + """
DROP TRIGGER IF EXISTS lcm_messages_ai;
CREATE TRIGGER IF NOT EXISTS lcm_messages_ad AFTER DELETE ON lcm_messages BEGIN
    INSERT INTO lcm_fts(lcm_fts, rowid, text) VALUES ('delete', old.rowid, old.text);
END;
"""


def message_text(message: dict) -> str:
    """What schemas 1 and 2 stored as `text` (hermes_core.message_text)."""
    from hermes_core import message_text as text

    return text(message)


def write_old_file(path: Path, version: int, session_id: str, messages: list[dict]) -> None:
    """A store as schema 1 or 2 wrote it: the messages under leaf node 1, and a parent node 2."""
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode = WAL")
    db.executescript(SCHEMA_1 if version == 1 else SCHEMA_2)
    db.execute(f"PRAGMA user_version = {version}")
    db.execute("BEGIN IMMEDIATE")
    db.executemany(
        "INSERT INTO lcm_messages(session_id, seq, node_id, role, body, text) VALUES (?, ?, ?, ?, ?, ?)",
        [(session_id, 1 + i, 1, str(m.get("role")), json.dumps(m, ensure_ascii=False, default=str), message_text(m))
         for i, m in enumerate(messages)],
    )
    if version == 2:
        db.execute("INSERT INTO lcm_fts(rowid, text) SELECT rowid, text FROM lcm_messages "
                   "WHERE session_id = ? AND seq BETWEEN ? AND ?", (session_id, 1, len(messages)))
    node = "INSERT INTO lcm_nodes(session_id, node_id, level, first_seq, last_seq, children, summary, created) " \
           "VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
    db.execute(node, (session_id, 1, 0, 1, len(messages), "[]", "the old leaf", 0.0))
    db.execute(node, (session_id, 2, 1, 1, len(messages), "[1]", "the old parent", 0.0))
    db.execute("UPDATE lcm_nodes SET parent = 2 WHERE session_id = ? AND node_id = 1", (session_id,))
    db.execute("COMMIT")
    db.close()


def grep(engine: LcmEngine, query: str, limit: int = 50) -> list[dict]:
    reply = json.loads(engine.handle_tool_call("lcm_grep", {"query": query, "limit": limit}))
    assert "error" not in reply, reply
    return reply["results"]


def expand(engine: LcmEngine, node_id: int) -> dict:
    return json.loads(engine.handle_tool_call("lcm_expand", {"node_id": node_id}))


def index_is_sound(path: Path) -> None:
    db = sqlite3.connect(path)
    db.execute("INSERT INTO lcm_fts(lcm_fts, rank) VALUES ('integrity-check', 1)")  # raises when it is not
    db.close()


def test_every_kind_of_message_comes_back_whole_with_its_keys_in_order(tmp_path: Path) -> None:
    middle = kinds_of_messages("kiwi")
    engine = engine_at(tmp_path / "lcm.db")
    engine.compress(window(middle))
    shown = [entry["message"] for entry in expand(engine, 1)["messages"]]
    assert [json.dumps(m, ensure_ascii=False) for m in shown] == [json.dumps(m, ensure_ascii=False) for m in middle]
    where = [(1, "user"), (2, "assistant"), (3, "tool"), (4, "assistant"), (6, "user"), (7, "assistant")]
    for n, (seq, role) in enumerate(where, 1):
        assert [(h["seq"], h["role"]) for h in grep(engine, f"kiwi{n}")] == [(seq, role)]
    assert [h["seq"] for h in grep(engine, "東京")] == [1]
    assert [h["seq"] for h in grep(engine, "京")] == [1]  # inside a word: the substring scan
    index_is_sound(tmp_path / "lcm.db")


def test_a_search_finds_each_stored_message_once_however_often_it_runs(tmp_path: Path) -> None:
    engine = engine_at(tmp_path / "lcm.db")
    messages = window(kinds_of_messages("fig"))
    for round_ in range(3):
        messages = engine.compress(messages[:-2] + kinds_of_messages(f"lime{round_}x") + messages[-2:])
        for _ in range(2):
            assert len(grep(engine, "fig1")) == 1
            assert len(grep(engine, f"lime{round_}x3")) == 1
    assert len(grep(engine, "lime0x1 lime1x1 lime2x1")) == 3
    index_is_sound(tmp_path / "lcm.db")


KILLED = """
import os, sys
sys.path[:0] = [{root!r}]
from tests.helpers.lcm import engine_at, kinds_of_messages, window
from pathlib import Path
engine = engine_at(Path(sys.argv[1]))
engine.compress(window(kinds_of_messages("plum")))
os._exit(9)  # gone before anything searched: the store is never closed
"""


def test_a_process_gone_right_after_compressing_leaves_every_message_searchable(tmp_path: Path) -> None:
    path = tmp_path / "lcm.db"
    root = str(Path(__file__).resolve().parents[2])
    died = subprocess.run([sys.executable, "-c", KILLED.format(root=root), str(path)], capture_output=True,
                          text=True, timeout=60)
    assert died.returncode == 9, died.stderr
    db = sqlite3.connect(path)
    assert db.execute("SELECT count(*) FROM lcm_messages").fetchone()[0] == 7
    db.close()
    engine = engine_at(path)
    for n in range(1, 7):
        assert len(grep(engine, f"plum{n}")) == 1, n
    index_is_sound(path)


@pytest.mark.parametrize("version", [1, 2])
def test_a_file_of_an_earlier_schema_keeps_its_messages_nodes_and_search(tmp_path: Path, version: int) -> None:
    path = tmp_path / "lcm.db"
    old = kinds_of_messages("pear")
    write_old_file(path, version, "s1", old)
    engine = engine_at(path)
    assert [h["seq"] for h in grep(engine, "pear3")] == [3]
    assert [entry["message"] for entry in expand(engine, 1)["messages"]] == old
    top = expand(engine, 2)
    assert (top["level"], top["children"], top["total"]) == (1, [1], len(old))

    engine.compress(window(kinds_of_messages("quince")))  # new messages after the old ones
    assert [entry["message"] for entry in expand(engine, 3)["messages"]] == kinds_of_messages("quince")
    assert expand(engine, 3)["messages"][0]["seq"] == len(old) + 1
    assert [h["seq"] for h in grep(engine, "pear4 quince4")] in ([4, 11], [11, 4])
    assert grep(engine_at(path, "s2"), "pear1") == []  # another session's store
    engine.store.close()
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA user_version").fetchone()[0] == 3
    db.close()
    index_is_sound(path)


def test_processes_opening_an_earlier_schema_file_at_once_migrate_it_once(tmp_path: Path) -> None:
    path = tmp_path / "lcm.db"
    write_old_file(path, 2, "s1", kinds_of_messages("pear"))
    script = "import sys, time; from hermes_plugins_builtin.lcm import LcmEngine; " \
             "e = LcmEngine(path=sys.argv[1]); e.on_session_start('s1'); " \
             "time.sleep(max(0.0, float(sys.argv[2]) - time.time())); print(e.get_status()['stored_messages'])"
    at = str(time.time() + 3)  # all of them open the file at that moment
    opened = [subprocess.Popen([sys.executable, "-c", script, str(path), at], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True) for _ in range(6)]
    results = [process.communicate(timeout=60) for process in opened]
    assert [out.strip() for out, _ in results] == ["7"] * 6, [err for _, err in results]
    assert [h["seq"] for h in grep(engine_at(path), "pear3")] == [3]
    index_is_sound(path)
