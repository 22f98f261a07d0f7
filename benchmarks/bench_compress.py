"""The built-in `compressor` on 1k, 10k and 100k-message conversations, and the built-in
`lcm` engine on 10k and 100k against a bare pass over the same messages.

The summariser is the host's real auxiliary client (the openai SDK over HTTP) talking to
the scripted server in its own process, which answers at once. Engine time is the time
`compress` takes minus the time spent inside the summariser call; it should grow linearly
with the number of messages (a constant time per message).

`lcm` needs no LLM: it stores the middle of the window whole in SQLite (and indexes it for
full-text search) behind summary nodes. Its baseline is a bare pass that serialises every
message once (`json.dumps`), the least an engine that stores messages whole must do; each
`lcm` run is paired with a baseline run just before or after it (a fresh database each time),
and the ratio printed is the median of the paired ratios. Scaling is the 100k time over the
10k time (10.0x is linear). Outside the pair, the first `lcm_grep` after the compression is
timed too: it indexes whatever the index does not have yet (all of it, on a fresh database).

    .venv/bin/python benchmarks/bench_compress.py            # --only compressor | --only lcm
"""

from __future__ import annotations

import argparse
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
from hermes_plugins_builtin.lcm import LcmEngine

SIZES = ((1_000, 21), (10_000, 11), (100_000, 5))
LCM_SIZES = ((10_000, 9), (100_000, 3))


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


def bare_pass(messages: list[dict[str, Any]]) -> None:
    for message in messages:
        json.dumps(message, ensure_ascii=False)


def lcm() -> None:
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for size, rounds in LCM_SIZES:
            messages = conversation(size)
            base, mine, ratios, greps = [], [], [], []
            for i in range(rounds):
                engine = LcmEngine(context_length=128_000, path=Path(folder) / f"lcm-{size}-{i}.db")
                engine.on_session_start("bench")
                engine.store.counts("bench")  # the file opened, as in a running session
                pair, kept = {}, 0
                for which in (("bare", "lcm") if i % 2 == 0 else ("lcm", "bare")):
                    started = time.perf_counter()
                    if which == "lcm":
                        kept = len(engine.compress(messages))
                    else:
                        bare_pass(messages)
                    pair[which] = time.perf_counter() - started
                started = time.perf_counter()
                found = json.loads(engine.handle_tool_call("lcm_grep", {"query": f"module_{size // 8}"}))["count"]
                greps.append(time.perf_counter() - started)
                engine.store.close()
                assert found > 0
                assert 0 < kept < size
                base.append(pair["bare"])
                mine.append(pair["lcm"])
                ratios.append(pair["lcm"] / pair["bare"])
            rows.append((size, statistics.median(base), statistics.median(mine), statistics.median(ratios),
                         statistics.median(greps)))
    print("lcm.compress (no LLM) against a bare pass serialising every message (medians, paired ratio)\n")
    print(f"{'messages':>9} {'bare pass':>11} {'lcm':>11} {'paired ratio':>13} {'first lcm_grep':>15}")
    for size, base_time, lcm_time, ratio, grep in rows:
        print(f"{size:>9,} {base_time * 1e3:>8.1f} ms {lcm_time * 1e3:>8.1f} ms {ratio:>12.2f}x {grep * 1e3:>12.1f} ms")
    (_, b10, l10, _, _), (_, b100, l100, _, _) = rows
    print(f"\n10k -> 100k: lcm {l100 / l10:.1f}x, bare pass {b100 / b10:.1f}x (linear: 10.0x)")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", choices=("compressor", "lcm"))
    only = parser.parse_args().only
    if only != "lcm":
        compressor()
    if only != "compressor":
        if only is None:
            print()
        lcm()


def compressor() -> None:
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
