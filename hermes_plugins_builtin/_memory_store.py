"""The built-in memory provider's store: SQLite with an FTS5 index, one file under `$HERMES_HOME`.

Safe for several processes at once (WAL, a busy timeout, short `BEGIN IMMEDIATE` writes);
created on the first write; a file that is not a readable database is reported, never
replaced. Any text is a valid search query: it is searched as plain words, never parsed as
FTS5 syntax.
"""

from __future__ import annotations

import hashlib
import json
import random
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import NamedTuple

from hermes_core._errors import MemoryStoreError

__all__ = ["MAX_CONTENT_CHARS", "MAX_TAGS", "Memory", "MemoryStore", "phrases"]

MAX_CONTENT_CHARS = 10_000
MAX_TAGS = 16
MAX_QUERY_TERMS = 32
SUBSTRING_FALLBACK_CHARS = 1_000  # a query with no FTS hit, at most this long, may be tried as a substring
COMMON_MIN_MEMORIES = 1_000  # a word in at least this many memories, and in at least
COMMON_FRACTION = 0.02  # this fraction of them, is too common to rank by
SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS memories (
    id INTEGER PRIMARY KEY,
    content TEXT NOT NULL,
    tags TEXT NOT NULL DEFAULT '[]',
    digest TEXT NOT NULL,
    session_id TEXT NOT NULL DEFAULT '',
    created REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS memories_digest ON memories(digest);
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
_CORRUPT = ("file is not a database", "malformed", "not a database", "file is encrypted")


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


def phrases(query: str) -> list[str]:
    """`query` as FTS5 phrases that cannot be a syntax error: each whitespace-separated chunk
    quoted (FTS5 tokenizes inside the quotes the way it tokenized the memories)."""
    terms: list[str] = []
    seen: set[str] = set()
    for chunk in query.replace("\x00", " ").split():
        key = chunk.casefold()
        if key not in seen:
            seen.add(key)
            terms.append('"' + chunk.replace('"', '""') + '"')
        if len(terms) == MAX_QUERY_TERMS:
            break
    return terms


def _needs_substring_search(query: str) -> bool:
    """Whether a query FTS5 found nothing for may still be in a memory as a substring: text in
    scripts written without spaces (CJK), or with no letters or digits at all (emoji, symbols)."""
    return len(query) <= SUBSTRING_FALLBACK_CHARS and (not query.isascii() or not any(c.isalnum() for c in query))


def _digest(content: str) -> str:
    return hashlib.sha256(content.encode("utf-8", "surrogatepass")).hexdigest()[:32]


class MemoryStore:
    """The memories in one SQLite file. Thread-safe; one connection, opened on first use."""

    def __init__(self, path: Path, *, busy_timeout: float = 10.0) -> None:
        self.path = Path(path)
        self._busy_timeout = busy_timeout
        self._db: sqlite3.Connection | None = None
        self._lock = threading.RLock()

    # -- opening ------------------------------------------------------------------------

    def _fail(self, exc: sqlite3.Error, doing: str) -> MemoryStoreError:
        text = str(exc)
        if isinstance(exc, sqlite3.DatabaseError) and any(mark in text.lower() for mark in _CORRUPT):
            return MemoryStoreError(
                f"the memory database {self.path} is not a readable SQLite database ({text}); it was left "
                "untouched: move it aside (or restore it from a backup) and a new one is created on the next save",
                path=self.path,
            )
        if _busy(exc):
            return MemoryStoreError(
                f"the memory database {self.path} stayed locked by another process while {doing} "
                f"(waited up to {self._busy_timeout:g} s); try again",
                path=self.path,
            )
        return MemoryStoreError(f"the memory database {self.path} failed while {doing}: {text}", path=self.path)

    def _open(self, create: bool) -> sqlite3.Connection | None:
        """The connection, opened (and the schema created) on first use; retried while another
        process holds the lock it needs, up to the busy timeout."""
        if self._db is not None:
            return self._db
        if not create and not self.path.exists():
            return None
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise MemoryStoreError(f"cannot create the folder of the memory database {self.path}: {exc}") from None
        deadline = time.monotonic() + self._busy_timeout
        while True:
            try:
                self._db = self._connect()
                return self._db
            except sqlite3.Error as exc:
                # Switching to WAL and creating the schema can fail at once with "locked" while
                # another process does the same, without waiting on the busy handler.
                if not _busy(exc) or time.monotonic() >= deadline:
                    raise self._fail(exc, "opening it") from None
                time.sleep(0.01 + random.random() * 0.04)

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, timeout=self._busy_timeout, isolation_level=None, check_same_thread=False)
        try:
            db.execute(f"PRAGMA busy_timeout = {int(self._busy_timeout * 1000)}")
            db.execute("PRAGMA journal_mode = WAL")
            db.execute("PRAGMA synchronous = FULL")
            version = db.execute("PRAGMA user_version").fetchone()[0]
            if version > SCHEMA_VERSION:
                raise MemoryStoreError(
                    f"the memory database {self.path} was written by a newer hermes-core (schema {version}, "
                    f"this one knows {SCHEMA_VERSION}); upgrade hermes-core",
                    path=self.path,
                )
            if version < SCHEMA_VERSION:
                db.execute("BEGIN IMMEDIATE")
                for statement in _statements(_SCHEMA):
                    db.execute(statement)
                db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
                db.execute("COMMIT")
        except BaseException:
            db.close()
            raise
        return db

    @contextmanager
    def _reading(self) -> Iterator[sqlite3.Connection | None]:
        with self._lock:
            try:
                yield self._open(create=False)
            except sqlite3.Error as exc:
                raise self._fail(exc, "reading") from None

    @contextmanager
    def _writing(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            db = self._open(create=True)
            assert db is not None
            try:
                db.execute("BEGIN IMMEDIATE")
                try:
                    yield db
                except BaseException:
                    db.execute("ROLLBACK")
                    raise
                db.execute("COMMIT")
            except sqlite3.Error as exc:
                if db.in_transaction:
                    db.execute("ROLLBACK")
                raise self._fail(exc, "writing") from None

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None

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
                    "SELECT id FROM memories WHERE digest = ? AND content = ? LIMIT 1", (digest, content)
                ).fetchone()
                if found is not None:
                    saved.append((found[0], False))
                    continue
                cursor = db.execute(
                    "INSERT INTO memories(content, tags, digest, session_id, created) VALUES (?, ?, ?, ?, ?)",
                    (content, tags, digest, session_id, now),
                )
                saved.append((int(cursor.lastrowid or 0), True))
        return saved

    def forget(self, memory_id: int) -> bool:
        """Delete one memory; False when there is none with that id."""
        with self._writing() as db:
            return db.execute("DELETE FROM memories WHERE id = ?", (memory_id,)).rowcount > 0

    # -- reading ------------------------------------------------------------------------

    def search(self, query: str, limit: int = 5) -> list[Memory]:
        """The memories that best match the words of `query` (bm25), else contain it as a substring.

        Words found in very many memories (the, and, ...) are left out of the ranking when the
        query has rarer ones: bm25 gives them almost no weight, and scoring every memory that
        contains them would make each search linear in the store's size.
        """
        terms = phrases(query)
        needle = query.strip()
        with self._reading() as db:
            if db is None:
                return []
            rows = self._ranked(db, terms, limit) if terms else []
            if not rows and needle and _needs_substring_search(needle):
                rows = db.execute(
                    "SELECT id, content, tags, created, 0.0 FROM memories WHERE instr(content, ?) > 0 "
                    "ORDER BY id DESC LIMIT ?",
                    (needle, limit),
                ).fetchall()
        return [_memory(row) for row in rows]

    @staticmethod
    def _ranked(db: sqlite3.Connection, terms: list[str], limit: int) -> list[tuple[int, str, str, float, float]]:
        def run(expression: str) -> list[tuple[int, str, str, float, float]]:
            return db.execute(
                "SELECT m.id, m.content, m.tags, m.created, hit.score FROM ("
                "  SELECT rowid, bm25(memories_fts, 1.0, 0.5) AS score FROM memories_fts"
                "  WHERE memories_fts MATCH ? ORDER BY score LIMIT ?"
                ") AS hit JOIN memories AS m ON m.id = hit.rowid ORDER BY hit.score, m.id DESC",
                (expression, limit),
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
                "SELECT id, content, tags, created, 0.0 FROM memories ORDER BY id DESC LIMIT ?", (limit,)
            ).fetchall()
        return [_memory(row) for row in rows]

    def get(self, memory_id: int) -> Memory | None:
        with self._reading() as db:
            row = None if db is None else db.execute(
                "SELECT id, content, tags, created, 0.0 FROM memories WHERE id = ?", (memory_id,)
            ).fetchone()
        return None if row is None else _memory(row)

    def count(self) -> int:
        with self._reading() as db:
            return 0 if db is None else int(db.execute("SELECT count(*) FROM memories").fetchone()[0])


def _busy(exc: sqlite3.Error) -> bool:
    text = str(exc).lower()
    return isinstance(exc, sqlite3.OperationalError) and ("locked" in text or "busy" in text)


def _memory(row: tuple[int, str, str, float, float]) -> Memory:
    try:
        tags = tuple(str(t) for t in json.loads(row[2]))
    except (ValueError, TypeError):
        tags = ()
    return Memory(row[0], row[1], tags, row[3], row[4])


def _statements(script: str) -> list[str]:
    """The statements of `script` (triggers keep their inner `;`)."""
    out: list[str] = []
    current: list[str] = []
    for line in script.strip().splitlines():
        current.append(line)
        joined = "\n".join(current).strip()
        if joined.endswith(";") and sqlite3.complete_statement(joined):
            out.append(joined)
            current = []
    return out
