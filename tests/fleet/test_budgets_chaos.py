"""Chaos under load, bounded in time: six host processes with eight calls each running at once on one
PostgreSQL database with Redis's counters, while Redis is restarted (empty) twice, two hosts are
killed with `kill -9` and PostgreSQL is restarted once. Each time the service comes back within
5 s; afterwards Redis's counters and the ledger agree within 0.1 %, and no call is counted twice
(the ledger has at most the calls the model server answered, each with its known tokens)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from hermes_core.testing import Reply, ScriptedServer
from tests.helpers import llm_config
from tests.helpers.postgres import PgCluster
from tests.helpers.redis import RedisServer

HOSTS, CONCURRENT, USED = 6, 8, 80
RECOVERY = 5.0

HOST = """
import asyncio, json, pathlib, sys, time
from hermes_core import PluginManager

folder, index, workers = pathlib.Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
manager = PluginManager(discover_plugins=False).load()
ctx = manager.add_plugin(lambda ctx: ctx.register_command("probe", lambda raw: raw), "probe").ctx
(folder / f"ready-{index}").touch()
while not (folder / "go").exists():
    time.sleep(0.01)
errors = []

async def worker():
    done = 0
    while not (folder / "stop").exists():
        try:
            await ctx.llm.acomplete([{"role": "user", "content": "hi"}], max_tokens=65)
            done += 1
        except Exception as exc:  # the store out of reach, for a moment
            errors.append(str(exc)[:200])
            await asyncio.sleep(0.05)
    return done

async def main():
    return await asyncio.gather(*(worker() for _ in range(workers)))

print(json.dumps({"done": sum(asyncio.run(main())), "errors": errors[:5], "failed": len(errors)}))
"""


def ledger_figures(url: str) -> tuple[int, int]:
    """The ledger's tokens and requests of plugin probe today; (-1, -1) while PostgreSQL is down."""
    import psycopg

    try:
        with psycopg.connect(url, connect_timeout=2) as conn:
            row = conn.execute("SELECT COALESCE(SUM(tokens), 0), COALESCE(SUM(requests), 0) FROM budget_totals "
                               "WHERE who = 'probe' AND length(period) = 10").fetchone()
    except psycopg.Error:
        return -1, -1
    assert row is not None
    return int(row[0]), int(row[1])


def counters_figure(client: Any) -> float:
    """What Redis's counters say probe settled today; -1 when they are not loaded (or Redis is down)."""
    try:
        keys = client.keys("hermes:budgets:probe:????-??-??")
        return float(client.hget(keys[0], "t")) if keys and client.hexists(keys[0], "ok") else -1.0
    except Exception:  # noqa: BLE001 - Redis is down
        return -1.0


def within(seconds: float, what: str, check: Any) -> float:
    """Seconds until `check()` holds; fails after `seconds`."""
    started = time.monotonic()
    while not check():
        assert time.monotonic() - started < seconds, f"{what} did not come back within {seconds} s"
        time.sleep(0.05)
    return time.monotonic() - started


def test_counters_and_ledger_agree_after_redis_and_postgresql_restarts_and_killed_hosts(
        home: Path, tmp_path: Path, llm_server: ScriptedServer, pg_cluster: PgCluster, pg_url: str,
        redis_server: RedisServer, monkeypatch: pytest.MonkeyPatch) -> None:
    import redis as redis_py

    monkeypatch.setenv("HERMES_STATE_URL", pg_url)
    monkeypatch.setenv("HERMES_REDIS_URL", redis_server.url)
    llm_config(home, llm_server.url, "plugins:\n  entries:\n    probe:\n      llm_budget: {tokens_per_day: 100000000}\n"
                                     "auxiliary:\n  plugin_llm: {timeout: 10}\nbudgets:\n  reservation_ttl: 2\n")
    llm_server.always(Reply("ok", usage={"prompt_tokens": 30, "completion_tokens": USED - 30, "total_tokens": USED},
                            delay=0.05))
    client = redis_py.Redis.from_url(redis_server.url, socket_timeout=2)
    hosts = [subprocess.Popen([sys.executable, "-c", HOST, str(tmp_path), str(index), str(CONCURRENT)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for index in range(HOSTS)]
    recoveries: dict[str, float] = {}
    try:
        within(120, "the hosts", lambda: len(list(tmp_path.glob("ready-*"))) == HOSTS)
        (tmp_path / "go").touch()

        def answered_more() -> Any:
            before = len(llm_server.requests)
            return lambda: len(llm_server.requests) > before + HOSTS

        within(RECOVERY * 4, "the first calls", answered_more())
        for round_ in (1, 2):
            redis_server.restart()  # empty: its counters and reservations are gone
            recoveries[f"redis restart {round_}"] = within(RECOVERY, "Redis's counters",
                                                           lambda: counters_figure(client) >= 0)
            hosts[round_ - 1].kill()  # kill -9, its calls running
            hosts[round_ - 1].communicate()
            time.sleep(0.5)
            if round_ == 1:
                before = ledger_figures(pg_url)[1]
                pg_cluster.restart()
                recoveries["postgresql restart"] = within(RECOVERY, "the ledger's settlements",
                                                          lambda: ledger_figures(pg_url)[1] > before)
        time.sleep(3.0)  # the survivors keep calling while the counters catch up
        (tmp_path / "stop").touch()
        outcomes = {index: hosts[index].communicate(timeout=120) for index in range(2, HOSTS)}
    except BaseException:
        (tmp_path / "stop").touch()
        print({index: host.communicate(timeout=30) for index, host in enumerate(hosts) if host.poll() is None})
        raise
    finally:
        (tmp_path / "stop").touch()
        for host in hosts:
            if host.poll() is None:
                try:
                    host.communicate(timeout=30)
                except subprocess.TimeoutExpired:
                    host.kill()
        client.close()
    for index, (out, err) in outcomes.items():
        assert hosts[index].returncode == 0, err[-2000:]
    reports = [json.loads(out) for out, _ in outcomes.values()]
    tokens, requests = ledger_figures(pg_url)
    answered = len(llm_server.requests)
    assert tokens == requests * USED  # every call counted once, with what it used
    assert sum(report["done"] for report in reports) <= requests <= answered  # the killed hosts' last calls: not
    assert requests >= 0.9 * answered
    counted = counters_figure(client := redis_py.Redis.from_url(redis_server.url))
    client.close()
    assert abs(counted - tokens) <= 0.001 * tokens, (counted, tokens, recoveries)
    print(f"answered {answered}, counted {requests}, recoveries {recoveries}")
