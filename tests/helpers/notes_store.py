"""A small stage for the floor's tests: one table, queries written once for SQLite and PostgreSQL
(imported by the tests and by the host processes they start)."""

from __future__ import annotations

from hermes_core.hosting import Store


class Notes(Store):
    what, stage = "notes store", "notes_test"
    schema = "CREATE TABLE IF NOT EXISTS notes (id INTEGER PRIMARY KEY, text TEXT NOT NULL, score REAL);"
    pg_schema = "CREATE TABLE IF NOT EXISTS notes (id BIGSERIAL PRIMARY KEY, text TEXT NOT NULL, score DOUBLE PRECISION);"

    def add(self, text: str, score: float | None = None) -> int:
        with self._writing() as db:
            return int(db.execute("INSERT INTO notes (text, score) VALUES (?, ?) RETURNING id", (text, score)).fetchone()[0])

    def add_many(self, texts: list[str]) -> None:
        with self._writing() as db:
            db.executemany("INSERT INTO notes (text) VALUES (?)", [(t,) for t in texts])

    def like(self, pattern: str) -> list[str]:
        with self._reading() as db:
            if db is None:
                return []
            return [r[0] for r in db.execute("SELECT text FROM notes WHERE text LIKE ? ORDER BY id", (pattern,))]

    def literal(self) -> list[str]:
        with self._reading() as db:
            return [] if db is None else [r[0] for r in db.execute(
                "SELECT text FROM notes WHERE text = '100% sure?' ORDER BY id")]

    def queue(self, text: str) -> None:
        self._write(lambda db: db.execute("INSERT INTO notes (text) VALUES (?)", (text,)))
