"""The `lcm` engine's store: every message taken out of the window, whole, and the summary
nodes that stand for them, per session, in `$HERMES_HOME/lcm/lcm.db`."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
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
DROP TRIGGER IF EXISTS lcm_messages_ai;
CREATE TRIGGER IF NOT EXISTS lcm_messages_ad AFTER DELETE ON lcm_messages BEGIN
    INSERT INTO lcm_fts(lcm_fts, rowid, text) VALUES ('delete', old.rowid, old.text);
END;
"""


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
    schema_version = 2  # 2: messages are indexed in one statement per leaf, not by a trigger per row

    def add_leaf(self, session_id: str, messages: Sequence[dict[str, Any]], summary: str) -> Node:
        """Store `messages` whole, under a new level-0 node summarised by `summary`."""
        with self._writing() as db:
            seq = db.execute("SELECT coalesce(max(seq), 0) FROM lcm_messages WHERE session_id = ?",
                             (session_id,)).fetchone()[0]
            node_id = self._next_node(db, session_id)
            first = seq + 1
            db.executemany(
                "INSERT INTO lcm_messages(session_id, seq, node_id, role, body, text) VALUES (?, ?, ?, ?, ?, ?)",
                [(session_id, first + i, node_id, str(m.get("role")), json.dumps(m, ensure_ascii=False, default=str),
                  message_text(m)) for i, m in enumerate(messages)],
            )
            node = Node(node_id, 0, first, first + len(messages) - 1, (), summary)
            # One INSERT ... SELECT indexes the leaf ~3x faster than a trigger row by row.
            db.execute("INSERT INTO lcm_fts(rowid, text) SELECT rowid, text FROM lcm_messages "
                       "WHERE session_id = ? AND seq BETWEEN ? AND ?", (session_id, node.first_seq, node.last_seq))
            self._insert(db, session_id, node)
        return node

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
                "SELECT seq, body FROM lcm_messages WHERE session_id = ? AND seq BETWEEN ? AND ? "
                "ORDER BY seq LIMIT ? OFFSET ?", (session_id, first_seq, last_seq, limit, offset)).fetchall()
        return [(seq, json.loads(body)) for seq, body in rows]

    def grep(self, session_id: str, query: str, limit: int) -> list[dict[str, Any]]:
        """Stored messages of the session matching the words of `query`, best first."""
        terms = fts_phrases(query)
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
