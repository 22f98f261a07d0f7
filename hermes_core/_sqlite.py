"""A SQLite file a plugin (or the host) keeps under `$HERMES_HOME`, and FTS5 queries from any text.

Public on purpose: the built-in memory provider, the `lcm` engine and the session store use
it, and a provider author storing memories in SQLite needs the same care. `SqliteFile` is
opened on first use, safe for several processes (WAL, a busy timeout, short `BEGIN IMMEDIATE`
writes), created with its schema on the first write, and never replaced when it cannot be
read; `fts_phrases` turns any user text into an FTS5 query that cannot be a syntax error.

>>> class Notes(SqliteFile):
...     what = "notes database"
...     schema = "CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT NOT NULL);"
...     def add(self, text):
...         with self._writing() as db:        # one BEGIN IMMEDIATE transaction
...             return db.execute("INSERT INTO notes (text) VALUES (?)", (text,)).lastrowid
>>> Notes(ctx.hermes_home / "notes" / "notes.db").add("likes tea")

Subclasses read with `self._reading()` (None until the file exists) and write with
`self._writing()`, or with `self._write(fn)`, which a `with self._batch():` block defers so
that every write made inside it is committed in one transaction when the block ends.

A new version of the schema bumps `schema_version` and, when `CREATE ... IF NOT EXISTS` is not
enough (a column added to a table), says in `upgrades` what brings an older file up to it:

>>> class Notes(SqliteFile):
...     schema = "CREATE TABLE IF NOT EXISTS notes (id INTEGER PRIMARY KEY, text TEXT NOT NULL, tag TEXT NOT NULL);"
...     schema_version = 2
...     upgrades = {2: "ALTER TABLE notes ADD COLUMN tag TEXT NOT NULL DEFAULT '';"}
"""

from __future__ import annotations

import random
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from ._errors import MemoryStoreError

__all__ = ["SqliteFile", "fts_phrases"]

MAX_QUERY_TERMS = 32
_CORRUPT = ("file is not a database", "malformed", "not a database", "file is encrypted")


def fts_phrases(query: str) -> list[str]:
    """`query` as FTS5 phrases that cannot be a syntax error: each whitespace-separated chunk
    quoted (FTS5 tokenizes inside the quotes the way it tokenized the stored text)."""
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


def _busy(exc: sqlite3.Error) -> bool:
    text = str(exc).lower()
    return isinstance(exc, sqlite3.OperationalError) and ("locked" in text or "busy" in text)


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


class SqliteFile:
    """One SQLite file with a schema. Thread-safe; one connection, opened on first use.

    Subclasses set `what` (how errors name the file), `schema` and `schema_version`, and may
    set `synchronous` to "NORMAL": in WAL mode a commit then survives a crash of the process
    but not a power loss (the last commits before one can be rolled back; the file stays
    consistent), and costs no fsync.

    `upgrades[n]` is the SQL that brings a file of version n-1 up to n, where `CREATE ... IF
    NOT EXISTS` is not enough (a column added to a table). Opening a file older than
    `schema_version` runs, in one transaction, its upgrades in order, then `schema` (so it should
    be `CREATE ... IF NOT EXISTS`); a new file gets `schema` alone.
    """

    what = "database"
    schema = ""
    schema_version = 1
    upgrades: Mapping[int, str] = {}
    synchronous = "FULL"

    def __init__(self, path: Path, *, busy_timeout: float = 10.0) -> None:
        self.path = Path(path)
        self._busy_timeout = busy_timeout
        self._db: sqlite3.Connection | None = None
        self._lock = threading.RLock()
        self._queued: list[Callable[[sqlite3.Connection], object]] | None = None

    def _fail(self, exc: sqlite3.Error, doing: str) -> MemoryStoreError:
        text = str(exc)
        if isinstance(exc, sqlite3.DatabaseError) and any(mark in text.lower() for mark in _CORRUPT):
            return MemoryStoreError(
                f"the {self.what} {self.path} is not a readable SQLite database ({text}); it was left "
                "untouched: move it aside (or restore it from a backup) and a new one is created on the next save",
                path=self.path,
            )
        if _busy(exc):
            return MemoryStoreError(
                f"the {self.what} {self.path} stayed locked by another process while {doing} "
                f"(waited up to {self._busy_timeout:g} s); try again",
                path=self.path,
            )
        return MemoryStoreError(f"the {self.what} {self.path} failed while {doing}: {text}", path=self.path)

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
            raise MemoryStoreError(f"cannot create the folder of the {self.what} {self.path}: {exc}") from None
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
            db.execute(f"PRAGMA synchronous = {self.synchronous}")
            version = db.execute("PRAGMA user_version").fetchone()[0]
            if version > self.schema_version:
                raise MemoryStoreError(
                    f"the {self.what} {self.path} was written by a newer hermes-core (schema {version}, "
                    f"this one knows {self.schema_version}); upgrade hermes-core",
                    path=self.path,
                )
            if version < self.schema_version:
                db.execute("BEGIN IMMEDIATE")
                # another process may have created the schema while this one waited for the lock
                version = db.execute("PRAGMA user_version").fetchone()[0]
                if version < self.schema_version:
                    steps = [self.upgrades[v] for v in sorted(self.upgrades)
                             if version < v <= self.schema_version] if version else []
                    for script in [*steps, self.schema]:
                        for statement in _statements(script):
                            db.execute(statement)
                    db.execute(f"PRAGMA user_version = {self.schema_version}")
                db.execute("COMMIT")
        except BaseException:
            db.close()
            raise
        return db

    @contextmanager
    def _reading(self) -> Iterator[sqlite3.Connection | None]:
        """The connection for reads, or None when the file does not exist yet (writes deferred
        by an open `_batch()` are committed first, so a read sees them)."""
        with self._lock:
            if self._queued:
                self._flush()
            try:
                yield self._open(create=False)
            except sqlite3.Error as exc:
                raise self._fail(exc, "reading") from None

    @contextmanager
    def _writing(self) -> Iterator[sqlite3.Connection]:
        """One write transaction (`BEGIN IMMEDIATE`), committed when the block ends."""
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
                self._rolled_back()
                raise self._fail(exc, "writing") from None
            except BaseException:
                self._rolled_back()
                raise

    def _rolled_back(self) -> None:
        """Called when a write transaction was rolled back: forget what it was to write."""

    def _write(self, write: Callable[[sqlite3.Connection], object]) -> None:
        """`write(db)` in a write transaction: now, or at the end of the open `_batch()`."""
        with self._lock:
            if self._queued is not None:
                self._queued.append(write)
                return
            with self._writing() as db:
                write(db)

    @contextmanager
    def _batch(self) -> Iterator[None]:
        """Defer the `_write`s made inside the block and commit them in one transaction when it
        ends, also when it ends with an exception (what was written stays written). Nested
        blocks (and writes from other threads meanwhile) join the outermost one."""
        with self._lock:
            outer = self._queued is None
            if outer:
                self._queued = []
        try:
            yield
        finally:
            if outer:
                with self._lock:
                    try:
                        self._flush()
                    finally:
                        self._queued = None

    def _flush(self) -> None:
        queued, self._queued = self._queued, []
        if queued:
            with self._writing() as db:
                for write in queued:
                    write(db)

    def close(self) -> None:
        with self._lock:
            if self._queued:
                self._flush()
            if self._db is not None:
                self._db.close()
                self._db = None
