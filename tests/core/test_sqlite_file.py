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
