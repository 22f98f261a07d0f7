"""The built-in `compressor` on 1k, 10k and 100k-message conversations.

The summariser is the host's real auxiliary client (the openai SDK over HTTP) talking to
the scripted server in its own process, which answers at once. Engine time is the time
`compress` takes minus the time spent inside the summariser call; it should grow linearly
with the number of messages (a constant time per message).

    .venv/bin/python benchmarks/bench_compress.py
"""

from __future__ import annotations

import json
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from _scripted import server_process

from hermes_core import PluginManager
from hermes_plugins_builtin.compressor import CompressorEngine

SIZES = ((1_000, 21), (10_000, 11), (100_000, 5))


def conversation(size: int) -> list[dict[str, Any]]:
    """System prompt, then turns of a user message, a tool call with its result (every 3rd
    result a large one), and the assistant's answer."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You are a coding agent. " * 20}]
    n = 0
    while len(messages) < size:
        messages.append({"role": "user", "content": f"Step {n}: look at module_{n}.py and fix the failing test."})
        messages.append({"role": "assistant", "content": None, "tool_calls": [{
            "id": f"call_{n}", "type": "function",
            "function": {"name": "read_file", "arguments": json.dumps({"path": f"src/module_{n}.py"})}}]})
        body = ("def f(x):\n    return x * 2\n" * (300 if n % 3 == 0 else 5))
        messages.append({"role": "tool", "tool_call_id": f"call_{n}", "content": body})
        messages.append({"role": "assistant", "content": f"Fixed module_{n}: the test now passes. " * 3})
        n += 1
    return messages[:size]


class Timed:
    """The summariser, with the time spent in it counted."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.seconds, self.calls = inner, 0.0, 0

    def complete(self, *args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return self.inner.complete(*args, **kwargs)
        finally:
            self.seconds += time.perf_counter() - started
            self.calls += 1


def main() -> None:
    with server_process(0.0, "- the user is fixing failing tests module by module") as url, \
            tempfile.TemporaryDirectory() as folder:
        home = Path(folder)
        (home / "config.yaml").write_text(f"model:\n  provider: custom\n  model: bench\n  base_url: {url}\n")
        hour_ago = time.time() - 3600
        os.utime(home / "config.yaml", (hour_ago, hour_ago))
        summariser = Timed(PluginManager(home=home, discover_plugins=False).load().auxiliary_llm("compression"))
        summariser.complete([{"role": "user", "content": "warm up"}])
        rows = []
        for size, rounds in SIZES:
            messages = conversation(size)
            totals, engine = [], []
            for _ in range(rounds):
                compressor = CompressorEngine(context_length=128_000, auxiliary=summariser)
                before = summariser.seconds
                started = time.perf_counter()
                result = compressor.compress(messages)
                total = time.perf_counter() - started
                totals.append(total)
                engine.append(total - (summariser.seconds - before))
            assert compressor.last_summary_failure is None and len(result) < size
            rows.append((size, statistics.median(totals), statistics.median(engine), len(result)))
    base = rows[0][2] / rows[0][0]
    print("compressor.compress, summariser answered at once by the scripted server (median)\n")
    print(f"{'messages':>9} {'total':>10} {'engine':>10} {'engine/message':>15} {'x 1k per message':>17} {'kept':>5}")
    for size, total, engine, kept in rows:
        print(f"{size:>9,} {total * 1e3:>7.2f} ms {engine * 1e3:>7.2f} ms {engine / size * 1e6:>12.2f} µs "
              f"{engine / size / base:>16.2f}x {kept:>5}")


if __name__ == "__main__":
    main()
