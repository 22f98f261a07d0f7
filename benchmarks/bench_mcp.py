"""`hermes mcp serve` against the official SDK's own decorator server (`MCPServer`), both run
as subprocesses over stdio and driven by the same SDK `Client`, in one process, alternately.

    .venv/bin/python benchmarks/bench_mcp.py [--rounds 10] [--calls 300] [--warmup 20] [--batch 100] [--repeats 11]

1. Per call: `echo(text) -> text`, a folder plugin's sync tool in a temporary HERMES_HOME
   (run on a worker thread under `tools.timeout`, through `arun_tool`: validation and the
   tool hooks), against `@server.tool() def echo(text: str) -> str` (the SDK runs a sync tool
   on its own worker thread too). After `--warmup` calls each, every round times `--calls`
   sequential calls per server, alternating call by call (who goes first flips each time).
   Each line: the median per-call latency of all the calls, and the median of the rounds'
   ratios of medians. Target: hermes / SDK at most 1.2x.
2. Concurrency: `--batch` calls at once (`asyncio.gather` of `call_tool`) of a tool that
   sleeps 100 ms: for hermes a plugin's sync `nap` (`time.sleep(0.1)` on a worker thread),
   for the SDK an async tool (`await anyio.sleep(0.1)`), as the reference. Each repeat times
   one batch on each server, alternately; reported as the batch's wall time / 0.1 s (median,
   and the best repeat). Target for hermes: at most 1.5x. hermes also serves the same tool
   written async (`await asyncio.sleep(0.1)`, no worker thread), timed right after its sync
   one. Beside them, for reading those figures: `--batch` echo calls at once (an instant
   tool), the transport's own throughput floor: a batch of 100 ms calls cannot end before the
   server has taken in the last request.

The last line is the figures as JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

from mcp import Client, StdioServerParameters

import hermes_core

HERMES = str(Path(sys.executable).with_name("hermes"))
NAP = 0.1
TEXT = "hello, benchmark"

ECHO_PLUGIN = '''
def echo(args, **kwargs):
    return args["text"]

def register(ctx):
    ctx.register_tool("echo", "bench", {
        "name": "echo", "description": "Return the text.",
        "parameters": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}}, echo)
'''

NAP_PLUGIN = '''
import asyncio, time

def nap(args, **kwargs):
    time.sleep(0.1)
    return "rested"

async def anap(args, **kwargs):
    await asyncio.sleep(0.1)
    return "rested"

def register(ctx):
    ctx.register_tool("nap", "bench", {
        "name": "nap", "description": "Sleep 100 ms.", "parameters": {"type": "object", "properties": {}}}, nap)
    ctx.register_tool("anap", "bench", {
        "name": "anap", "description": "Sleep 100 ms, async.", "parameters": {"type": "object", "properties": {}}}, anap)
'''

SDK_SERVER = '''
import anyio
from mcp.server.mcpserver import MCPServer

server = MCPServer("sdk-bench")


@server.tool(description="Return the text.")
def echo(text: str) -> str:
    return text


@server.tool(description="Sleep 100 ms.")
async def nap() -> str:
    await anyio.sleep(0.1)
    return "rested"


if __name__ == "__main__":
    server.run()
'''


def layout(root: Path) -> tuple[StdioServerParameters, StdioServerParameters]:
    """A HERMES_HOME with the `echo` and `nap` folder plugins enabled, and the SDK server script."""
    home = root / "home"
    for name, source in (("echo", ECHO_PLUGIN), ("nap", NAP_PLUGIN)):
        folder = home / "plugins" / name
        folder.mkdir(parents=True)
        (folder / "plugin.yaml").write_text(f"name: {name}\n")
        (folder / "__init__.py").write_text(source)
    config = home / "config.yaml"
    config.write_text("plugins:\n  enabled: [echo, nap]\n")
    an_hour_ago = time.time() - 3600  # edited earlier, as an operator's config is
    os.utime(config, (an_hour_ago, an_hour_ago))
    script = root / "sdk_server.py"
    script.write_text(SDK_SERVER)
    env = dict(os.environ)  # PYTHONPATH too: the SDK's stdio client passes only a few variables on its own
    hermes = StdioServerParameters(command=HERMES, args=["mcp", "serve"], env=env | {"HERMES_HOME": str(home)}, cwd=root)
    sdk = StdioServerParameters(command=sys.executable, args=[str(script)], env=env, cwd=root)
    return hermes, sdk


def text_of(result: Any) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


async def sequential(client: Client, count: int) -> list[float]:
    """`count` echo calls one after another: each call's latency."""
    return [await timed_echo(client) for _ in range(count)]


async def timed_echo(client: Client) -> float:
    started = time.perf_counter()
    await client.call_tool("echo", {"text": TEXT})
    return time.perf_counter() - started


async def batch(client: Client, size: int, tool: str = "nap") -> float:
    """`size` calls of `tool` at once: the wall time until the last one answered."""
    args, expected = ({"text": TEXT}, TEXT) if tool == "echo" else ({}, "rested")
    started = time.perf_counter()
    results = await asyncio.gather(*(client.call_tool(tool, args) for _ in range(size)))
    elapsed = time.perf_counter() - started
    bad = [r for r in results if r.is_error or text_of(r) != expected]
    assert not bad, f"{len(bad)} {tool} calls failed: {text_of(bad[0])}"
    return elapsed


async def run(options: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bench-mcp-") as tmp:
        hermes_params, sdk_params = layout(Path(tmp))
        async with AsyncExitStack() as stack:
            clients = {"hermes": await stack.enter_async_context(Client(hermes_params)),
                       "sdk": await stack.enter_async_context(Client(sdk_params))}
            for label, client in clients.items():
                names = {tool.name for tool in (await client.list_tools()).tools}
                assert {"echo", "nap"} <= names, f"{label} serves {sorted(names)}"  # and hermes anap
                answer = await client.call_tool("echo", {"text": TEXT})
                assert not answer.is_error and text_of(answer) == TEXT, f"{label} echo answered {answer!r}"
                await sequential(client, options.warmup)
            order = ["hermes", "sdk"]
            print(f"protocol {clients['hermes'].protocol_version} (hermes) / {clients['sdk'].protocol_version} (sdk); "
                  f"{HERMES} running hermes-core from {Path(hermes_core.__file__).parent}")

            print(f"1. one echo call, {options.rounds} rounds x {options.calls} sequential calls per server, alternating call by call")
            latencies: dict[str, list[float]] = {"hermes": [], "sdk": []}
            ratios = []
            for _ in range(options.rounds):
                times: dict[str, list[float]] = {"hermes": [], "sdk": []}
                for _ in range(options.calls):  # call by call, so both see the same moments of a noisy machine
                    for label in order:
                        times[label].append(await timed_echo(clients[label]))
                    order.reverse()
                for label, these in times.items():
                    latencies[label] += these
                ratios.append(statistics.median(times["hermes"]) / statistics.median(times["sdk"]))
            h, s = statistics.median(latencies["hermes"]), statistics.median(latencies["sdk"])
            per_call = {"hermes_us": round(h * 1e6, 1), "sdk_us": round(s * 1e6, 1), "ratio": round(h / s, 3),
                        "paired_ratio": round(statistics.median(ratios), 3),
                        "round_ratios": [round(r, 3) for r in ratios], "target": 1.2}
            print(f"  {'server':<44} {'median':>10} {'p10':>10} {'p90':>10}")
            for label, title in (("sdk", "SDK MCPServer, sync @tool"), ("hermes", "hermes mcp serve, sync plugin tool")):
                q = statistics.quantiles(latencies[label], n=10)
                print(f"  {title:<44} {statistics.median(latencies[label]) * 1e6:7.0f} µs {q[0] * 1e6:7.0f} µs "
                      f"{q[-1] * 1e6:7.0f} µs")
            print(f"  hermes / SDK: of medians {h / s:.2f}x, median of paired rounds {statistics.median(ratios):.2f}x "
                  f"(rounds {min(ratios):.2f}-{max(ratios):.2f}x; target <= 1.2x)")

            print(f"2. {options.batch} concurrent calls of a 100 ms tool, {options.repeats} repeats per server, "
                  "alternately (wall time / 0.1 s)")
            for label in order:  # one untimed batch each: threads, first-use imports
                await batch(clients[label], options.batch)
            await batch(clients["hermes"], options.batch, "anap")
            walls: dict[str, list[float]] = {"hermes": [], "hermes_async": [], "sdk": []}
            bursts: dict[str, list[float]] = {"hermes": [], "hermes_async": [], "sdk": []}
            for _ in range(options.repeats):
                for label in order:
                    walls[label].append(await batch(clients[label], options.batch))
                    bursts[label].append(await batch(clients[label], options.batch, "echo"))
                    if label == "hermes":  # the same tool written async: no worker thread per call
                        walls["hermes_async"].append(await batch(clients[label], options.batch, "anap"))
                        bursts["hermes_async"].append(bursts["hermes"][-1])
                order.reverse()
            concurrent = {}
            for label, title in (("sdk", "SDK MCPServer, async @tool (anyio.sleep)"),
                                 ("hermes", "hermes mcp serve, sync plugin tool (time.sleep)"),
                                 ("hermes_async", "hermes mcp serve, async plugin tool (asyncio.sleep)")):
                med, best = statistics.median(walls[label]), min(walls[label])
                burst = statistics.median(bursts[label])
                concurrent[label] = {"median_x": round(med / NAP, 3), "best_x": round(best / NAP, 3),
                                     "walls_s": [round(w, 4) for w in walls[label]],
                                     "echo_batch_ms": round(burst * 1000, 1)}
                print(f"  {title:<52} {med / NAP:5.2f}x  (best {best / NAP:.2f}x, median {med * 1000:.0f} ms;"
                      f" {options.batch} echo calls at once: {burst * 1000:.0f} ms)")
            concurrent["hermes"]["target"] = 1.5
            print(f"  hermes target <= 1.5x; hermes / SDK batch wall: "
                  f"{statistics.median(walls['hermes']) / statistics.median(walls['sdk']):.2f}x")
    return {"per_call": per_call, "concurrent": concurrent, "batch": options.batch, "calls": options.calls,
            "rounds": options.rounds, "repeats": options.repeats}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10, help="alternating rounds of sequential echo calls")
    parser.add_argument("--calls", type=int, default=300, help="sequential echo calls per server per round")
    parser.add_argument("--warmup", type=int, default=20, help="untimed echo calls per server first")
    parser.add_argument("--batch", type=int, default=100, help="concurrent nap calls per batch")
    parser.add_argument("--repeats", type=int, default=11, help="timed batches per server")
    options = parser.parse_args()
    figures = asyncio.run(run(options))
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
