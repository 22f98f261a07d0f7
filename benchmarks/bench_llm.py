"""`ctx.llm` against the raw openai client on the same loopback server, and 100 concurrent
`acomplete` calls against a server that answers after 200 ms.

    .venv/bin/python benchmarks/bench_llm.py [--rounds 10] [--calls 200] [--repeats 5] [--only concurrent]

1. Per call: `ctx.llm.complete` (trust gate, config check, routing, credentials, audit line)
   against `openai.OpenAI(...).chat.completions.create` on the same scripted server (run in
   its own process), rotating call by call in one process. Target: at most 1.05x. Also
   against the same SDK work ctx.llm does (`with_raw_response` + `json.loads`), which
   isolates what the gate, routing and audit cost.
2. Concurrency: one `acomplete` alone, then 100 at once with `asyncio.gather`, each answered
   after 200 ms. Target: the batch within 1.5x of the single call. Beside it, in the same run
   and interleaved: bare aiohttp posting the same JSON (the floor), and the raw `AsyncOpenAI`
   on its default httpx transport and on its aiohttp transport (`DefaultAioHttpClient`).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

import openai

from _scripted import server_process

from hermes_core import PluginManager

MESSAGES = [{"role": "user", "content": "ping"}]
_managers: list[PluginManager] = []


def ctx_for(home: Path, url: str):
    (home / "config.yaml").write_text(f"model:\n  provider: custom\n  model: bench\n  base_url: {url}\n")
    hour_ago = time.time() - 3600  # an operator's config is not seconds old
    os.utime(home / "config.yaml", (hour_ago, hour_ago))
    manager = PluginManager(home=home, discover_plugins=False).load()
    _managers.append(manager)  # a plugin's ctx works while its manager lives
    return manager.add_plugin(lambda ctx: ctx.register_command("bench", str), "bench").ctx


def per_call(rounds: int, calls: int) -> None:
    with server_process(0.0) as url, tempfile.TemporaryDirectory() as tmp:
        ctx = ctx_for(Path(tmp), url)
        raw = openai.OpenAI(api_key="no-key-needed", base_url=url, max_retries=0)

        def baseline() -> None:
            raw.chat.completions.create(model="bench", messages=MESSAGES, timeout=30)  # type: ignore[arg-type]

        def same_sdk_work() -> None:  # what ctx.llm asks of the SDK, without the gate, routing, audit
            reply = raw.chat.completions.with_raw_response.create(model="bench", messages=MESSAGES, timeout=30)  # type: ignore[arg-type]
            json.loads(reply.http_response.content)

        def ours() -> None:
            ctx.llm.complete(MESSAGES)

        fns = {"raw client (typed response)": baseline, "raw client, raw response": same_sdk_work, "ctx.llm": ours}
        for fn in fns.values():  # warm up: imports, connections, caches
            for _ in range(50):
                fn()
        times: dict[str, list[float]] = {label: [] for label in fns}
        items = list(fns.items())
        for i in range(rounds * calls):  # rotate call by call, so drift hits all alike
            for label, fn in items[i % 3:] + items[:i % 3]:
                started = time.perf_counter()
                fn()
                times[label].append(time.perf_counter() - started)
        medians = {label: statistics.median(t) for label, t in times.items()}
        print(f"ctx.llm.complete vs the raw openai client, {rounds * calls} rotations of one call each")
        for label, median in medians.items():
            print(f"  {label:<28} median {median * 1e3:7.3f} ms/call")
        ours_t = times["ctx.llm"]
        for label in list(fns)[:2]:
            paired = statistics.median(o / b for o, b in zip(ours_t, times[label]))
            print(f"  ctx.llm / {label:<28} {medians['ctx.llm'] / medians[label]:.3f}x "
                  f"(median of paired ratios {paired:.3f}x)")
        print("  target: ctx.llm <= 1.05x the raw client")


def concurrent(batch: int, delay: float, repeats: int) -> None:
    with server_process(delay) as url, tempfile.TemporaryDirectory() as tmp:
        ctx = ctx_for(Path(tmp), url)
        body = json.dumps({"model": "bench", "messages": MESSAGES}).encode()

        async def run() -> dict[str, list[float]]:
            import aiohttp  # the floor: bare aiohttp posting the same JSON

            session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=1000))

            async def bare() -> object:
                async with session.post(f"{url}/chat/completions", data=body,
                                        headers={"Content-Type": "application/json"}) as reply:
                    return json.loads(await reply.read())

            raw = openai.AsyncOpenAI(api_key="no-key-needed", base_url=url, max_retries=0)
            raw_aio = openai.AsyncOpenAI(api_key="no-key-needed", base_url=url, max_retries=0,
                                         http_client=openai.DefaultAioHttpClient())
            calls = {
                "bare aiohttp": bare,
                "raw SDK, httpx": lambda: raw.chat.completions.create(model="bench", messages=MESSAGES),  # type: ignore[arg-type]
                "raw SDK, aiohttp": lambda: raw_aio.chat.completions.create(model="bench", messages=MESSAGES),  # type: ignore[arg-type]
                "ctx.llm": lambda: ctx.llm.acomplete(MESSAGES),
            }
            times: dict[str, list[float]] = {}
            for label, call in calls.items():  # warm up: each client and its connections
                await call()
                await asyncio.gather(*(call() for _ in range(batch)))
            for _ in range(repeats):  # interleaved: each repeat times every client, one call then the batch
                for label, call in calls.items():
                    started = time.perf_counter()
                    await call()
                    one = time.perf_counter() - started
                    times.setdefault(f"{label} one", []).append(one)
                    started, cpu = time.perf_counter(), time.process_time()
                    results = await asyncio.gather(*(call() for _ in range(batch)))
                    whole = time.perf_counter() - started
                    times.setdefault(f"{label} batch", []).append(whole)
                    times.setdefault(f"{label} ratio", []).append(whole / one)
                    times.setdefault(f"{label} cpu", []).append(time.process_time() - cpu)
                    assert len(results) == batch
            await raw.close()
            await raw_aio.close()
            await session.close()
            return times

        times = {k: statistics.median(v) for k, v in asyncio.run(run()).items()}
        print(f"{batch} concurrent calls, server answers after {delay * 1000:.0f} ms, median of {repeats} repeats "
              "(ratio: median of each repeat's batch / one call)")
        for label in ("bare aiohttp", "raw SDK, httpx", "raw SDK, aiohttp", "ctx.llm"):
            one, whole, cpu = times[f"{label} one"], times[f"{label} batch"], times[f"{label} cpu"]
            print(f"  {label:<17} one {one * 1e3:6.1f} ms   {batch} at once {whole * 1e3:6.1f} ms   "
                  f"ratio {times[f'{label} ratio']:.2f}x   client CPU for the batch {cpu * 1e3:5.0f} ms")
        print(f"  ctx.llm batch / raw SDK (httpx) batch: {times['ctx.llm batch'] / times['raw SDK, httpx batch']:.2f}x; "
              f"/ raw SDK (aiohttp) batch: {times['ctx.llm batch'] / times['raw SDK, aiohttp batch']:.2f}x; "
              "target: ctx.llm batch <= 1.5x one call")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--only", choices=("per-call", "concurrent"))
    args = parser.parse_args()
    if args.only != "concurrent":
        per_call(args.rounds, args.calls)
    if args.only == "per-call":
        return
    concurrent(args.batch, 0.2, args.repeats)


if __name__ == "__main__":
    main()
