"""Slow and failing hook calls, kept for the operator (`hermes plugins hook-calls`, the dashboard's
hook calls page): a callback that raised, timed out, or ran longer than `HERMES_HOOK_SLOW_MS`
(250 ms unless set) is a JSON line in `$HERMES_HOME/logs/hook-calls.jsonl`: when, hook, plugin,
callback, milliseconds, outcome and error (secrets redacted).

The file is a small ring: at `LINES` lines it becomes `hook-calls.jsonl.1` (the one before is
dropped), so the two hold the last 500 to 1,000 calls. The hook call only puts its record in a
queue; a writer thread (one for the process) appends it, off the hot path: one write a line, so
processes sharing a home never interleave. A line is whole or, after a crash mid-write, skipped.
Every process sharing a home writes under one lock (`hook-calls.jsonl.lock`), and rotates by the
lines the file holds then, counted again whenever another process changed it: one process never
rotates right after another, which would leave `.1` with a handful of rows.

    {"at": 1764400000.1, "hook": "pre_tool_call", "plugin": "guard", "callback": "Guard.check",
     "ms": 812.4, "outcome": "slow", "error": ""}
"""

from __future__ import annotations

import atexit
import json
import os
import threading
import time
from collections import deque
from pathlib import Path
from typing import Any

from .._files import json_lines, locked
from .._redact import redact_secrets

__all__ = ["FILE", "LINES", "SLOW_VARIABLE", "HookCallLog", "kept_hook_calls"]

FILE = "hook-calls.jsonl"
LINES = 500
SLOW_VARIABLE = "HERMES_HOOK_SLOW_MS"
_SLOW_MS = 250.0
_QUEUED = 1000  # records waiting for the writer at most (a storm of failures drops the oldest)


def _slow_seconds() -> float:
    try:
        return float(os.environ.get(SLOW_VARIABLE) or _SLOW_MS) / 1000
    except ValueError:
        return _SLOW_MS / 1000


class HookCallLog:
    """The ring of one home's slow and failing hook calls (one writer thread serves every home)."""

    def __init__(self, home: Path) -> None:
        self.path = Path(home) / "logs" / FILE
        self.slow = _slow_seconds()  # a callback slower than this many seconds is kept

    def add(self, hook: str, plugin_id: str | None, callback: str, seconds: float, outcome: str,
            error: str = "") -> None:
        """Keep one call (from the hook's driver: this only queues it)."""
        _pending.append((self.path, {"at": round(time.time(), 3), "hook": hook, "plugin": plugin_id or "-",
                                     "callback": callback, "ms": round(seconds * 1000, 1), "outcome": outcome,
                                     "error": error}))
        with _wake:
            _start()
            _wake.notify()

    def flush(self) -> None:
        """Write what is queued now (the writer does it by itself; at exit, and in tests)."""
        flush()


_pending: deque[tuple[Path, dict[str, Any]]] = deque(maxlen=_QUEUED)
_wake = threading.Condition()
_io = threading.Lock()
_seen: dict[Path, tuple[tuple[int, ...], int]] = {}  # each file as this process last left it: identity, lines
_writer: threading.Thread | None = None


def _start() -> None:
    """The writer thread, started on the first record (again in a forked child, where it is gone)."""
    global _writer
    if _writer is None:
        atexit.register(flush)
    if _writer is None or not _writer.is_alive():
        _writer = threading.Thread(target=_run, name="hermes-hook-calls", daemon=True)
        _writer.start()


def flush() -> None:
    with _io:
        _write()


def _run() -> None:
    while True:
        with _wake:
            while not _pending:
                _wake.wait()
        with _io:  # not holding `_wake`: a hook call queuing a record never waits for the disk
            _write()


def _write() -> None:
    """Append what is queued, each home's records under its file's lock (see the module)."""
    by_path: dict[Path, list[dict[str, Any]]] = {}
    while _pending:
        path, record = _pending.popleft()
        by_path.setdefault(path, []).append(record)
    for path, records in by_path.items():
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            with locked(path):
                for record in records:
                    _append(path, record)
        except OSError:
            _seen.pop(path, None)  # a home that cannot be written loses the records, never the hook call


def _append(path: Path, record: dict[str, Any]) -> None:
    """One record, under the file's lock: the file rotated first when it holds `LINES` lines."""
    lines = _lines(path)
    if lines >= LINES:
        os.replace(path, path.with_name(FILE + ".1"))
        lines = 0
    record["error"] = redact_secrets(" ".join(str(record["error"]).split()))[:500]
    line = (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8")
    descriptor = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(descriptor, line)
        written = os.fstat(descriptor)
    finally:
        os.close(descriptor)
    _seen[path] = (_identity(written), lines + 1)


def _identity(status: os.stat_result) -> tuple[int, ...]:
    """What tells this file's state from another: device and inode (a rotation's new file may get
    an old inode back), size, and the change times (an edit in place may keep the size)."""
    return (status.st_dev, status.st_ino, status.st_size, status.st_mtime_ns, status.st_ctime_ns)


def _lines(path: Path) -> int:
    """The lines in `path` now: as this process left it, or counted again when another process
    (or a person) has changed it since."""
    try:
        status = path.stat()
    except FileNotFoundError:
        return 0
    known = _seen.get(path)
    if known is not None and known[0] == _identity(status):
        return known[1]
    with open(path, "rb") as handle:
        count = sum(1 for _ in handle)
    _seen[path] = (_identity(status), count)
    return count


def kept_hook_calls(home: Path, limit: int = 200) -> list[dict[str, Any]]:
    """The kept slow and failing hook calls of `home`, the newest first (at most `limit`)."""
    folder = Path(home) / "logs"
    rows: list[dict[str, Any]] = []
    for name in (FILE + ".1", FILE):
        try:  # json_lines streams the file and gives a line cut short by a crash as a BadLine, skipped
            rows += [row for _, row, _ in json_lines(folder / name) if isinstance(row, dict)]
        except OSError:
            continue
    rows.sort(key=lambda row: row.get("at", 0), reverse=True)
    return rows[:limit]
