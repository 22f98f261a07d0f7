"""The `lcm` engine's store: every message taken out of the window, whole, and the summary
nodes that stand for them, per session, in `$HERMES_HOME/lcm/lcm.db`.

A message is stored once: a message whose content is a string keeps that string in the `text`
column only (its `body` holds the rest, with `content` null, and `content_in_text` says so);
any other message keeps its JSON in `body` and its readable text in `text`. The full-text
index (FTS5 over `text`, external content) is brought up to date by the search that needs it:
`lcm_indexed.upto` is the last row indexed, and every row after it is indexed before a search,
so a process that dies between storing and indexing loses nothing.

Durability: WAL with `synchronous=NORMAL`. A committed compression survives a crash of the
process (the WAL is in the operating system's hands); a power loss or an operating system
crash can roll back the latest commits the operating system had not yet written to disk (on
Linux, typically up to the last ~30 seconds); the file stays consistent and what came before
is whole. The window a rolled-back compression returned then names nodes the store no longer
has: `lcm_expand` says so, and the next compression stores those messages again if they are
still in the window.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from hermes_core import SqliteFile, fts_phrases, message_text

__all__ = ["LcmStore", "Node"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS lcm_messages (
    session_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    node_id INTEGER NOT NULL,
    role TEXT NOT NULL,
    body TEXT NOT NULL,
    text TEXT NOT NULL,
    content_in_text INTEGER NOT NULL DEFAULT 0,
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
CREATE TABLE IF NOT EXISTS lcm_indexed (upto INTEGER NOT NULL);
INSERT INTO lcm_indexed(upto) SELECT coalesce(max(rowid), 0) FROM lcm_messages
    WHERE NOT EXISTS (SELECT 1 FROM lcm_indexed);
DROP TRIGGER IF EXISTS lcm_messages_ai;
DROP TRIGGER IF EXISTS lcm_messages_ad;
CREATE TRIGGER lcm_messages_ad AFTER DELETE ON lcm_messages
WHEN old.rowid <= (SELECT upto FROM lcm_indexed) BEGIN
    INSERT INTO lcm_fts(lcm_fts, rowid, text) VALUES ('delete', old.rowid, old.text);
END;
"""
# Schema 1 indexed by a trigger per row, schema 2 in one statement per leaf: both indexed every
# row as it was stored, so `lcm_indexed` starts at their last row, and `content_in_text` is
# added (0: the body is the whole message, as every row of theirs is).

_encode = json.JSONEncoder(ensure_ascii=False, default=str).encode


def _row(message: Mapping[str, Any]) -> tuple[str, str, str, int]:
    """(role, body, text, content_in_text) of a message, serialised once."""
    content = message.get("content")
    if isinstance(content, str) and not isinstance(message.get("tool_calls"), list):
        return str(message.get("role")), _encode({**message, "content": None}), content, 1
    return str(message.get("role")), _encode(message), message_text(message), 0


class Node(NamedTuple):
    """A summary node: a span of stored messages (level 0), or of child nodes (level ≥ 1)."""

    node_id: int
    level: int
    first_seq: int
    last_seq: int
    children: tuple[int, ...]
    summary: str


class LcmStore(SqliteFile):
    """Stored messages and summary nodes of every session, in one SQLite file."""

    what = "lcm context store"
    schema = _SCHEMA
    schema_version = 3  # 3: content stored once, indexed by the search that needs it; 2: indexed per leaf
    synchronous = "NORMAL"

    def _connect(self) -> sqlite3.Connection:
        db = super()._connect()
        try:
            if not self._has_content_in_text(db):  # a schema-1 or -2 file
                db.execute("BEGIN IMMEDIATE")
                if not self._has_content_in_text(db):  # another process may have added it meanwhile
                    db.execute("ALTER TABLE lcm_messages ADD COLUMN content_in_text INTEGER NOT NULL DEFAULT 0")
                db.execute("COMMIT")
        except BaseException:
            db.close()
            raise
        return db

    @staticmethod
    def _has_content_in_text(db: sqlite3.Connection) -> bool:
        return any(row[1] == "content_in_text" for row in db.execute("PRAGMA table_info(lcm_messages)"))

    def add_leaf(self, session_id: str, messages: Sequence[Mapping[str, Any]], summary: str) -> Node:
        """Store `messages` whole, under a new level-0 node summarised by `summary`."""
        rows = [_row(m) for m in messages]
        with self._writing() as db:
            seq, rowid = db.execute(
                "SELECT (SELECT coalesce(max(seq), 0) FROM lcm_messages WHERE session_id = ?), "
                "max((SELECT coalesce(max(rowid), 0) FROM lcm_messages), (SELECT upto FROM lcm_indexed))",
                (session_id,)).fetchone()
            node_id = self._next_node(db, session_id)
            first = seq + 1
            # Row ids above `upto` (even after a delete of the last rows) are the ones to index.
            db.executemany(
                "INSERT INTO lcm_messages(rowid, session_id, seq, node_id, role, body, text, content_in_text) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [(rowid + i, session_id, seq + i, node_id, *row) for i, row in enumerate(rows, 1)],
            )
            node = Node(node_id, 0, first, first + len(messages) - 1, (), summary)
            self._insert(db, session_id, node)
        return node

    def index(self) -> int:
        """Index the stored messages the full-text index does not have yet (every session's);
        how many. A search calls it first."""
        with self._reading() as db:
            if db is None or not db.execute(
                    "SELECT (SELECT max(rowid) FROM lcm_messages) > (SELECT upto FROM lcm_indexed)").fetchone()[0]:
                return 0
        with self._writing() as db:
            upto = db.execute("SELECT upto FROM lcm_indexed").fetchone()[0]
            added = db.execute("INSERT INTO lcm_fts(rowid, text) SELECT rowid, text FROM lcm_messages WHERE rowid > ?",
                               (upto,)).rowcount
            db.execute("UPDATE lcm_indexed SET upto = max(upto, (SELECT coalesce(max(rowid), 0) FROM lcm_messages))")
        return int(added)

    def add_parent(self, session_id: str, children: Sequence[Node], summary: str) -> Node:
        """A new node standing for `children` (a summary of summaries)."""
        with self._writing() as db:
            node = Node(self._next_node(db, session_id), max(c.level for c in children) + 1,
                        min(c.first_seq for c in children), max(c.last_seq for c in children),
                        tuple(c.node_id for c in children), summary)
            self._insert(db, session_id, node)
            db.executemany("UPDATE lcm_nodes SET parent = ? WHERE session_id = ? AND node_id = ?",
                           [(node.node_id, session_id, c.node_id) for c in children])
        return node

    @staticmethod
    def _next_node(db: Any, session_id: str) -> int:
        return int(db.execute("SELECT coalesce(max(node_id), 0) + 1 FROM lcm_nodes WHERE session_id = ?",
                              (session_id,)).fetchone()[0])

    @staticmethod
    def _insert(db: Any, session_id: str, node: Node) -> None:
        db.execute(
            "INSERT INTO lcm_nodes(session_id, node_id, level, first_seq, last_seq, children, summary, created) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (session_id, node.node_id, node.level, node.first_seq, node.last_seq, json.dumps(node.children),
             node.summary, time.time()),
        )

    def node(self, session_id: str, node_id: int) -> Node | None:
        with self._reading() as db:
            row = None if db is None else db.execute(
                "SELECT node_id, level, first_seq, last_seq, children, summary FROM lcm_nodes "
                "WHERE session_id = ? AND node_id = ?", (session_id, node_id)).fetchone()
        if row is None:
            return None
        return Node(row[0], row[1], row[2], row[3], tuple(json.loads(row[4])), row[5])

    def messages(self, session_id: str, first_seq: int, last_seq: int, offset: int, limit: int
                 ) -> list[tuple[int, dict[str, Any]]]:
        """(seq, message) of the stored messages in a span, from `offset`, at most `limit`."""
        with self._reading() as db:
            rows = [] if db is None else db.execute(
                "SELECT seq, body, text, content_in_text FROM lcm_messages WHERE session_id = ? AND seq BETWEEN ? AND ? "
                "ORDER BY seq LIMIT ? OFFSET ?", (session_id, first_seq, last_seq, limit, offset)).fetchall()
        found: list[tuple[int, dict[str, Any]]] = []
        for seq, body, text, content_in_text in rows:
            message = json.loads(body)
            if content_in_text:
                message["content"] = text
            found.append((seq, message))
        return found

    def grep(self, session_id: str, query: str, limit: int) -> list[dict[str, Any]]:
        """Stored messages of the session matching the words of `query`, best first."""
        terms = fts_phrases(query)
        if terms:
            self.index()
        with self._reading() as db:
            if db is None or not terms:
                return []
            rows = db.execute(
                "SELECT m.seq, m.node_id, m.role, snippet(lcm_fts, 0, '[', ']', '…', 16) "
                "FROM lcm_fts JOIN lcm_messages AS m ON m.rowid = lcm_fts.rowid "
                "WHERE lcm_fts MATCH ? AND m.session_id = ? ORDER BY bm25(lcm_fts) LIMIT ?",
                (" OR ".join(terms), session_id, limit),
            ).fetchall()
            if not rows and not query.isascii():  # text without spaces (CJK): a substring scan
                rows = db.execute(
                    "SELECT seq, node_id, role, substr(text, max(instr(text, ?) - 60, 1), 160) FROM lcm_messages "
                    "WHERE session_id = ? AND instr(text, ?) > 0 ORDER BY seq LIMIT ?",
                    (query.strip(), session_id, query.strip(), limit),
                ).fetchall()
        return [{"seq": r[0], "node_id": r[1], "role": r[2], "snippet": r[3]} for r in rows]

    def counts(self, session_id: str) -> tuple[int, int]:
        """How many messages and nodes the session has stored."""
        with self._reading() as db:
            if db is None:
                return 0, 0
            messages = db.execute("SELECT count(*) FROM lcm_messages WHERE session_id = ?", (session_id,)).fetchone()
            nodes = db.execute("SELECT count(*) FROM lcm_nodes WHERE session_id = ?", (session_id,)).fetchone()
        return int(messages[0]), int(nodes[0])
