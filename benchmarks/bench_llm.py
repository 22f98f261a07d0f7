"""`ctx.llm` against the raw openai client on the same loopback server, and 100 concurrent
`acomplete` calls against a server that answers after 200 ms; each also with an LLM budget set.

    .venv/bin/python benchmarks/bench_llm.py [--rounds 10] [--calls 200] [--repeats 5] [--only concurrent]
                                             [--ledger-rows 0]

1. Per call: `ctx.llm.complete` (trust gate, config check, routing, credentials, audit line)
   against `openai.OpenAI(...).chat.completions.create` on the same scripted server (run in
   its own process), rotating call by call in one process. Target: at most 1.05x. Also
   against the same SDK work ctx.llm does (`with_raw_response` + `json.loads`), which
   isolates what the gate, routing and audit cost.
2. Concurrency: one `acomplete` alone, then 100 at once with `asyncio.gather`, each answered
   after 200 ms. Target: the batch within 1.5x of the single call. Beside it, in the same run
   and interleaved: bare aiohttp posting the same JSON (the floor), and the raw `AsyncOpenAI`
   on its default httpx transport and on its aiohttp transport (`DefaultAioHttpClient`).
3. Budgets: both sections also time `ctx.llm` of a plugin with an LLM budget (limits far above
   what the run spends, so nothing waits or is refused), from a second home in the same process,
   interleaved with the same calls without one. A budgeted call reserves in
   `$HERMES_HOME/llm-usage.db` before its request and settles after it (one SQLite transaction
   each; on the event loop for `acomplete`). Targets: at most +1 ms per call; the batch of 100
   within 1.5x of one call. Every call adds a row to the ledger, so the per-call section also
   shows the difference round by round with the rows the ledger held, and `--ledger-rows N` puts
   N calls of today into the budgeted ledger first (a plugin's busy day).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import openai

from _scripted import server_process

from hermes_core import PluginContext, PluginManager

MESSAGES = [{"role": "user", "content": "ping"}]
_managers: list[PluginManager] = []
# far above what a run spends: every call is reserved and settled, none waits or is refused
BUDGET = "plugins:\n  entries:\n    bench:\n      llm_budget: {tokens_per_day: 100000000, cost_per_day: 1000}\n"


def ctx_for(home: Path, url: str, extra: str = "") -> PluginContext:
    (home / "config.yaml").write_text(f"model:\n  provider: custom\n  model: bench\n  base_url: {url}\n{extra}")
    hour_ago = time.time() - 3600  # an operator's config is not seconds old
    os.utime(home / "config.yaml", (hour_ago, hour_ago))
    manager = PluginManager(home=home, discover_plugins=False).load()
    _managers.append(manager)  # a plugin's ctx works while its manager lives
    ctx = manager.add_plugin(lambda ctx: ctx.register_command("bench", str), "bench").ctx
    assert ctx is not None
    return ctx


def budgeted_ctx(home: Path, url: str, rows: int) -> PluginContext:
    """A ctx whose plugin has `BUDGET`, its ledger made by one call and then given `rows` more
    settled calls of today: in the day's and month's totals, and as rows of calls over a minute
    old, which the next reservation prunes (what a ledger looks like after a busy day)."""
    ctx = ctx_for(home, url, BUDGET)
    ctx.llm.complete(MESSAGES)
    if rows:
        with sqlite3.connect(home / "llm-usage.db") as db:
            (day, month, started), = db.execute("SELECT day, month, started FROM calls").fetchall()
            db.executemany("INSERT INTO calls (who, day, month, started, tokens, cost, expires) "
                           "VALUES ('bench', ?, ?, ?, 2, 0, NULL)", ((day, month, started - 120) for _ in range(rows)))
            db.executemany("UPDATE totals SET tokens = tokens + ?, requests = requests + ? WHERE who = 'bench' "
                           "AND period = ?", ((2 * rows, rows, period) for period in (day, month)))
        db.close()
    return ctx


def ledger_rows(home: Path) -> int:
    """The calls of today the ledger holds for the budgeted plugin (settled and running)."""
    db = sqlite3.connect(home / "llm-usage.db")
    try:
        (settled,) = db.execute("SELECT COALESCE(MAX(requests), 0) FROM totals WHERE who = 'bench' "
                                "AND length(period) = 10").fetchone()
        (running,) = db.execute("SELECT COUNT(*) FROM calls WHERE expires IS NOT NULL").fetchone()
        return int(settled) + int(running)
    finally:
        db.close()


def per_call(rounds: int, calls: int, rows: int) -> None:
    with server_process(0.0) as url, tempfile.TemporaryDirectory() as tmp, \
            tempfile.TemporaryDirectory() as budget_home:
        ctx = ctx_for(Path(tmp), url)
        budgeted = budgeted_ctx(Path(budget_home), url, rows)
        raw = openai.OpenAI(api_key="no-key-needed", base_url=url, max_retries=0)

        def baseline() -> None:
            raw.chat.completions.create(model="bench", messages=MESSAGES, timeout=30)  # type: ignore[arg-type]

        def same_sdk_work() -> None:  # what ctx.llm asks of the SDK, without the gate, routing, audit
            reply = raw.chat.completions.with_raw_response.create(model="bench", messages=MESSAGES, timeout=30)  # type: ignore[arg-type]
            json.loads(reply.http_response.content)

        def ours() -> None:
            ctx.llm.complete(MESSAGES)

        def ours_budgeted() -> None:
            budgeted.llm.complete(MESSAGES)

        fns = {"raw client (typed response)": baseline, "raw client, raw response": same_sdk_work, "ctx.llm": ours,
               "ctx.llm, budget": ours_budgeted}
        for fn in fns.values():  # warm up: imports, connections, caches
            for _ in range(50):
                fn()
        times: dict[str, list[float]] = {label: [] for label in fns}
        items = list(fns.items())
        held = []  # the rows in the budgeted ledger as each round starts
        for i in range(rounds * calls):  # rotate call by call, so drift hits all alike
            if i % calls == 0:
                held.append(ledger_rows(Path(budget_home)))
            for label, fn in items[i % len(items):] + items[:i % len(items)]:
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
        with_budget = times["ctx.llm, budget"]
        diffs = [b - o for b, o in zip(with_budget, ours_t)]
        print(f"  ctx.llm with a budget - without: {(medians['ctx.llm, budget'] - medians['ctx.llm']) * 1e3:+.3f} ms/call "
              f"(median of paired differences {statistics.median(diffs) * 1e3:+.3f} ms), "
              f"{medians['ctx.llm, budget'] / medians['ctx.llm']:.3f}x; target: <= +1 ms/call")
        print("  by round, rows in the ledger at its start: median of paired differences")
        for index, start in enumerate(range(0, len(diffs), calls)):
            print(f"    round {index + 1:>2} {held[index]:>8,} rows  {statistics.median(diffs[start:start + calls]) * 1e3:+.3f} ms")


def concurrent(batch: int, delay: float, repeats: int, rows: int) -> None:
    with server_process(delay) as url, tempfile.TemporaryDirectory() as tmp, \
            tempfile.TemporaryDirectory() as budget_home:
        ctx = ctx_for(Path(tmp), url)
        budgeted = budgeted_ctx(Path(budget_home), url, rows)
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
            calls: dict[str, Callable[[], Awaitable[object]]] = {
                "bare aiohttp": bare,
                "raw SDK, httpx": lambda: raw.chat.completions.create(model="bench", messages=MESSAGES),  # type: ignore[arg-type]
                "raw SDK, aiohttp": lambda: raw_aio.chat.completions.create(model="bench", messages=MESSAGES),  # type: ignore[arg-type]
                "ctx.llm": lambda: ctx.llm.acomplete(MESSAGES),
                "ctx.llm, budget": lambda: budgeted.llm.acomplete(MESSAGES),
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
        for label in ("bare aiohttp", "raw SDK, httpx", "raw SDK, aiohttp", "ctx.llm", "ctx.llm, budget"):
            one, whole, cpu = times[f"{label} one"], times[f"{label} batch"], times[f"{label} cpu"]
            print(f"  {label:<17} one {one * 1e3:6.1f} ms   {batch} at once {whole * 1e3:6.1f} ms   "
                  f"ratio {times[f'{label} ratio']:.2f}x   client CPU for the batch {cpu * 1e3:5.0f} ms")
        print(f"  ctx.llm batch / raw SDK (httpx) batch: {times['ctx.llm batch'] / times['raw SDK, httpx batch']:.2f}x; "
              f"/ raw SDK (aiohttp) batch: {times['ctx.llm batch'] / times['raw SDK, aiohttp batch']:.2f}x; "
              "target: ctx.llm batch <= 1.5x one call")
        print(f"  with a budget: batch {times['ctx.llm, budget batch'] * 1e3:.1f} ms against "
              f"{times['ctx.llm batch'] * 1e3:.1f} ms without "
              f"({(times['ctx.llm, budget batch'] - times['ctx.llm batch']) * 1e3:+.1f} ms), client CPU "
              f"{(times['ctx.llm, budget cpu'] - times['ctx.llm cpu']) * 1e3:+.0f} ms; "
              f"target: ctx.llm batch with a budget <= 1.5x one call; {ledger_rows(Path(budget_home)):,} rows in the ledger")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--only", choices=("per-call", "concurrent"))
    parser.add_argument("--ledger-rows", type=int, default=0,
                        help="calls of today put into the budgeted plugin's ledger before timing (default 0)")
    args = parser.parse_args()
    if args.only != "concurrent":
        per_call(args.rounds, args.calls, args.ledger_rows)
    if args.only == "per-call":
        return
    concurrent(args.batch, 0.2, args.repeats, args.ledger_rows)


if __name__ == "__main__":
    main()
