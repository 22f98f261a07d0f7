"""`hermes batch run` against its ideal: items, each one tool round (two model calls), against the
scripted server answering every request after `--latency` seconds, `--concurrency` at once.

    .venv/bin/python benchmarks/bench_batch.py [--items 200] [--concurrency 32] [--latency 0.2] [--runs 3]

The ideal wall time is items / concurrency x the server's latency per item (two requests), the
latency measured in the same run: the median of bare chat-completion requests to the same server,
one after another. The server runs in its own process; the tool is a folder plugin's sync tool. Reported: the batch's wall time (statistics.json: the run itself, without the
process's start-up) over the ideal, the whole process's, and hermes-core's CPU per item (the
process's user+system CPU over the items). Target: wall <= 1.3x the ideal.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from _scripted import server_process

HERMES = str(Path(sys.executable).with_name("hermes"))

PLUGIN = '''
import json

def lookup(args, **kwargs):
    return json.dumps({"value": args["key"].upper()})

def register(ctx):
    ctx.register_tool("lookup", "facts", {"name": "lookup", "description": "Look a key up.",
                      "parameters": {"type": "object", "properties": {"key": {"type": "string"}}}}, lookup)
'''


def batch(env: dict[str, str], data: Path, out: Path, concurrency: int) -> tuple[float, float, dict]:
    """(whole process seconds, its CPU seconds, statistics.json) of one `hermes batch run`."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = usage.ru_utime + usage.ru_stime
    started = time.perf_counter()
    done = subprocess.run([HERMES, "batch", "run", str(data), "--out", str(out), "--concurrency", str(concurrency)],
                          env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    assert done.returncode == 0, done.stderr
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return elapsed, usage.ru_utime + usage.ru_stime - cpu, json.loads((out / "statistics.json").read_text())


def latency(url: str, count: int = 20) -> float:
    """The server's median seconds per request, from bare requests one after another."""
    body = json.dumps({"model": "bench", "messages": [{"role": "user", "content": "hi"}]}).encode()
    times = []
    for _ in range(count):
        request = urllib.request.Request(f"{url}/chat/completions", body, {"Content-Type": "application/json"})
        started = time.perf_counter()
        with urllib.request.urlopen(request) as response:
            response.read()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--latency", type=float, default=0.2, help="seconds the server takes per request")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with server_process(args.latency, "Done.", tool="lookup") as url, tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        home = root / "home"
        (home / "plugins" / "facts").mkdir(parents=True)
        (home / "plugins" / "facts" / "__init__.py").write_text(PLUGIN)
        (home / "plugins" / "facts" / "plugin.yaml").write_text("name: facts\n")
        (home / "config.yaml").write_text(f"model:\n  provider: custom\n  model: bench\n  base_url: {url}\n"
                                          "plugins:\n  enabled: [facts]\n")
        env = {**os.environ, "HERMES_HOME": str(home)}
        data = root / "data.jsonl"
        data.write_text("".join(json.dumps({"id": str(i), "prompt": f"look up item {i}"}) + "\n"
                                for i in range(args.items)))
        rows = []
        for run in range(args.runs):
            per_item = 2 * latency(url)
            ideal = args.items / args.concurrency * per_item
            whole, cpu, stats = batch(env, data, root / f"out-{run}", args.concurrency)
            assert stats["completed"] == args.items and stats["model_calls"] == 2 * args.items, stats
            rows.append((per_item, ideal, stats["wall_seconds"], whole, cpu / args.items))
            print(f"run {run + 1}: the server's latency per item {per_item * 1e3:.0f} ms, ideal {ideal:.2f} s; batch "
                  f"{stats['wall_seconds']:.2f} s ({stats['wall_seconds'] / ideal:.2f}x), whole process {whole:.2f} s "
                  f"({whole / ideal:.2f}x); CPU {cpu / args.items * 1e3:.1f} ms per item")
        print(f"\n{args.items} items, one tool round each, {args.concurrency} at once, server latency "
              f"{args.latency * 1e3:.0f} ms per request; median of {args.runs} runs:")
        print(f"  batch wall / ideal:          {statistics.median(r[2] / r[1] for r in rows):.2f}x   (target <= 1.3x)")
        print(f"  whole process / ideal:       {statistics.median(r[3] / r[1] for r in rows):.2f}x")
        print(f"  hermes-core CPU per item:    {statistics.median(r[4] for r in rows) * 1e3:.1f} ms")
        print(f"  server latency per item:     {statistics.median(r[0] for r in rows) * 1e3:.0f} ms (two requests)")


if __name__ == "__main__":
    main()
