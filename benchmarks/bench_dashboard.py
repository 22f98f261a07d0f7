"""`hermes dashboard`'s pages on a big home: 100,000 sessions and a million LLM ledger rows.

    .venv/bin/python benchmarks/bench_dashboard.py [--sessions 100000] [--ledger 1000000] [--rounds 30] [--home DIR]

The home is seeded straight into the stores' own files (the session store's schema, made by
`SessionStore`; the ledger's `totals`, made by the ledger): each session has a user and an
assistant message and a usage row; the ledger holds a row per (plugin, day): 1,000 plugins over 1,000 days. `?q=harbour42` finds about
1,000 messages, `?q=tidal` every one of the 200,000.
Then `hermes dashboard --port 0 --no-open` serves it, and every page and its JSON twin is fetched
`--rounds` times (urllib, a new connection each, the session token as Hermes' header), after one
first fetch (its time is shown too: the usage page reads the days that are over once): p50 and
p95 per page. Target (issue 57): every page p95 <= 200 ms. `--home DIR` seeds DIR once and
serves it again on the next run (a seeded home takes minutes).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

HERMES = str(Path(sys.executable).with_name("hermes"))
PAGES = ["/", "/plugins", "/sessions", "/sessions?offset=50000", "/sessions?q=harbour42", "/sessions?q=tidal",
         "/sessions/s-000042", "/cron", "/usage",
         "/usage?days=90", "/keys", "/mcp", "/skills"]


def seed_sessions(home: Path, count: int) -> None:
    from hermes_core.agent import SessionStore

    store = SessionStore(home)
    store.start("s-seed", "model-a")  # its schema (one session more)
    store.close()
    now = time.time()
    db = sqlite3.connect(home / "sessions.db")
    with db:
        for start in range(0, count, 10_000):
            ids = range(start, min(start + 10_000, count))
            db.executemany("INSERT INTO sessions (id, title, model, created, updated) VALUES (?, ?, ?, ?, ?)",
                           [(f"s-{n:06d}", f"session {n}", "model-a", now - n * 60, now - n * 60) for n in ids])
            rows = []
            for n in ids:
                user = {"role": "user", "content": f"question {n} about the tidal range at harbour{n % 97}"}
                answer = {"role": "assistant", "content": f"answer {n}: about {n % 13} metres"}
                rows += [(f"s-{n:06d}", 1, "user", json.dumps(user), user["content"], now - n * 60),
                         (f"s-{n:06d}", 2, "assistant", json.dumps(answer), answer["content"], now - n * 60 + 1)]
            db.executemany("INSERT INTO messages (session_id, seq, role, body, text, created) VALUES (?, ?, ?, ?, ?, ?)",
                           rows)
            db.executemany("INSERT INTO usage (session_id, provider, model, input_tokens, output_tokens, cost, created) "
                           "VALUES (?, 'custom', ?, 120, 40, 0.001, ?)",
                           [(f"s-{n:06d}", f"model-{'abc'[n % 3]}", now - n * 60) for n in ids])
    db.close()


def seed_ledger(home: Path, count: int) -> None:
    from hermes_core._llm.ledger import Ledger

    ledger = Ledger(home)
    ledger.write(lambda db: None)  # its schema
    ledger.close()
    days = 1000
    plugins = max(count // days, 1)
    today = dt.datetime.now(dt.timezone.utc).date()
    db = sqlite3.connect(home / "llm-usage.db")
    with db:
        for p in range(plugins):
            db.executemany("INSERT INTO totals (who, period, tokens, cost, requests) VALUES (?, ?, ?, ?, ?)",
                           [(f"plugin-{p:04d}", (today - dt.timedelta(days=d)).isoformat(), 1000 + d, 0.01, 3)
                            for d in range(days)])
    db.close()


def fetch(url: str, token: str) -> float:
    request = urllib.request.Request(url, headers={"X-Hermes-Session-Token": token, "Accept": "text/html"})
    started = time.perf_counter()
    with urllib.request.urlopen(request, timeout=60) as response:
        response.read()
        assert response.status == 200, url
    return time.perf_counter() - started


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(int(len(ordered) * share), len(ordered) - 1)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", type=int, default=100_000)
    parser.add_argument("--ledger", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--home", help="a folder to seed once and serve again on the next run")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        home = Path(args.home or folder)
        os.environ["HERMES_HOME"] = str(home)
        started = time.perf_counter()
        if not (home / "config.yaml").exists():
            home.mkdir(parents=True, exist_ok=True)
            seed_sessions(home, args.sessions)
            seed_ledger(home, args.ledger)
            (home / "config.yaml").write_text("plugins:\n  llm_budget: {tokens_per_day: 1000000}\n", encoding="utf-8")
            print(f"seeded {args.sessions:,} sessions and {args.ledger:,} ledger rows in "
                  f"{time.perf_counter() - started:.0f} s", file=sys.stderr)
        token = "bench-token-0123456789"
        env = {**os.environ, "HERMES_DASHBOARD_SESSION_TOKEN": token}
        process = subprocess.Popen([HERMES, "dashboard", "--port", "0", "--no-open"], stderr=subprocess.PIPE,
                                   stdout=subprocess.DEVNULL, text=True, env=env)
        try:
            assert process.stderr is not None
            line = process.stderr.readline()
            match = re.match(r"(http://\S+?)/\?token=", line)
            assert match, line
            root = match.group(1)
            print(f"{'page':<26}{'first ms':>9}{'p50 ms':>9}{'p95 ms':>9}{'json p95':>10}")
            for page in PAGES:
                path, _, query = page.partition("?")
                twin = ("/status.json" if path == "/" else f"{path}.json") + (f"?{query}" if query else "")
                first = fetch(root + page, token)
                fetch(root + twin, token)
                html = [fetch(root + page, token) for _ in range(args.rounds)]
                data = [fetch(root + twin, token) for _ in range(args.rounds)]
                print(f"{page:<26}{first * 1000:>9.1f}{percentile(html, 0.5) * 1000:>9.1f}"
                      f"{percentile(html, 0.95) * 1000:>9.1f}"
                      f"{percentile(data, 0.95) * 1000:>10.1f}")
        finally:
            process.terminate()
            process.wait(timeout=30)


if __name__ == "__main__":
    main()
