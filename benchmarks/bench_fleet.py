"""Shared state on PostgreSQL against SQLite under the home, side by side in one run (issue 53).

    .venv/bin/python benchmarks/bench_fleet.py            # the issue's sizes (1M responses, 1M messages)
    .venv/bin/python benchmarks/bench_fleet.py --quick    # 100k responses, 100k messages, 1k sessions
    .venv/bin/python benchmarks/bench_fleet.py --only serve,store,search,migrate --responses 300000

The bench starts its own PostgreSQL (tests/helpers/postgres.py's `PgCluster`: `initdb` into a
temporary folder, as the `postgres` user when root, on a free port of 127.0.0.1) with the stock
settings (`fsync` and `full_page_writes` on) but `synchronous_commit = off`, the durability the
SQLite files have (`synchronous = NORMAL` in WAL mode: a commit is not synced to the disk; a crash
of the machine may lose the latest ones, never consistency); `--pg-sync on` for PostgreSQL's
default, which waits on the disk at each commit. `shared_buffers = 256MB`. In the same run:

- **serve**: the same non-streamed chat completion with the stock openai client (one kept-alive
  connection per server) through a `hermes serve` on a SQLite home and one with
  `HERMES_STATE_URL`, and straight to the scripted model, in turn (the order swapped each round):
  p50 of each, and of each serve's added latency. Target: PostgreSQL within +3 ms p50 of SQLite.
- **store**: `ApiStore.save_response` of a new response then `response` of a random stored one, on
  a store prefilled with `--small` responses and one with `--responses`, alternating, on each
  backend; `max_stored` above both, so no prune removes the prefill. Target: large / small p50 <= 1.2.
- **search**: `SessionStore.search` over `--messages` messages of generated text (a Zipf-like
  vocabulary of 20,000 words, 5 to 60 words a message, 10 a session), on each backend, alternating:
  selective queries (words in 30 messages each) and common ones (a word in half of the messages,
  one in a tenth, both) reported apart. Target: p95 <= 50 ms.
- **migrate**: a home's sessions.db of `--sessions` sessions of 10 messages each, written through
  `SessionStore` (a `step()` per session), then `hermes state migrate --to URL` timed as a process.
  Target: 10,000 sessions and 100,000 messages in <= 60 s.

Prefills go in bulk (SQLite: `executemany` in one transaction, then the WAL checkpointed;
PostgreSQL: `COPY`, the search index dropped and built again after, then `VACUUM ANALYZE` and a
`CHECKPOINT`), and are not what is measured.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from _scripted import server_process  # noqa: E402
from bench_api_server import serve  # noqa: E402  (hermes serve --port 0 and its base URL)

from hermes_core.agent import SessionStore  # noqa: E402
from hermes_core.api_server.store import ApiStore  # noqa: E402
from tests.helpers import postgres as pg_helper  # noqa: E402

HERMES = str(Path(sys.executable).with_name("hermes"))
MS = 1000.0
OWNER = "key-bench"


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(int(len(ordered) * share), len(ordered) - 1)]


def p50(values: list[float]) -> float:
    return statistics.median(values) * MS


def p95(values: list[float]) -> float:
    return percentile(values, 0.95) * MS


def cluster(sync: str) -> Any:
    """A PostgreSQL cluster with the stock durability settings (and `synchronous_commit = sync`)."""
    settings = pg_helper.SETTINGS
    for key in ("fsync", "full_page_writes", "wal_level", "max_wal_senders", "max_parallel_workers_per_gather"):
        settings.pop(key, None)
    settings.update(synchronous_commit=sync, shared_buffers="'256MB'", max_wal_size="'4GB'",
                    maintenance_work_mem="'256MB'")
    return pg_helper.PgCluster.create()


# -- 1. hermes serve ---------------------------------------------------------------------------------


def bench_serve(pg: Any, requests: int, tmp: Path) -> None:
    import openai

    url = pg.create_database()
    with server_process(0.0, "echo", echo=True) as model:
        envs = {}
        for name in ("sqlite", "postgresql"):
            home = tmp / f"serve-{name}"
            home.mkdir()
            (home / "config.yaml").write_text(f"model:\n  provider: custom\n  model: bench\n  base_url: {model}\n",
                                              encoding="utf-8")
            old = time.time() - 3600  # an installed config, not one written in the last seconds
            os.utime(home / "config.yaml", (old, old))
            envs[name] = {**os.environ, "HERMES_HOME": str(home)}
            envs[name].pop("HERMES_STATE_URL", None)
        envs["postgresql"]["HERMES_STATE_URL"] = url
        procs = {name: serve(env) for name, env in envs.items()}
        try:
            clients: dict[str, Any] = {name: openai.OpenAI(base_url=u, api_key="unused", max_retries=0)
                                       for name, (_, u) in procs.items()}
            clients["model"] = openai.OpenAI(base_url=model, api_key="unused", max_retries=0)
            times: dict[str, list[float]] = {name: [] for name in clients}
            messages = [{"role": "user", "content": "hi"}]
            order = ["sqlite", "postgresql", "model"]
            for index in range(requests + 20):
                for name in (order if index % 2 else order[::-1]):
                    started = time.perf_counter()
                    clients[name].chat.completions.create(model="bench" if name == "model" else "hermes-agent",
                                                          messages=messages)
                    if index >= 20:
                        times[name].append(time.perf_counter() - started)
        finally:
            for proc, _ in procs.values():
                proc.terminate()
                proc.wait(30)
    added = {name: [a - b for a, b in zip(times[name], times["model"])] for name in ("sqlite", "postgresql")}
    print(f"serve: non-streamed chat completion, openai SDK (kept-alive), {requests} rounds: straight to the model "
          f"p50 {p50(times['model']):.2f} ms")
    for name in ("sqlite", "postgresql"):
        print(f"  on {name:<10}: through hermes serve p50 {p50(times[name]):.2f} ms (p90 "
              f"{percentile(times[name], 0.9) * MS:.2f}); added p50 {p50(added[name]):.2f} ms "
              f"(p90 {percentile(added[name], 0.9) * MS:.2f})")
    gap = [a - b for a, b in zip(times["postgresql"], times["sqlite"])]
    print(f"  PostgreSQL - SQLite, paired per round: p50 {p50(gap):+.2f} ms, difference of p50s "
          f"{p50(times['postgresql']) - p50(times['sqlite']):+.2f} ms   (target <= +3 ms)")


# -- 2. the API server's store -------------------------------------------------------------------------

_BODY = ('{{"id": "{id}", "object": "response", "created_at": {created}, "status": "completed", '
         '"model": "hermes-agent", "output": [{{"type": "message", "id": "msg_{id}", "role": "assistant", '
         '"status": "completed", "content": [{{"type": "output_text", "annotations": [], "text": '
         '"The test failed because the fixture closed the file before the reader was done with it; '
         'moving the close after the loop fixes it."}}]}}], "usage": {{"input_tokens": 1200, '
         '"output_tokens": 80, "total_tokens": 1280}}}}')


def response_rows(count: int, start: float) -> Iterator[list[tuple[Any, ...]]]:
    """The prefill, in batches: stored responses of the last days."""
    rng = random.Random(53)
    for first in range(0, count, 50_000):
        batch = []
        for i in range(first, min(count, first + 50_000)):
            rid = f"resp_{i:012d}"
            created = start - rng.random() * 5 * 86400
            batch.append((rid, created, OWNER, f"sess_{i // 4:010d}", 2 * (i % 4) + 2,
                          _BODY.format(id=rid, created=int(created))))
        yield batch


_RESPONSE_COLUMNS = "id, created, owner, session_id, seq, body"


def prefill_responses(store: ApiStore, count: int, url: str | None) -> float:
    started = time.perf_counter()
    if url is None:
        with store._writing() as db:
            for batch in response_rows(count, time.time()):
                db.executemany(f"INSERT INTO responses ({_RESPONSE_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?)", batch)
    else:
        import psycopg

        store.ping()  # the schema, made by the store
        with psycopg.connect(url) as conn:
            with conn.cursor().copy(f"COPY responses ({_RESPONSE_COLUMNS}) FROM STDIN") as copy:
                for batch in response_rows(count, time.time()):
                    for row in batch:
                        copy.write_row(row)
    settle(url, "responses", store)
    return time.perf_counter() - started


def settle(url: str | None, table: str, store: Any) -> None:
    """After a prefill: its writes out of the way of what is measured (analysed, checkpointed)."""
    if url is None:
        import sqlite3

        with contextlib.closing(sqlite3.connect(store.path)) as db:
            db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"VACUUM ANALYZE {table}")
        conn.execute("CHECKPOINT")


def bench_store(pg: Any, small: int, large: int, requests: int, tmp: Path) -> None:
    rng = random.Random(7)
    new = iter(range(10**9))

    def one(store: ApiStore, size: int) -> float:
        rid = f"resp_new_{next(new):09d}"
        body = json.loads(_BODY.format(id=rid, created=int(time.time())))
        old = f"resp_{rng.randrange(size):012d}"
        started = time.perf_counter()
        store.save_response(body, OWNER, "sess_new", 2)
        found = store.response(old, OWNER)
        took = time.perf_counter() - started
        assert found is not None and found[0]["id"] == old
        return took

    for backend in ("sqlite", "postgresql"):
        stores = {}
        for size in (small, large):
            url = None if backend == "sqlite" else pg.create_database()
            home = tmp / f"store-{backend}-{size}"
            home.mkdir()
            store = ApiStore(home, url=url, max_stored=2 * large)
            took = prefill_responses(store, size, url)
            print(f"store: {backend} prefilled with {size:,} responses in {took:.1f} s", flush=True)
            stores[size] = store
        times: dict[int, list[float]] = {small: [], large: []}
        for index in range(requests + 20):
            for size in ((small, large) if index % 2 else (large, small)):
                took = one(stores[size], size)
                if index >= 20:
                    times[size].append(took)
        ratio = statistics.median(times[large]) / statistics.median(times[small])
        print(f"store on {backend}: save_response + response, {requests} each: at {small:,} stored p50 "
              f"{p50(times[small]):.3f} ms (p95 {p95(times[small]):.3f}), at {large:,} stored p50 "
              f"{p50(times[large]):.3f} ms (p95 {p95(times[large]):.3f}); ratio {ratio:.2f}x   (target <= 1.2x)",
              flush=True)
        for store in stores.values():
            store.close()


# -- 3. session search ---------------------------------------------------------------------------------

_SYLLABLES = ["ka", "lo", "mi", "ne", "ru", "ta", "shi", "po", "ve", "dra", "gon", "tel", "bri", "cu", "sen",
              "mor", "fa", "zu", "qua", "rex", "pli", "ost", "un", "der", "val", "ith", "ber", "col"]
_PLAIN = ("the a to of and in is it that for you this with on be are not can file test function error "
          "should use run code change fix line value return call data config model read write check "
          "need will if what how when add update try work").split()
COMMON = {"deploy": 0.5, "timeout": 0.1}  # words in that share of the messages


def words(rng: random.Random, count: int, avoid: set[str]) -> list[str]:
    found: list[str] = []
    seen = set(avoid)
    while len(found) < count:
        word = "".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 4)))
        if word not in seen:
            seen.add(word)
            found.append(word)
    return found


def corpus(count: int) -> tuple[Iterator[list[str]], list[str]]:
    """`count` message texts in batches, and the rare words (each in 30 messages) to search for."""
    rng = random.Random(1153)
    vocab = _PLAIN + words(rng, 20_000 - len(_PLAIN), set(_PLAIN) | set(COMMON))
    rare = words(rng, 40, set(vocab) | set(COMMON))
    weights = [1.0 / (rank + 1) for rank in range(len(vocab))]
    cumulative = []
    total = 0.0
    for weight in weights:
        total += weight
        cumulative.append(total)
    planted: dict[int, list[str]] = {}
    for word in rare:
        for index in rng.sample(range(count), min(30, count)):
            planted.setdefault(index, []).append(word)

    def batches() -> Iterator[list[str]]:
        for first in range(0, count, 20_000):
            texts = []
            for index in range(first, min(count, first + 20_000)):
                chosen = rng.choices(vocab, cum_weights=cumulative, k=rng.randint(5, 60))
                for word, share in COMMON.items():
                    if rng.random() < share:
                        chosen.insert(rng.randrange(len(chosen) + 1), word)
                for word in planted.get(index, ()):
                    chosen.insert(rng.randrange(len(chosen) + 1), word)
                texts.append(" ".join(chosen).capitalize() + ".")
            yield texts

    return batches(), rare


def message_rows(texts: list[str], first: int, now: float) -> list[tuple[Any, ...]]:
    rows = []
    for offset, text in enumerate(texts):
        index = first + offset
        role = "user" if index % 2 == 0 else "assistant"
        rows.append((f"s{index // 10:08d}", index % 10 + 1, role, json.dumps({"role": role, "content": text}),
                     text, now + index * 0.001))
    return rows


_MESSAGE_COLUMNS = "session_id, seq, role, body, text, created"


def prefill_messages(store: SessionStore, count: int, url: str | None) -> tuple[float, list[str]]:
    started = time.perf_counter()
    now = time.time()
    batches, rare = corpus(count)
    sessions = [(f"s{i:08d}", "bench", now, now) for i in range((count + 9) // 10)]
    if url is None:
        store.start("s-first", "bench")  # the file and its schema
        with store._writing() as db:
            db.executemany("INSERT INTO sessions (id, model, created, updated) VALUES (?, ?, ?, ?)", sessions)
            first = 0
            for texts in batches:
                db.executemany(f"INSERT INTO messages ({_MESSAGE_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?)",
                               message_rows(texts, first, now))
                first += len(texts)
    else:
        import psycopg

        store.count()  # the schema, made by the store
        with psycopg.connect(url) as conn:
            conn.execute("DROP INDEX messages_words")
            with conn.cursor().copy("COPY sessions (id, model, created, updated) FROM STDIN") as copy:
                for row in sessions:
                    copy.write_row(row)
            with conn.cursor().copy(f"COPY messages ({_MESSAGE_COLUMNS}) FROM STDIN") as copy:
                first = 0
                for texts in batches:
                    for row in message_rows(texts, first, now):
                        copy.write_row(row)
                    first += len(texts)
            conn.execute("CREATE INDEX messages_words ON messages USING GIN (words)")
    settle(url, "messages", store)
    return time.perf_counter() - started, rare


def bench_search(pg: Any, count: int, rounds: int, tmp: Path) -> None:
    stores = {}
    rare: list[str] = []
    for backend in ("sqlite", "postgresql"):
        url = None if backend == "sqlite" else pg.create_database()
        home = tmp / f"search-{backend}"
        home.mkdir()
        store = SessionStore(home, url=url)
        took, rare = prefill_messages(store, count, url)
        print(f"search: {backend} prefilled with {count:,} messages in {took:.1f} s", flush=True)
        stores[backend] = store
    kinds: dict[str, list[str]] = {
        "selective (a word in 30 messages)": rare[:20],
        "selective, two words (either)": [f"{a} {b}" for a, b in zip(rare[20::2], rare[21::2])],
        "common: a word in 10% of messages": ["timeout"],
        "common: a word in 50% of messages": ["deploy"],
    }
    for kind, queries in kinds.items():
        times: dict[str, list[float]] = {"sqlite": [], "postgresql": []}
        hits: dict[str, int] = {}
        common = kind.startswith("common")
        for index in range((max(10, rounds // 5) if common else rounds) + 3):
            query = queries[index % len(queries)]
            for backend in (("sqlite", "postgresql") if index % 2 else ("postgresql", "sqlite")):
                started = time.perf_counter()
                found = stores[backend].search(query)
                took = time.perf_counter() - started
                hits[backend] = len(found)
                if index >= 3:
                    times[backend].append(took)
        print(f"search, {kind}, {len(times['sqlite'])} queries each (limit 20): " + "; ".join(
            f"{backend} p50 {p50(t):.1f} ms p95 {p95(t):.1f} ms ({hits[backend]} hits)" for backend, t in times.items())
            + "   (target p95 <= 50 ms)", flush=True)
    counts = {b: s.count("deploy") for b, s in stores.items()}
    print(f"  messages matching 'deploy': {counts}")
    for store in stores.values():
        store.close()


# -- 4. hermes state migrate ---------------------------------------------------------------------------


def bench_migrate(pg: Any, sessions: int, tmp: Path) -> None:
    home = tmp / "migrate-home"
    home.mkdir()
    store = SessionStore(home)
    rng = random.Random(5)
    batches, _ = corpus(sessions * 10)
    texts = [text for batch in batches for text in batch]
    started = time.perf_counter()
    for s in range(sessions):
        sid = f"sess-{s:06d}"
        with store.step():
            store.start(sid, "bench", platform="api", user=f"user{s % 50}")
            for n in range(10):
                store.append(sid, {"role": "user" if n % 2 == 0 else "assistant", "content": texts[s * 10 + n]})
            store.usage(sid, "custom", "bench", rng.randint(100, 5000), rng.randint(10, 500), None)
    store.close()
    built = time.perf_counter() - started
    size = (home / "sessions.db").stat().st_size / 1e6
    print(f"migrate: built a home of {sessions:,} sessions and {sessions * 10:,} messages through SessionStore "
          f"in {built:.1f} s (sessions.db {size:.0f} MB)", flush=True)
    url = pg.create_database()
    env = {**os.environ, "HERMES_HOME": str(home)}
    env.pop("HERMES_STATE_URL", None)
    started = time.perf_counter()
    result = subprocess.run([HERMES, "state", "migrate", "--to", url, "--json"], env=env, capture_output=True,
                            text=True)
    took = time.perf_counter() - started
    if result.returncode:
        raise SystemExit(f"hermes state migrate failed: {result.stderr.strip()}")
    check = SessionStore(home, url=url)
    copied = (check.count(), len(check.show("sess-000000")["messages"]))  # type: ignore[index]
    check.close()
    print(f"migrate: hermes state migrate --to URL of {sessions:,} sessions / {sessions * 10:,} messages: "
          f"{took:.1f} s (sessions in the database {copied[0]:,}, the first one's messages {copied[1]})"
          f"   (target <= 60 s for 10,000 / 100,000)", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="smaller sizes (100k responses and messages)")
    parser.add_argument("--only", default="serve,store,search,migrate")
    parser.add_argument("--requests", type=int, default=None, help="serve rounds (default 200, quick 100)")
    parser.add_argument("--small", type=int, default=1_000)
    parser.add_argument("--responses", type=int, default=None, help="the large store (default 1,000,000)")
    parser.add_argument("--messages", type=int, default=None, help="search corpus (default 1,000,000)")
    parser.add_argument("--sessions", type=int, default=None, help="migrate home (default 10,000)")
    parser.add_argument("--pg-sync", choices=("on", "off"), default="off",
                        help="PostgreSQL's synchronous_commit (off: a commit is not waited on to reach the disk, as "
                             "SQLite's synchronous = NORMAL does not sync it)")
    args = parser.parse_args()
    quick = args.quick
    requests = args.requests or (100 if quick else 200)
    responses = args.responses or (100_000 if quick else 1_000_000)
    messages = args.messages or (100_000 if quick else 1_000_000)
    sessions = args.sessions or (1_000 if quick else 10_000)
    only = set(args.only.split(","))
    load = os.getloadavg()
    print(f"load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f} on {os.cpu_count()} cores; "
          f"PostgreSQL synchronous_commit={args.pg_sync}", flush=True)
    steps: list[tuple[str, Callable[[Any, Path], None]]] = [
        ("serve", lambda pg, tmp: bench_serve(pg, requests, tmp)),
        ("store", lambda pg, tmp: bench_store(pg, args.small, responses, requests, tmp)),
        ("search", lambda pg, tmp: bench_search(pg, messages, 60 if quick else 100, tmp)),
        ("migrate", lambda pg, tmp: bench_migrate(pg, sessions, tmp)),
    ]
    pg = cluster(args.pg_sync)
    try:
        with tempfile.TemporaryDirectory() as folder:
            for name, step in steps:
                if name in only:
                    started = time.perf_counter()
                    step(pg, Path(folder))
                    print(f"  ({name}: {time.perf_counter() - started:.0f} s)", flush=True)
    finally:
        pg.close()
    load = os.getloadavg()
    print(f"load average at the end {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")


if __name__ == "__main__":
    main()
