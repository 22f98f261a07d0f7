"""`Store`: a stage's tables, in a SQLite file under the home or in the shared PostgreSQL database.

A stage (the session store, the API server's store, cron, ...) subclasses `Store` once and
writes its queries once, in the SQL both dialects share (`?` parameters, `INSERT ... ON
CONFLICT`, `RETURNING`, no `rowid`). With no `state.url` it is exactly the `SqliteFile` it
was: the same file, the same schema, the same transactions. With one, the same methods run on
the shared database: `_reading()` and `_writing()` hand the stage a transaction with sqlite3's
`execute` / `executemany`, and `self.dialect` tells the few places that differ (full-text
search, say) which SQL to use.

>>> class Notes(Store):
...     what, stage = "notes store", "notes"
...     schema = "CREATE TABLE IF NOT EXISTS notes (id INTEGER PRIMARY KEY, text TEXT NOT NULL);"
...     pg_schema = "CREATE TABLE IF NOT EXISTS notes (id BIGSERIAL PRIMARY KEY, text TEXT NOT NULL);"
...     def add(self, text):
...         with self._writing() as db:
...             return db.execute("INSERT INTO notes (text) VALUES (?) RETURNING id", (text,)).fetchone()[0]
>>> Notes(home / "notes.db", url=state_url(home)).add("likes tea")

Table names are one namespace in the shared database: a stage's tables must not share a name
with another stage's (tests/fleet checks it). `schema_version` counts both dialects' schemas;
`pg_upgrades[n]` takes a PostgreSQL database from version n-1 to n.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ClassVar

from .._sqlite import SqliteFile
from .migrate import Copy
from .url import StateUrl, parse_state_url

__all__ = ["Store", "pg_schema_of"]


_PG_TYPES = ((re.compile(r"\bINTEGER PRIMARY KEY\b", re.I), "BIGSERIAL PRIMARY KEY"),  # SQLite's rowid alias
             (re.compile(r"\bINTEGER\b", re.I), "BIGINT"),  # SQLite's integers are 64-bit
             (re.compile(r"\bREAL\b", re.I), "DOUBLE PRECISION"))  # and its reals doubles


def pg_schema_of(schema: str) -> str:
    """A SQLite schema of plain tables and indexes in PostgreSQL's types: the one place the two
    dialects' column types differ (`INTEGER PRIMARY KEY` a `BIGSERIAL`, `INTEGER` a `BIGINT`, `REAL`
    a `DOUBLE PRECISION`). A stage with triggers, full-text search or other dialect-bound SQL writes
    its `pg_schema` by hand."""
    for pattern, replacement in _PG_TYPES:
        schema = pattern.sub(replacement, schema)
    return schema


class Store(SqliteFile):
    """One stage's tables: in `path` (SQLite), or in the database `url` names."""

    stage: ClassVar[str] = ""
    pg_schema: ClassVar[str] = ""
    pg_upgrades: ClassVar[Mapping[int, str]] = {}
    home_file: ClassVar[str] = ""  # the stage's SQLite file under the home, for `hermes state migrate`
    migrate_tables: ClassVar[tuple[str, ...]] = ()  # its tables `hermes state migrate` copies, in order

    @classmethod
    def copies(cls, home: Path) -> list[Copy]:
        """What `hermes state migrate` copies of `home` for this stage: by default `migrate_tables`
        of `home_file`, each into the table of the same name (a stage with other files says so)."""
        return [Copy(Path(home) / cls.home_file, table) for table in cls.migrate_tables] if cls.home_file else []

    @classmethod
    def import_home(cls, home: Path, url: StateUrl) -> str | None:
        """For `hermes state migrate`: import what `home` keeps for this stage in files that are no
        SQLite tables (Hermes' JSON files), as a host does on first use; a line saying what, or None."""
        return None

    def __init__(self, path: Path, *, url: StateUrl | str | None = None, busy_timeout: float = 10.0,
                 pool_size: int = 8) -> None:
        super().__init__(path, busy_timeout=busy_timeout)
        self.url = parse_state_url(url) if isinstance(url, str) else url
        self._pg: Any = None
        if self.url is not None:
            if not self.stage or not self.pg_schema:
                raise TypeError(f"{type(self).__name__} keeps no tables in a shared database (no stage or pg_schema)")
            from .postgres import postgres

            self._pg = postgres(self.url, pool_size=pool_size)

    @property
    def dialect(self) -> str:
        """`sqlite` or `postgresql`: where the stage's tables are."""
        return "sqlite" if self._pg is None else "postgresql"

    @property
    def location(self) -> str:
        """Where the tables are, for people: the file, or the database URL with its password masked."""
        return str(self.path) if self.url is None else self.url.masked

    def exists(self) -> bool:
        """Whether anything was ever stored (SQLite: the file exists; the shared database: always)."""
        return self._pg is not None or self.path.exists()

    @contextmanager
    def _reading(self) -> Iterator[Any]:
        if self._pg is None:
            with super()._reading() as db:
                yield db
            return
        with self._lock:
            if self._queued:
                self._flush()
        with self._pg.transaction(self, read_only=True) as tx:
            yield tx

    @contextmanager
    def _writing(self) -> Iterator[Any]:
        if self._pg is None:
            with super()._writing() as db:
                yield db
            return
        try:
            with self._pg.transaction(self) as tx:
                yield tx
        except BaseException:
            self._rolled_back()
            raise

    def close(self) -> None:
        if self._pg is None:
            super().close()
            return
        with self._lock:
            if self._queued:
                self._flush()
