"""The built-in memory provider's store: SQLite with an FTS5 index, one file under `$HERMES_HOME`.

Each memory belongs to an owner (a caller of a server: see `owner_of` in `memory.py`), or to
none ("": the home's own, what the single-user CLI sees); a `MemoryStore` reads, finds and
deletes only its owner's. Safe for several processes at once (WAL, a busy timeout, short
`BEGIN IMMEDIATE` writes); created on the first write; a file that is not a readable database
is reported, never replaced. Any text is a valid search query: it is searched as plain words,
never parsed as FTS5 syntax.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import NamedTuple

from hermes_core import SqliteFile, fts_phrases

__all__ = ["MAX_CONTENT_CHARS", "MAX_TAGS", "Memory", "MemoryStore"]

MAX_CONTENT_CHARS = 10_000
MAX_TAGS = 16
SUBSTRING_FALLBACK_CHARS = 1_000  # a query with no FTS hit, at most this long, may be tried as a substring
COMMON_MIN_MEMORIES = 1_000  # a word in at least this many memories, and in at least
COMMON_FRACTION = 0.02  # this fraction of them, is too common to rank by
SCHEMA_VERSION = 2  # 2: memories have an owner (rows of schema 1 have none: the home's own)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS memories (
    id INTEGER PRIMARY KEY,
    content TEXT NOT NULL,
    tags TEXT NOT NULL DEFAULT '[]',
    digest TEXT NOT NULL,
    session_id TEXT NOT NULL DEFAULT '',
    created REAL NOT NULL,
    owner TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS memories_owner ON memories(owner, id);
CREATE INDEX IF NOT EXISTS memories_owner_digest ON memories(owner, digest);
CREATE VIRTUAL TABLE IF NOT EXISTS memories_fts USING fts5(
    content, tags, content='memories', content_rowid='id',
    tokenize='porter unicode61 remove_diacritics 2'
);
CREATE TRIGGER IF NOT EXISTS memories_ai AFTER INSERT ON memories BEGIN
    INSERT INTO memories_fts(rowid, content, tags) VALUES (new.id, new.content, new.tags);
END;
CREATE TRIGGER IF NOT EXISTS memories_ad AFTER DELETE ON memories BEGIN
    INSERT INTO memories_fts(memories_fts, rowid, content, tags) VALUES ('delete', old.id, old.content, old.tags);
END;
"""


class Memory(NamedTuple):
    """One stored memory."""

    id: int
    content: str
    tags: tuple[str, ...]
    created: float
    score: float = 0.0

    def as_json(self) -> dict[str, object]:
        when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.created))
        return {"id": self.id, "content": self.content, "tags": list(self.tags), "created": when}


def _needs_substring_search(query: str) -> bool:
    """Whether a query FTS5 found nothing for may still be in a memory as a substring: text in
    scripts written without spaces (CJK), or with no letters or digits at all (emoji, symbols)."""
    return len(query) <= SUBSTRING_FALLBACK_CHARS and (not query.isascii() or not any(c.isalnum() for c in query))


def _digest(content: str) -> str:
    return hashlib.sha256(content.encode("utf-8", "surrogatepass")).hexdigest()[:32]


class MemoryStore(SqliteFile):
    """The memories of `owner` ("": the home's own) in one SQLite file. Thread-safe; one
    connection, opened on first use."""

    what = "memory database"
    schema = _SCHEMA
    schema_version = SCHEMA_VERSION
    upgrades = {2: "ALTER TABLE memories ADD COLUMN owner TEXT NOT NULL DEFAULT '';\n"
                   "DROP INDEX IF EXISTS memories_digest;"}  # its place is taken by memories_owner_digest

    def __init__(self, path: Path, *, owner: str = "", busy_timeout: float = 10.0) -> None:
        super().__init__(path, busy_timeout=busy_timeout)
        self.owner = owner

    # -- writing ------------------------------------------------------------------------

    def save(self, content: str, tags: Sequence[str] = (), *, session_id: str = "") -> tuple[int, bool]:
        """Store `content`; returns its id and whether it is new (the same text is stored once)."""
        return self.save_many([(content, tags)], session_id=session_id)[0]

    def save_many(
        self, items: Iterable[tuple[str, Sequence[str]]], *, session_id: str = ""
    ) -> list[tuple[int, bool]]:
        """Store many memories in one transaction (an import); returns (id, new) for each."""
        rows = [(content, json.dumps(list(tags), ensure_ascii=False), _digest(content)) for content, tags in items]
        saved: list[tuple[int, bool]] = []
        now = time.time()
        with self._writing() as db:
            for content, tags, digest in rows:
                found = db.execute(
                    "SELECT id FROM memories WHERE digest = ? AND content = ? AND owner = ? LIMIT 1",
                    (digest, content, self.owner),
                ).fetchone()
                if found is not None:
                    saved.append((found[0], False))
                    continue
                cursor = db.execute(
                    "INSERT INTO memories(content, tags, digest, session_id, created, owner) VALUES (?, ?, ?, ?, ?, ?)",
                    (content, tags, digest, session_id, now, self.owner),
                )
                saved.append((int(cursor.lastrowid or 0), True))
        return saved

    def forget(self, memory_id: int) -> bool:
        """Delete one of the owner's memories; False when the owner has none with that id."""
        with self._writing() as db:
            return db.execute("DELETE FROM memories WHERE id = ? AND owner = ?", (memory_id, self.owner)).rowcount > 0

    # -- reading ------------------------------------------------------------------------

    def search(self, query: str, limit: int = 5) -> list[Memory]:
        """The memories that best match the words of `query` (bm25), else contain it as a substring.

        Words found in very many memories (the, and, ...) are left out of the ranking when the
        query has rarer ones: bm25 gives them almost no weight, and scoring every memory that
        contains them would make each search linear in the store's size.
        """
        terms = fts_phrases(query)
        needle = query.strip()
        with self._reading() as db:
            if db is None:
                return []
            rows = self._ranked(db, terms, limit) if terms else []
            if not rows and needle and _needs_substring_search(needle):
                rows = db.execute(
                    "SELECT id, content, tags, created, 0.0 FROM memories WHERE owner = ? AND instr(content, ?) > 0 "
                    "ORDER BY id DESC LIMIT ?",
                    (self.owner, needle, limit),
                ).fetchall()
        return [_memory(row) for row in rows]

    def _ranked(self, db: sqlite3.Connection, terms: list[str], limit: int) -> list[tuple[int, str, str, float, float]]:
        # A store that holds only this owner's memories (one home, one user) is ranked as it was
        # before owners; the owner is still checked on the few rows found, so that a memory of
        # another owner saved meanwhile is never among them. Otherwise each hit's owner is looked
        # up in the owner index before ranking.
        alone = db.execute(
            "SELECT NOT EXISTS (SELECT 1 FROM memories WHERE owner < ?) AND NOT EXISTS "
            "(SELECT 1 FROM memories WHERE owner > ?)", (self.owner, self.owner)).fetchone()[0]
        hits = ("SELECT rowid, bm25(memories_fts, 1.0, 0.5) AS score FROM memories_fts"
                "  WHERE memories_fts MATCH ? ORDER BY score LIMIT ?") if alone else (
                "SELECT memories_fts.rowid AS rowid, bm25(memories_fts, 1.0, 0.5) AS score FROM memories_fts"
                "  JOIN memories AS o INDEXED BY memories_owner ON o.owner = ? AND o.id = memories_fts.rowid"
                "  WHERE memories_fts MATCH ? ORDER BY score LIMIT ?")

        def run(expression: str) -> list[tuple[int, str, str, float, float]]:
            return db.execute(
                f"SELECT m.id, m.content, m.tags, m.created, hit.score FROM ({hits}) AS hit"
                "  JOIN memories AS m ON m.id = hit.rowid WHERE m.owner = ? ORDER BY hit.score, m.id DESC",
                (expression, limit, self.owner) if alone else (self.owner, expression, limit, self.owner),
            ).fetchall()

        size = db.execute("SELECT max(id) FROM memories").fetchone()[0] or 0
        common_at = max(COMMON_MIN_MEMORIES, int(size * COMMON_FRACTION))
        rare = [
            term for term in terms
            if db.execute(
                "SELECT count(*) FROM (SELECT 1 FROM memories_fts WHERE memories_fts MATCH ? LIMIT ?)",
                (term, common_at),
            ).fetchone()[0] < common_at
        ]
        if rare:
            return run(" OR ".join(rare))
        return run(" AND ".join(terms)) or run(" OR ".join(terms))

    def recent(self, limit: int) -> list[Memory]:
        with self._reading() as db:
            if db is None:
                return []
            rows = db.execute(
                "SELECT id, content, tags, created, 0.0 FROM memories WHERE owner = ? ORDER BY id DESC LIMIT ?",
                (self.owner, limit),
            ).fetchall()
        return [_memory(row) for row in rows]

    def get(self, memory_id: int) -> Memory | None:
        with self._reading() as db:
            row = None if db is None else db.execute(
                "SELECT id, content, tags, created, 0.0 FROM memories WHERE id = ? AND owner = ?",
                (memory_id, self.owner),
            ).fetchone()
        return None if row is None else _memory(row)

    def count(self) -> int:
        with self._reading() as db:
            return 0 if db is None else int(
                db.execute("SELECT count(*) FROM memories WHERE owner = ?", (self.owner,)).fetchone()[0])


def _memory(row: tuple[int, str, str, float, float]) -> Memory:
    try:
        tags = tuple(str(t) for t in json.loads(row[2]))
    except (ValueError, TypeError):
        tags = ()
    return Memory(row[0], row[1], tags, row[3], row[4])
