"""A batch's output folder, written by one run at a time and resumable after anything.

`trajectories.jsonl` gets one line per finished item, appended and flushed to disk as each
finishes, each line one `write`: a run killed at any moment leaves every finished line whole, and
at most a torn last line, which the next run finds, cuts off and redoes. `failures.jsonl` gets one
line per failed attempt (retried by the next run); `statistics.json` is replaced whole at the end.
A lock on `.batch.lock` keeps a second run on the same folder out.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from hermes_core import AlreadyRunningError, storable_json
from hermes_core.hosting import BadLine, json_lines, only_one, write_json

__all__ = ["BatchBusyError", "OutputDir"]

TRAJECTORIES = "trajectories.jsonl"
FAILURES = "failures.jsonl"
STATISTICS = "statistics.json"
_LOCK = ".batch.lock"


class BatchBusyError(AlreadyRunningError):
    """Another batch run is writing the same output folder."""


class OutputDir:
    """One run's hold on an output folder: what is finished there, and appending to it."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)
        try:
            self._held = only_one(self.path / _LOCK)  # for the run
        except AlreadyRunningError as exc:
            raise BatchBusyError(f"another batch run (pid {exc.pid or '?'}) is writing {self.path}; wait for it to "
                                 "end, or give another --out", path=exc.path, pid=exc.pid) from None
        self.torn = self._cut_torn_line()
        self.problems: list[str] = []
        self.rows = self._read()
        self._out = os.open(self.path / TRAJECTORIES, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self._failures = os.open(self.path / FAILURES, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def _cut_torn_line(self) -> bool:
        """Cut off a last line that a killed run left half-written; whether there was one."""
        path = self.path / TRAJECTORIES
        try:
            with open(path, "rb+") as file:
                data = file.read()
                if not data or data.endswith(b"\n"):
                    return False
                file.truncate(data.rfind(b"\n") + 1)
                os.fsync(file.fileno())
                return True
        except FileNotFoundError:
            return False

    def _read(self) -> dict[str, dict[str, Any]]:
        rows: dict[str, dict[str, Any]] = {}
        try:
            for number, row, _ in json_lines(self.path / TRAJECTORIES):
                if not isinstance(row, dict) or not isinstance(row.get("id"), str):
                    why = row.why if isinstance(row, BadLine) else "no trajectory"
                    self.problems.append(f"{TRAJECTORIES} line {number} is {why}; left as it is")
                    continue
                rows[row["id"]] = row
        except FileNotFoundError:
            pass
        return rows

    @property
    def finished(self) -> set[str]:
        """The ids of the items already written (finished, completed or partial)."""
        return set(self.rows)

    def append(self, row: dict[str, Any]) -> None:
        """Add a finished item's line, on disk before this returns."""
        _write_line(self._out, row, sync=True)
        self.rows[row["id"]] = row

    def failed(self, row: dict[str, Any]) -> None:
        """Note a failed attempt (the item is run again by the next run)."""
        _write_line(self._failures, row, sync=False)

    def write_statistics(self, statistics: dict[str, Any]) -> None:
        write_json(self.path / STATISTICS, statistics)

    def close(self) -> None:
        for fd in (self._out, self._failures):
            os.close(fd)
        self._held.release()

    def __enter__(self) -> OutputDir:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _write_line(fd: int, row: dict[str, Any], *, sync: bool) -> None:
    data = (storable_json(row, default=str) + "\n").encode("utf-8")  # a lone surrogate a model gave: escaped
    view = memoryview(data)
    while view:  # one write of the whole line, but a short write goes on where it stopped
        view = view[os.write(fd, view):]
    if sync:
        os.fsync(fd)
