"""The session store's writes against bare sqlite3 doing the same inserts with the same
journal settings, interleaved in one process.

- **append**: `SessionStore.append` of one message against a bare `INSERT` of the same row
  (JSON body, text, the same table, index and FTS5 trigger) and `COMMIT` on a connection
  with the store's own `journal_mode` and `synchronous`.
- **step**: one step of the agent's loop (its usage row, the assistant message with a tool
  call, the tool's result, the tool-call row) as four transactions, and inside one
  `store.step()`, against the same four inserts in one bare transaction.

Each measure is the median of paired ratios (ours / bare, timed back to back) over
`--rounds` rounds of `--number` calls.

    .venv/bin/python benchmarks/bench_store.py            # --rounds 31 --number 200
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hermes_core.agent import SessionStore
from hermes_core.agent.store import _SCHEMA

USER = {"role": "user", "content": "Look at module_7.py and fix the failing test, please."}
ASSISTANT = {"role": "assistant", "content": None, "tool_calls": [{
    "id": "call_7", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "src/module_7.py"}'}}]}
TOOL = {"role": "tool", "tool_call_id": "call_7", "content": "def f(x):\n    return x * 2\n" * 20}


class Bare:
    """What any store of these messages must do: serialise, insert, commit."""

    def __init__(self, path: Path, journal: str, synchronous: int) -> None:
        self.db = sqlite3.connect(path, isolation_level=None)
        self.db.execute(f"PRAGMA journal_mode = {journal}")
        self.db.execute(f"PRAGMA synchronous = {synchronous}")
        self.db.executescript(_SCHEMA)
        self.seq = 0

    def _insert(self, message: dict[str, Any]) -> None:
        self.seq += 1
        self.db.execute("INSERT INTO messages(session_id, seq, role, body, text, created) VALUES (?, ?, ?, ?, ?, ?)",
                        ("s", self.seq, message["role"], json.dumps(message, ensure_ascii=False),
                         message.get("content") or "", time.time()))

    def append(self) -> None:
        self.db.execute("BEGIN IMMEDIATE")
        self._insert(USER)
        self.db.execute("COMMIT")

    def step(self) -> None:
        self.db.execute("BEGIN IMMEDIATE")
        self.db.execute("INSERT INTO usage VALUES (?, ?, ?, ?, ?, ?, ?)", ("s", "p", "m", 1200, 80, 0.001, time.time()))
        self._insert(ASSISTANT)
        self._insert(TOOL)
        self.db.execute("INSERT INTO tool_calls VALUES (?, ?, ?, ?, ?, ?)",
                        ("s", "call_7", "read_file", '{"path": "src/module_7.py"}', TOOL["content"], time.time()))
        self.db.execute("COMMIT")


def step_writes(store: SessionStore) -> None:
    store.usage("s", "p", "m", 1200, 80, 0.001)
    store.append("s", ASSISTANT)
    store.append("s", TOOL)
    store.tool_call("s", "call_7", "read_file", '{"path": "src/module_7.py"}', TOOL["content"])


def paired(baseline: Callable[[], None], ours: Callable[[], None], rounds: int, number: int
           ) -> tuple[float, float, float]:
    """(median baseline time, median hermes-core time, median of paired ratios), per call."""
    base, mine, ratios = [], [], []
    for i in range(rounds):
        pair = []
        for run in ((baseline, ours) if i % 2 == 0 else (ours, baseline)):
            started = time.perf_counter()
            for _ in range(number):
                run()
            pair.append((run is ours, (time.perf_counter() - started) / number))
        b = next(t for is_ours, t in pair if not is_ours)
        o = next(t for is_ours, t in pair if is_ours)
        base.append(b)
        mine.append(o)
        ratios.append(o / b)
    return statistics.median(base), statistics.median(mine), statistics.median(ratios)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=31)
    parser.add_argument("--number", type=int, default=200)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        store = SessionStore(Path(folder))
        store.start("s", "m")
        store.append("s", USER)
        db = store._open(create=True)
        assert db is not None
        journal = db.execute("PRAGMA journal_mode").fetchone()[0]
        synchronous = db.execute("PRAGMA synchronous").fetchone()[0]
        bare = Bare(Path(folder) / "bare.db", journal, synchronous)
        print(f"session store (journal_mode={journal}, synchronous={synchronous}) against bare sqlite3, same "
              f"settings; median of {options.rounds} paired rounds of {options.number}\n")
        rows = [("append one message", bare.append, lambda: store.append("s", USER))]
        if synchronous != 2:
            full = Bare(Path(folder) / "bare-full.db", journal, 2)
            rows.append(("append, against bare synchronous=FULL", full.append, lambda: store.append("s", USER)))
        rows.append(("one loop step, four transactions", bare.step, lambda: step_writes(store)))
        if hasattr(store, "step"):
            def one_step() -> None:
                with store.step():
                    step_writes(store)
            rows.append(("one loop step in store.step()", bare.step, one_step))
        print(f"{'':<36} {'bare':>10} {'hermes-core':>12} {'paired ratio':>13}")
        for label, baseline, ours in rows:
            b, o, ratio = paired(baseline, ours, options.rounds, options.number)
            print(f"{label:<36} {b * 1e6:>7.1f} µs {o * 1e6:>9.1f} µs {ratio:>12.2f}x")
        store.close()


if __name__ == "__main__":
    main()
