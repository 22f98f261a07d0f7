"""`hermes state migrate`: a home's SQLite state copied into the shared PostgreSQL database.

Each stage names what to copy (`Copy`: a SQLite file's table into a table of the shared
database, with the columns both have, plus constant columns such as the plugin a state file
belongs to). Rows go over in batches in the order the file holds them; each batch is written
with the position it reached, in one transaction, so a migration killed at any moment resumes
where it stopped and never copies a row twice. The SQLite files are only read.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from .._errors import StateStoreError
from .postgres import Postgres

__all__ = ["Copy", "migrate"]

_PROGRESS = """CREATE TABLE IF NOT EXISTS hermes_migrations (
    source TEXT NOT NULL, tbl TEXT NOT NULL, last_rowid BIGINT NOT NULL, copied BIGINT NOT NULL,
    PRIMARY KEY (source, tbl))"""


class Copy:
    """One table of a SQLite file to copy into the shared database."""

    __slots__ = ("source", "table", "target", "constants", "before", "ready")

    def __init__(self, source: Path, table: str, *, target: str | None = None,
                 constants: Mapping[str, Any] | None = None, before: str = "",
                 ready: Callable[[], None] | None = None) -> None:
        self.source, self.table, self.target = Path(source), table, target or table
        self.constants = dict(constants or {})
        self.before = before  # a statement run once before the rows (the constants its parameters)
        self.ready = ready  # makes the target's schema ready (the stage's store, opened on the database)

    @property
    def key(self) -> str:
        extra = "".join(f";{k}={v}" for k, v in sorted(self.constants.items()))
        return f"{self.source.resolve()}#{self.table}{extra}"


def _quoted(names: Iterable[str]) -> list[str]:
    """Column names quoted for both dialects (`user` and `window` are reserved words in PostgreSQL)."""
    return ['"' + name.replace('"', '""') + '"' for name in names]


def _text(value: Any) -> Any:
    """A value as PostgreSQL takes it: text cannot hold NUL, which becomes U+FFFD (as the stores write it)."""
    return value.replace("\x00", "\ufffd") if isinstance(value, str) and "\x00" in value else value


def _sqlite_columns(db: sqlite3.Connection, table: str) -> list[str] | None:
    rows = db.execute(f'PRAGMA table_info("{table}")').fetchall()
    return [str(row[1]) for row in rows] or None


def _pg_columns(tx: Any, table: str) -> dict[str, str]:
    """The writable columns of `table` in the shared database and their defaults."""
    rows = tx.execute("SELECT column_name, coalesce(column_default, '') FROM information_schema.columns "
                      "WHERE table_schema = current_schema() AND table_name = ? AND is_generated = 'NEVER'",
                      (table,)).fetchall()
    return {str(name): str(default) for name, default in rows}


def migrate(database: Postgres, copies: Iterable[Copy], *, batch: int = 2000,
            say: Callable[[str], None] = lambda line: None) -> list[dict[str, Any]]:
    """Copy every `copies` table not copied yet; one dict per table: source, table, copied (this
    run), total (all runs), skipped (rows the database already had)."""
    with database.transaction(None) as tx:
        tx.execute(_PROGRESS)
    report = []
    for copy in copies:
        if not copy.source.exists():
            continue
        if copy.ready is not None:
            copy.ready()
        report.append(_copy(database, copy, batch, say))
    return report


def _copy(database: Postgres, copy: Copy, batch: int, say: Callable[[str], None]) -> dict[str, Any]:
    try:
        source = sqlite3.connect(f"file:{copy.source}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        raise StateStoreError(f"cannot read {copy.source}: {exc}") from None
    try:
        columns = _sqlite_columns(source, copy.table)
        with database.transaction(None) as tx:
            target = _pg_columns(tx, copy.target)
            row = tx.execute("SELECT last_rowid, copied FROM hermes_migrations WHERE source = ? AND tbl = ?",
                             (copy.key, copy.target)).fetchone()
        last, total = (int(row[0]), int(row[1])) if row else (0, 0)
        done: dict[str, Any] = {"source": str(copy.source), "table": copy.table, "copied": 0, "total": total, "skipped": 0}
        if columns is None:
            return done
        if not target:
            raise StateStoreError(f"the shared database has no table {copy.target!r} to copy {copy.source}'s "
                                  f"{copy.table} into: run this version of hermes-core's hosts on it first")
        shared = [c for c in columns if c in target and c not in copy.constants]
        names = [*shared, *copy.constants]
        insert = (f"INSERT INTO {copy.target} ({', '.join(_quoted(names))}) VALUES ({', '.join('?' * len(names))}) "
                  "ON CONFLICT DO NOTHING")
        select = (f"SELECT rowid, {', '.join(_quoted(shared))} FROM \"{copy.table}\" WHERE rowid > ? "
                  "ORDER BY rowid LIMIT ?")
        constants = tuple(copy.constants.values())
        if copy.before:
            with database.transaction(None) as tx:
                tx.execute(copy.before, constants)
        while True:
            rows = source.execute(select, (last, batch)).fetchall()
            if not rows:
                break
            with database.transaction(None) as tx:
                cursor = tx.executemany(insert, [(*map(_text, row[1:]), *constants) for row in rows])
                written = max(0, cursor.rowcount) if cursor.rowcount is not None else len(rows)
                last = int(rows[-1][0])
                total += len(rows)
                tx.execute("INSERT INTO hermes_migrations (source, tbl, last_rowid, copied) VALUES (?, ?, ?, ?) "
                           "ON CONFLICT (source, tbl) DO UPDATE SET last_rowid = excluded.last_rowid, "
                           "copied = excluded.copied", (copy.key, copy.target, last, total))
            done["copied"] += len(rows)
            done["skipped"] += len(rows) - min(written, len(rows))
            say(f"{copy.source.name} {copy.table}: {total} rows")
        done["total"] = total
        _advance_sequences(database, copy.target, shared, target)
        return done
    except sqlite3.Error as exc:
        raise StateStoreError(f"cannot read {copy.source} ({copy.table}): {exc}") from None
    finally:
        source.close()


def _advance_sequences(database: Postgres, table: str, copied: list[str], target: Mapping[str, str]) -> None:
    """Serial columns given their values by the copy: their sequences moved past the largest."""
    with database.transaction(None) as tx:
        for column in copied:
            if target.get(column, "").startswith("nextval("):
                tx.execute(f'SELECT setval(pg_get_serial_sequence(?, ?), greatest((SELECT max("{column}") FROM {table}), 1))',
                           (table, column))
