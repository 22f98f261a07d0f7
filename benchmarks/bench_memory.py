"""`memory_search` of the built-in memory provider over 1k, 10k and 100k stored memories.

Memories are synthetic sentences over a 5,000-word vocabulary with a Zipf-like word
frequency (so some words are in thousands of memories, most in a few), loaded in one
transaction. Each query is 2-4 words, one of them common; "no-hit" queries match nothing
(ASCII words: FTS only; CJK text: FTS, then the substring scan, which is linear). Timed through the provider's
tool call (`handle_tool_call("memory_search", ...)`: argument checks, FTS5 query, bm25
ranking, JSON result), all sizes in the same process; the growth is the ratio to 1k.
"shared" is the same search once the file also holds another caller's memory (`owner`): each
hit's owner is then looked up before ranking (a file of one owner is ranked without it).

    .venv/bin/python benchmarks/bench_memory.py
"""

from __future__ import annotations

import random
import statistics
import tempfile
import time
from pathlib import Path

from hermes_plugins_builtin.memory import BuiltinMemoryProvider

SIZES = (1_000, 10_000, 100_000)
QUERIES = 200
SEED = 7


def vocabulary(rng: random.Random, size: int = 5_000) -> list[str]:
    letters = "abcdefghijklmnopqrstuvwxyz"
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choice(letters) for _ in range(rng.randint(3, 9))))
    return sorted(words)


def sentences(rng: random.Random, words: list[str], count: int) -> list[str]:
    weights = [1 / (rank + 1) for rank in range(len(words))]  # Zipf: word k is 1/k as frequent as word 1
    return [" ".join(rng.choices(words, weights, k=rng.randint(8, 30))) for _ in range(count)]


def queries(rng: random.Random, words: list[str]) -> list[str]:
    common, rare = words[:50], words[50:]
    return [" ".join([rng.choice(common), *rng.sample(rare, rng.randint(1, 3))]) for _ in range(QUERIES)]


def timed(provider: BuiltinMemoryProvider, texts: list[str], call: str) -> list[float]:
    out = []
    for text in texts:
        started = time.perf_counter()
        if call == "search":
            provider.handle_tool_call("memory_search", {"query": text, "limit": 5})
        else:
            provider.prefetch(text)
        out.append(time.perf_counter() - started)
    return out


def p95(values: list[float]) -> float:
    return sorted(values)[int(len(values) * 0.95)]


def main() -> None:
    rng = random.Random(SEED)
    words = vocabulary(rng)
    asked = queries(rng, words)
    missing = [f"zz{i}qq nothing-here" for i in range(QUERIES)]  # no FTS hit
    unspaced = [f"没有{i}这个" for i in range(QUERIES // 4)]  # no FTS hit, CJK: the substring scan runs
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for size in SIZES:
            provider = BuiltinMemoryProvider(Path(folder) / f"m{size}.db")
            started = time.perf_counter()
            provider.store.save_many((text, ()) for text in sentences(rng, words, size))
            load = time.perf_counter() - started
            timed(provider, asked[:20], "search")  # warm the page cache and statement cache
            hits, misses, pre = timed(provider, asked, "search"), timed(provider, missing, "search"), timed(
                provider, asked, "prefetch")
            scans = timed(provider, unspaced, "search")
            other = BuiltinMemoryProvider(Path(folder) / f"m{size}.db")
            other.initialize("bench", platform="api_server", user_id="someone-else")
            other.store.save("another caller's memory")
            other.shutdown()
            shared = timed(provider, asked, "search")
            rows.append((size, load, statistics.median(hits), p95(hits), statistics.median(misses),
                         statistics.median(pre), statistics.median(scans), statistics.median(shared)))
            provider.shutdown()
    base = rows[0]
    print(f"memory_search, {QUERIES} queries per size (median / p95), one process\n")
    print(f"{'memories':>9} {'load':>8} {'search median':>14} {'p95':>9} {'x 1k':>6} "
          f"{'no-hit median':>14} {'x 1k':>6} {'prefetch median':>16} {'CJK no-hit (scan)':>18} {'x 1k':>6} "
          f"{'shared median':>14}")
    for size, load, median, tail, miss, pre, scan, shared in rows:
        print(f"{size:>9,} {load:>7.2f}s {median * 1e3:>11.3f} ms {tail * 1e3:>6.3f} ms {median / base[2]:>5.1f}x "
              f"{miss * 1e3:>11.3f} ms {miss / base[4]:>5.1f}x {pre * 1e3:>13.3f} ms "
              f"{scan * 1e3:>15.3f} ms {scan / base[6]:>5.1f}x {shared * 1e3:>11.3f} ms")


if __name__ == "__main__":
    main()
