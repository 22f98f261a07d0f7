"""`SqliteFile` (public, for provider authors): several processes creating one new file at once
each find the schema made exactly once."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import time
from pathlib import Path

WRITER = """
import sys, time
from pathlib import Path
from hermes_core import SqliteFile

class Notes(SqliteFile):
    what = "notes database"
    schema = "CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT NOT NULL);"

    def add(self, text):  # as SqliteFile's docstring shows a subclass writing
        with self._writing() as db:
            db.execute("INSERT INTO notes (text) VALUES (?)", (text,))

start = float(sys.argv[2])
while time.time() < start:
    pass
Notes(Path(sys.argv[1])).add(sys.argv[3])
"""


def test_processes_creating_one_file_at_once_all_write_to_it(tmp_path: Path) -> None:
    for attempt in range(3):
        path = tmp_path / f"notes-{attempt}.db"
        start = time.time() + 1.5  # every process is up and spinning when the moment comes
        writers = [subprocess.Popen([sys.executable, "-c", WRITER, str(path), str(start), f"w{n}"],
                                    stderr=subprocess.PIPE, text=True) for n in range(6)]
        errors = [writer.communicate(timeout=60)[1] for writer in writers]
        assert [writer.returncode for writer in writers] == [0] * 6, errors
        with sqlite3.connect(path) as db:
            assert sorted(row[0] for row in db.execute("SELECT text FROM notes")) == [f"w{n}" for n in range(6)]


def test_an_older_file_is_upgraded_once_in_order_and_a_failed_upgrade_leaves_it_as_it_was(tmp_path: Path) -> None:
    import pytest

    from hermes_core import MemoryStoreError, SqliteFile

    class Notes(SqliteFile):
        what = "notes database"
        schema = ("CREATE TABLE IF NOT EXISTS notes (id INTEGER PRIMARY KEY, text TEXT NOT NULL, "
                  "tag TEXT NOT NULL DEFAULT '', pinned INTEGER NOT NULL DEFAULT 0);\n"
                  "CREATE INDEX IF NOT EXISTS notes_tag ON notes(tag);")
        schema_version = 3
        upgrades = {2: "ALTER TABLE notes ADD COLUMN tag TEXT NOT NULL DEFAULT 'old';",
                    3: "ALTER TABLE notes ADD COLUMN pinned INTEGER NOT NULL DEFAULT 0;"}

        def add(self, text: str) -> None:
            with self._writing() as db:
                db.execute("INSERT INTO notes (text) VALUES (?)", (text,))

        def rows(self) -> list[tuple]:
            with self._reading() as db:
                return [] if db is None else db.execute("SELECT text, tag, pinned FROM notes").fetchall()

    old = tmp_path / "old.db"
    with sqlite3.connect(old) as db:
        db.executescript("CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT NOT NULL);"
                         "INSERT INTO notes (text) VALUES ('kept'); PRAGMA user_version = 1;")
    assert Notes(old).rows() == [("kept", "old", 0)]
    with sqlite3.connect(old) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == 3
        assert db.execute("SELECT name FROM sqlite_master WHERE name = 'notes_tag'").fetchone() == ("notes_tag",)
    new = Notes(tmp_path / "new.db")
    new.add("fresh")
    assert new.rows() == [("fresh", "", 0)]  # a new file: the schema alone

    class Broken(Notes):
        upgrades = {2: "ALTER TABLE notes ADD COLUMN tag TEXT NOT NULL DEFAULT 'old';", 3: "ALTER TABLE nope ADD x;"}

    other = tmp_path / "other.db"
    with sqlite3.connect(other) as db:
        db.executescript("CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT NOT NULL); PRAGMA user_version = 1;")
    with pytest.raises(MemoryStoreError, match="notes database .* failed while opening it: no such table: nope"):
        Broken(other).rows()
    with sqlite3.connect(other) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == 1
        assert [row[1] for row in db.execute("PRAGMA table_info(notes)")] == ["id", "text"]
