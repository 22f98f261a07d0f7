"""The budget check's added latency per `ctx.llm` call (issue 55): the same call without a budget,
with one on the SQLite ledger under the home, with one in PostgreSQL (`state.url`), and with one in
PostgreSQL with Redis's hot counters (`state.redis_url`), rotated call by call in one process
against the scripted server (its own process, answering at once).

    .venv/bin/python benchmarks/bench_budgets.py          # --rounds 10 --calls 200
    .venv/bin/python benchmarks/bench_budgets.py --pg-sync on
    .venv/bin/python benchmarks/bench_budgets.py --only utilisation [--cap 100000] [--redis]
    .venv/bin/python benchmarks/bench_budgets.py --only operations   # a reservation and settlement alone

A budgeted call reserves before its request (one transaction that locks its holders and checks
their budgets) and settles after it (one more); on PostgreSQL each is a round trip or four on
loopback. Variants: the plugin's budget alone, and the plugin's with the fleet's
(`budgets.fleet`: two holders, one reservation). `complete` (sync) and `acomplete` (async, one
call at a time: its writes go to the ledger's threads) are both timed. Reported: the p50 of
each, and the median of the paired differences against the unbudgeted call timed beside it.
Targets: PostgreSQL alone within +3 ms p50 of no budget, with Redis within +1 ms (a reservation is
one Lua script; the settlement one more, then the ledger's write, then one more).

`--only utilisation`: eight host processes with 32 calls each running at once (`acomplete` in a
loop until refused) against one PostgreSQL, one plugin's `tokens_per_day` cap, and the scripted
server (its own process) answering each call after 50 ms with a known usage (80 tokens; each call
reserves 100: 35 of prompt, 65 of max_tokens), on PostgreSQL alone or with Redis (`--redis`): what share of the cap was spent when the first
call was refused, what was spent in the end, and any overspend (target: >= 90 %, overspend 0).

The bench starts its own PostgreSQL (tests/helpers/postgres.py's `PgCluster`), and Redis
(tests/helpers/redis.py's `RedisServer`: no persistence, as for hot counters), PostgreSQL with the stock
durability settings but `synchronous_commit = off` (the SQLite ledger's durability: WAL,
synchronous NORMAL); `--pg-sync on` waits on the disk at each commit.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from _scripted import server_process  # noqa: E402

from hermes_core import PluginContext, PluginManager  # noqa: E402
from tests.helpers import postgres as pg_helper  # noqa: E402
from tests.helpers.redis import RedisServer  # noqa: E402

MESSAGES = [{"role": "user", "content": "ping"}]
PROMPT = "hi, please answer in one short word: is the sky blue or green?"  # 35 tokens, as budget.prompt_tokens counts
PLUGIN = "plugins:\n  entries:\n    bench:\n      llm_budget: {tokens_per_day: 1000000000, cost_per_day: 100000}\n"
FLEET = "budgets:\n  fleet: {tokens_per_day: 1000000000}\n"
PRICING = "  pricing:\n    bench: {input: 1, output: 2}\n"
_managers: list[PluginManager] = []


def cluster(sync: str) -> Any:
    settings = pg_helper.SETTINGS
    for key in ("fsync", "full_page_writes", "wal_level", "max_wal_senders"):
        settings.pop(key, None)
    settings.update(synchronous_commit=sync)
    return pg_helper.PgCluster.create()


def ctx_for(home: Path, url: str, extra: str = "") -> PluginContext:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.yaml").write_text(f"model:\n  provider: custom\n  model: bench\n  base_url: {url}\n{PRICING}{extra}")
    hour_ago = time.time() - 3600  # an operator's config is not seconds old
    os.utime(home / "config.yaml", (hour_ago, hour_ago))
    manager = PluginManager(home=home, discover_plugins=False).load()
    _managers.append(manager)
    ctx = manager.add_plugin(lambda ctx: ctx.register_command("bench", str), "bench").ctx
    assert ctx is not None
    return ctx


def timed(variants: dict[str, Callable[[], None]], rounds: int, calls: int) -> dict[str, list[float]]:
    for fn in variants.values():  # warm up: imports, connections, the ledger's tables
        for _ in range(30):
            fn()
    times: dict[str, list[float]] = {label: [] for label in variants}
    items = list(variants.items())
    for i in range(rounds * calls):  # rotate call by call, so drift hits all alike
        for label, fn in items[i % len(items):] + items[:i % len(items)]:
            started = time.perf_counter()
            fn()
            times[label].append(time.perf_counter() - started)
    return times


def report(title: str, times: dict[str, list[float]]) -> None:
    print(title)
    base = times["no budget"]
    for label, values in times.items():
        line = f"  {label:<34} p50 {statistics.median(values) * 1e3:7.3f} ms"
        if label != "no budget":
            diffs = [v - b for v, b in zip(values, base)]
            line += f"   added: paired p50 {statistics.median(diffs) * 1e3:+.3f} ms"
        print(line)


HOST = """
import asyncio, json, pathlib, sys, time
from hermes_core import PluginLlmBudgetError, PluginManager

folder, index, workers = pathlib.Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
manager = PluginManager(discover_plugins=False).load()
ctx = manager.add_plugin(lambda ctx: ctx.register_command("probe", lambda raw: raw), "probe").ctx
(folder / f"ready-{index}").touch()
while not (folder / "go").exists():
    time.sleep(0.01)
first = []

async def worker():
    done = 0
    while True:
        try:
            await ctx.llm.acomplete([{"role": "user", "content": PROMPT}], max_tokens=65)
        except PluginLlmBudgetError as exc:
            first.append(time.time())
            return done
        done += 1

async def main():
    return await asyncio.gather(*(worker() for _ in range(workers)))

print(json.dumps({"done": sum(asyncio.run(main())), "first": min(first)}))
"""


def utilisation(pg: Any, cap: int, hosts: int, concurrent: int, redis_url: str | None) -> None:
    """`hosts` processes with `concurrent` calls each against one cap on one database."""
    import json
    import subprocess

    from hermes_core.testing import Reply, ScriptedServer

    with tempfile.TemporaryDirectory() as tmp, ScriptedServer() as server:
        folder = Path(tmp)
        home = folder / "home"
        home.mkdir()
        (home / "config.yaml").write_text(
            f"model:\n  provider: custom\n  model: bench\n  base_url: {server.url}\n"
            f"plugins:\n  entries:\n    probe:\n      llm_budget: {{tokens_per_day: {cap}}}\n"
            f"state:\n  url: {pg.create_database(f'bench_utilisation_{int(time.time())}')}\n"
            + (f"  redis_url: {redis_url}\n" if redis_url else ""))
        answered_at: list[float] = []  # when each answer was sent (the 50 ms after the request came)

        def answer(body: Any) -> Reply:
            answered_at.append(time.time() + 0.05)
            return Reply("ok", usage={"prompt_tokens": 30, "completion_tokens": 50, "total_tokens": 80}, delay=0.05)

        server.answer(answer)
        env = {**os.environ, "HERMES_HOME": str(home)}
        host = HOST.replace("PROMPT", repr(PROMPT))
        procs = [subprocess.Popen([sys.executable, "-c", host, str(folder), str(i), str(concurrent)], env=env,
                                  stdout=subprocess.PIPE, text=True) for i in range(hosts)]
        while len(list(folder.glob("ready-*"))) < hosts:
            time.sleep(0.05)
        started = time.perf_counter()
        (folder / "go").touch()
        reports = [json.loads(proc.communicate(timeout=600)[0]) for proc in procs]
        took = time.perf_counter() - started
        answered = len(server.requests)
    spent = answered * 80
    first = min(report["first"] for report in reports)
    used_then = 80 * sum(1 for moment in answered_at if moment <= first)
    print(f"{hosts} hosts x {concurrent} concurrent calls, one tokens_per_day cap of {cap:,} on one PostgreSQL"
          f"{' with Redis counters' if redis_url else ''} "
          f"({took:.1f} s)")
    print(f"  spent when the first call was refused: {used_then:,.0f} tokens ({used_then / cap:.2%} of the cap)")
    print(f"  spent in the end: {spent:,} tokens ({spent / cap:.2%}) in {answered:,} calls; overspend "
          f"{max(spent - cap, 0):,} tokens; target: >= 90 % before the first refusal, overspend 0")


def operations(pg: Any, redis_url: str, count: int = 2000) -> None:
    """One reservation and its settlement alone, on the ledger in PostgreSQL and on Redis's counters
    (the settlement's ledger write happens on the counters' thread, after the call): their p50."""
    import importlib

    ledger_module = importlib.import_module("hermes_core._llm.ledger")
    counters_module = importlib.import_module("hermes_core._llm.counters")
    budget = importlib.import_module("hermes_core._llm.budget").Budget("bench", "plugins.llm_budget",
                                                                      tokens_per_day=10 ** 12)
    url = pg.create_database(f"bench_operations_{int(time.time())}")
    with tempfile.TemporaryDirectory() as tmp:
        ledger = ledger_module.Ledger(Path(tmp), url=url)
        counters = counters_module.Counters(redis_url, ledger)

        def on_pg() -> None:
            ledger.write(ledger.settling(ledger.write(ledger.reserving([budget], 100, 0.0, 60.0)), 80, 0.0))

        def on_redis() -> None:
            counters.settle(counters.reserve([budget], 100, 0.0, 60.0), 80, 0.0)

        times: dict[str, list[float]] = {"PostgreSQL ledger": [], "Redis counters": []}
        for label, fn in [("PostgreSQL ledger", on_pg), ("Redis counters", on_redis)] * 2:  # warm, then time
            times[label] = []
            for _ in range(count):
                started = time.perf_counter()
                fn()
                times[label].append(time.perf_counter() - started)
        counters.close()
        ledger.close()
    print(f"a reservation and its settlement alone, {count} each")
    for label, values in times.items():
        print(f"  {label:<34} p50 {statistics.median(values) * 1e3:7.3f} ms")


# each variant's short name (for --variants) and label
VARIANTS = {"sqlite": "SQLite ledger", "pg": "PostgreSQL ledger", "pg+fleet": "PostgreSQL ledger, plugin + fleet",
            "redis": "PostgreSQL + Redis counters", "redis+fleet": "PostgreSQL + Redis, plugin + fleet"}


def latency(pg: Any, redis: Any, args: argparse.Namespace) -> None:
    """Each variant's call against the same call without a budget, rotated call by call; `args.runs`
    runs (the load average before each), then the median of the runs' paired differences."""
    shared = f"state:\n  url: {pg.create_database('bench_budgets')}\n"
    hot = f"  redis_url: {redis.url}\n"
    extras = {"no budget": None, "SQLite ledger": PLUGIN, "PostgreSQL ledger": PLUGIN + shared,
              "PostgreSQL ledger, plugin + fleet": PLUGIN + FLEET + shared,
              "PostgreSQL + Redis counters": PLUGIN + shared + hot,
              "PostgreSQL + Redis, plugin + fleet": PLUGIN + FLEET + shared + hot}
    chosen = [name.strip() for name in args.variants.split(",") if name.strip()] or list(VARIANTS)
    unknown = [name for name in chosen if name not in VARIANTS]
    if unknown:
        raise SystemExit(f"--variants: unknown {', '.join(unknown)} (known: {', '.join(VARIANTS)})")
    wanted = ["no budget", *(VARIANTS[name] for name in chosen)]
    modes = {mode.strip() for mode in args.modes.split(",")}
    with server_process(0.0) as url, tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        ctxs = {label: ctx_for(folder / f"home{index}", url, extras[label] or "")
                for index, label in enumerate(wanted)}
        loop = asyncio.new_event_loop()
        added: dict[str, dict[str, list[float]]] = {"complete": {}, "acomplete": {}}
        try:
            for run in range(1, args.runs + 1):
                load = os.getloadavg()
                if "sync" in modes:
                    sync = {label: (lambda ctx=ctx: ctx.llm.complete(MESSAGES)) for label, ctx in ctxs.items()}
                    found = timed(sync, args.rounds, args.calls)
                    report(f"run {run}: ctx.llm.complete, {args.rounds * args.calls} rotations (PostgreSQL "
                           f"synchronous_commit {args.pg_sync}), load {load[0]:.2f} {load[1]:.2f}", found)
                    for label, diff in paired(found).items():
                        added["complete"].setdefault(label, []).append(diff)
                if "async" in modes:
                    aio = {label: (lambda ctx=ctx: loop.run_until_complete(ctx.llm.acomplete(MESSAGES)))
                           for label, ctx in ctxs.items()}
                    found = timed(aio, args.rounds, args.calls)
                    report(f"run {run}: ctx.llm.acomplete, one at a time, {args.rounds * args.calls} rotations, "
                           f"load {load[0]:.2f} {load[1]:.2f}", found)
                    for label, diff in paired(found).items():
                        added["acomplete"].setdefault(label, []).append(diff)
        finally:
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()
        if args.runs > 1:
            print(f"median of {args.runs} runs' paired p50 differences against no budget")
            for mode, found in added.items():
                for label, diffs in found.items():
                    print(f"  {mode:<10} {label:<34} {statistics.median(diffs) * 1e3:+.3f} ms   "
                          f"(runs: {', '.join(f'{d * 1e3:+.2f}' for d in diffs)})")
        print("  targets: PostgreSQL ledger alone <= +3 ms p50 against no budget, with Redis <= +1 ms")


def paired(times: dict[str, list[float]]) -> dict[str, float]:
    """Each variant's median paired difference against the call without a budget."""
    base = times["no budget"]
    return {label: statistics.median(v - b for v, b in zip(values, base))
            for label, values in times.items() if label != "no budget"}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--pg-sync", choices=["on", "off"], default="off")
    parser.add_argument("--only", choices=["latency", "utilisation", "operations"])
    parser.add_argument("--cap", type=int, default=100_000)
    parser.add_argument("--redis", action="store_true", help="utilisation: with Redis's counters")
    parser.add_argument("--runs", type=int, default=1, help="latency: runs, each of --rounds x --calls rotations")
    parser.add_argument("--variants", default="", help="latency: the budgets to time, comma-separated: "
                                                       f"{', '.join(VARIANTS)} (all by default)")
    parser.add_argument("--modes", default="sync,async", help="latency: sync, async or both")
    args = parser.parse_args()
    os.environ.pop("HERMES_STATE_URL", None)
    os.environ.pop("HERMES_REDIS_URL", None)
    pg = cluster(args.pg_sync)
    redis = RedisServer.create()
    try:
        print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
        if args.only in (None, "operations"):
            operations(pg, redis.url)
        if args.only in (None, "utilisation"):
            utilisation(pg, args.cap, 8, 32, redis.url if args.redis else None)
        if args.only in ("utilisation", "operations"):
            return
        latency(pg, redis, args)
    finally:
        redis.close()
        pg.close()


if __name__ == "__main__":
    main()
