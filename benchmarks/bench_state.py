"""`ctx.state` writes (`PluginState`, one SQLite transaction per change) against the store it
replaced, reproduced here: the whole state rewritten as one JSON file on every change
(serialise, check the quota, temporary file, fsync, rename, fsync the folder), interleaved in
one process.

- **set, small state**: `state["tool_calls"] = {...}` (what the demo plugin's `post_tool_call`
  does) with a dozen other small keys.
- **set, 1 MB in other keys**: the same set while 1,000 other keys hold about 1 KB each.
- **get, 1 MB in other keys**: `state["tool_calls"]` read back, against the old store's read of
  its in-memory copy (a dict lookup: it never re-read the file, so never saw other processes).
- **a tool call whose `post_tool_call` sets it** (small state; 1 MB in other keys): a whole
  `PluginManager.dispatch_tool` of a plugin's tool whose `post_tool_call` hook sets
  `ctx.state["tool_calls"]` (as the demo plugin's does), against the same call whose hook builds
  the same value and does not set it; `adds` is the median paired difference, what the set costs
  the tool call.

Each measure is the median of paired ratios (new / old, timed back to back, the order
alternating) over `--rounds` rounds of `--number` calls; times are the medians per call.

    .venv/bin/python benchmarks/bench_state.py            # --rounds 21 --number 50
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hermes_core import PluginManager, PluginState

STATE_QUOTA_BYTES = 10 * 1024 * 1024  # ctx.state's quota


class WholeFile:
    """The old store: a dict in memory, the whole of it rewritten atomically on each change."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.data: dict[str, Any] = {}

    def get(self, key: str) -> Any:
        return self.data[key]

    def set(self, key: str, value: Any) -> None:
        data = dict(self.data)
        data[key] = value
        text = json.dumps(data, ensure_ascii=False, sort_keys=True)
        if len(text.encode("utf-8")) > STATE_QUOTA_BYTES:
            raise ValueError("over the quota")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{self.path.name}.", suffix=".tmp", dir=self.path.parent)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, self.path)
        folder = os.open(self.path.parent, os.O_RDONLY)
        try:
            os.fsync(folder)
        finally:
            os.close(folder)
        self.data = data


def paired(baseline: Callable[[], object], ours: Callable[[], object], rounds: int, number: int
           ) -> tuple[float, float, float, float]:
    """(median old time, median new time, median of paired ratios, median of paired differences), per call."""
    old, new, ratios, differences = [], [], [], []
    for i in range(rounds):
        times = {}
        for run in ((baseline, ours) if i % 2 == 0 else (ours, baseline)):
            started = time.perf_counter()
            for _ in range(number):
                run()
            times[run is ours] = (time.perf_counter() - started) / number
        old.append(times[False])
        new.append(times[True])
        ratios.append(times[True] / times[False])
        differences.append(times[True] - times[False])
    return statistics.median(old), statistics.median(new), statistics.median(ratios), statistics.median(differences)


def filled(folder: Path, name: str, others: dict[str, Any]) -> tuple[WholeFile, PluginState]:
    old = WholeFile(folder / "old" / name / "state.json")
    new = PluginState(folder / "new" / name / "state.json", name)
    for key, value in others.items():
        old.set(key, value)
    new.update(others)
    return old, new


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=21)
    parser.add_argument("--number", type=int, default=50)
    options = parser.parse_args()
    counts: dict[str, int] = {"read_file": 0, "terminal": 3, "web_search": 1}

    def tool_calls() -> dict[str, int]:
        counts["read_file"] += 1
        return dict(counts)

    small = {f"setting_{n}": {"enabled": n % 2 == 0, "label": f"value {n}"} for n in range(12)}
    large = {f"note_{n:04d}": "x" * 1040 for n in range(1000)}
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        old_small, new_small = filled(folder, "small", small)
        old_large, new_large = filled(folder, "large", large)
        old_large.set("tool_calls", tool_calls())
        new_large["tool_calls"] = tool_calls()
        size = len(json.dumps(dict(new_large.items()), ensure_ascii=False).encode("utf-8"))
        print(f"ctx.state: SQLite (state.db, WAL, synchronous=NORMAL) against the whole-file JSON rewrite it "
              f"replaced;\nmedian of {options.rounds} paired rounds of {options.number}; the large state is "
              f"{size / 2**20:.2f} MB as JSON\n")
        rows: list[tuple[str, Callable[[], object], Callable[[], object]]] = [
            ("set, small state", lambda: old_small.set("tool_calls", tool_calls()),
             lambda: new_small.__setitem__("tool_calls", tool_calls())),
            ("set, 1 MB in other keys", lambda: old_large.set("tool_calls", tool_calls()),
             lambda: new_large.__setitem__("tool_calls", tool_calls())),
            ("get, 1 MB in other keys", lambda: old_large.get("tool_calls"), lambda: new_large["tool_calls"]),
        ]
        print(f"{'':<26} {'whole file':>12} {'SQLite':>10} {'paired ratio':>13}")
        for label, baseline, ours in rows:
            b, o, ratio, _ = paired(baseline, ours, options.rounds, options.number)
            print(f"{label:<26} {b * 1e6:>9.1f} µs {o * 1e6:>7.1f} µs {ratio:>12.3f}x")
        print(f"\n{'a tool call whose hook':<34} {'no set':>9} {'sets it':>10} {'paired ratio':>13} {'adds':>10}")
        for label, others in (("post_tool_call, small state", small), ("post_tool_call, 1 MB in other keys", large)):
            quiet, setting = hooked(folder / "quiet" / label, others), hooked(folder / "setting" / label, others)
            b, o, ratio, adds = paired(lambda: quiet.dispatch_tool("noop", {}), lambda: setting.dispatch_tool("noop", {}),
                                       options.rounds, options.number)
            print(f"{label:<34} {b * 1e6:>6.1f} µs {o * 1e6:>7.1f} µs {ratio:>12.3f}x {adds * 1e6:>7.1f} µs")
            quiet.close()
            setting.close()


def hooked(home: Path, others: dict[str, Any]) -> PluginManager:
    """A manager whose one plugin has a `noop` tool and a `post_tool_call` hook counting the calls,
    kept in `ctx.state` (its home's `demo` state holding `others` besides) or only in memory."""
    sets = home.parent.name == "setting"
    calls: dict[str, int] = {}

    def register(ctx: Any) -> None:
        ctx.register_tool("noop", "bench", {"name": "noop", "parameters": {"type": "object"}}, lambda args, **kw: "{}")

        def post_tool_call(tool_name: str, **kwargs: Any) -> None:
            calls[tool_name] = calls.get(tool_name, 0) + 1
            if sets:
                ctx.state["tool_calls"] = dict(calls)

        ctx.register_hook("post_tool_call", post_tool_call)

    manager = PluginManager(home=home, discover_plugins=False).load()
    manager.add_plugin(register, "demo")
    PluginState(home / "plugin-data" / "demo" / "state.json", "demo").update(others)
    manager.dispatch_tool("noop", {})  # the first call opens what it needs
    return manager


if __name__ == "__main__":
    main()
