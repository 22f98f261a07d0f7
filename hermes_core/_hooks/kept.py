"""Slow and failing hook calls, kept for the operator (`hermes plugins hook-calls`, the dashboard's
hook calls page): a callback that raised, timed out, or ran longer than `HERMES_HOOK_SLOW_MS`
(250 ms unless set) is a JSON line in `$HERMES_HOME/logs/hook-calls.jsonl`: when, hook, plugin,
callback, milliseconds, outcome and error (secrets redacted).

The file is a small ring: at `LINES` lines it becomes `hook-calls.jsonl.1` (the one before is
dropped), so the two hold the last 500 to 1,000 calls. The hook call only puts its record in a
queue; a writer thread appends it (one write a line, so processes sharing a home never
interleave), off the hot path. A line is whole or, after a crash mid-write, skipped when read.

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
    """The ring of one home's slow and failing hook calls, written by a thread of its own."""

    def __init__(self, home: Path) -> None:
        self.path = Path(home) / "logs" / FILE
        self.slow = _slow_seconds()  # a callback slower than this many seconds is kept
        self._queue: deque[dict[str, Any]] = deque(maxlen=_QUEUED)
        self._wake = threading.Condition()
        self._io = threading.Lock()
        self._writer: threading.Thread | None = None
        self._lines: int | None = None  # lines in the file, counted once

    def add(self, hook: str, plugin_id: str | None, callback: str, seconds: float, outcome: str,
            error: str = "") -> None:
        """Keep one call (from the hook's driver: this only queues it)."""
        self._queue.append({"at": round(time.time(), 3), "hook": hook, "plugin": plugin_id or "-",
                            "callback": callback, "ms": round(seconds * 1000, 1), "outcome": outcome,
                            "error": error})
        with self._wake:
            if self._writer is None:
                self._writer = threading.Thread(target=self._run, name="hermes-hook-calls", daemon=True)
                self._writer.start()
                atexit.register(self.flush)
            self._wake.notify()

    def flush(self) -> None:
        """Write what is queued now (the writer does it by itself; at exit, and in tests)."""
        with self._io:
            self._write()

    def _run(self) -> None:
        while True:
            with self._wake:
                while not self._queue:
                    self._wake.wait()
            with self._io:  # not holding `_wake`: a hook call queuing a record never waits for the disk
                self._write()

    def _write(self) -> None:
        records = []
        while self._queue:
            records.append(self._queue.popleft())
        if not records:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            if self._lines is None:
                self._lines = _count(self.path)
            for record in records:
                if self._lines >= LINES:
                    os.replace(self.path, self.path.with_name(FILE + ".1"))
                    self._lines = 0
                record["error"] = redact_secrets(" ".join(str(record["error"]).split()))[:500]
                line = (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8")
                descriptor = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
                try:
                    os.write(descriptor, line)
                finally:
                    os.close(descriptor)
                self._lines += 1
        except OSError:
            self._lines = None  # a home that cannot be written loses the records, never the hook call


def _count(path: Path) -> int:
    try:
        with open(path, "rb") as handle:
            return sum(1 for _ in handle)
    except FileNotFoundError:
        return 0


def kept_hook_calls(home: Path, limit: int = 200) -> list[dict[str, Any]]:
    """The kept slow and failing hook calls of `home`, the newest first (at most `limit`)."""
    folder = Path(home) / "logs"
    rows: list[dict[str, Any]] = []
    for name in (FILE + ".1", FILE):
        try:
            text = (folder / name).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        for line in text.splitlines():
            try:
                row = json.loads(line)
            except ValueError:
                continue  # cut short by a crash
            if isinstance(row, dict):
                rows.append(row)
    rows.sort(key=lambda row: row.get("at", 0), reverse=True)
    return rows[:limit]
