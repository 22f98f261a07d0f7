"""A host process that exits with budgeted calls' settlements not yet in the ledger: a ledger that
answers gets every one of them before the process ends; a ledger out of reach does not hold the
exit for long, and the process says on stderr, in one line, which usage was not recorded and what
becomes of it (the reservations are released when their lease ends; that usage stays uncounted)."""

from __future__ import annotations

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

USED = 80
BUDGET = "plugins:\n  entries:\n    probe:\n      llm_budget: {tokens_per_day: 1000000}\n"

# Makes `first` calls, says so, waits for the file `go`, makes `then` more, says "done", waits for the file
# `exit` and exits.
HOST = """
import asyncio, pathlib, sys, time
from hermes_core import PluginManager

folder, first, then, mode = pathlib.Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
manager = PluginManager(discover_plugins=False).load()
llm = manager.add_plugin(lambda ctx: ctx.register_command("probe", lambda raw: raw), "probe").ctx.llm
PROMPT = [{"role": "user", "content": "hi"}]

async def calls(count):
    await asyncio.gather(*(llm.acomplete(PROMPT, max_tokens=65) for _ in range(count)))

def run(count):
    if mode == "async":
        asyncio.run(calls(count))
    else:
        for _ in range(count):
            llm.complete(PROMPT, max_tokens=65)

run(first)
print("first", flush=True)
while then and not (folder / "go").exists():
    time.sleep(0.01)
run(then)
print("done", flush=True)
while then and not (folder / "exit").exists():
    time.sleep(0.01)
"""


def ledger_figures(url: str) -> tuple[int, int]:
    """The ledger's tokens and requests of plugin probe today."""
    import psycopg

    with psycopg.connect(url, connect_timeout=5) as conn:
        row = conn.execute("SELECT COALESCE(SUM(tokens), 0), COALESCE(SUM(requests), 0) FROM budget_totals "
                           "WHERE who = 'probe' AND length(period) = 10").fetchone()
    assert row is not None
    return int(row[0]), int(row[1])


def host(folder: Path, first: int, then: int, mode: str = "async") -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", HOST, str(folder), str(first), str(then), mode],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def exit_after_done(proc: subprocess.Popen[str], folder: Path, wait: float = 0.0) -> tuple[float, str]:
    """Once the host says "done" (and `wait` seconds more), it is let exit: the seconds its exit took,
    and its stderr."""
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line == "done\n", proc.communicate(timeout=60)[1][-2000:]
    time.sleep(wait)
    started = time.monotonic()
    (folder / "exit").touch()
    _, err = proc.communicate(timeout=120)
    return time.monotonic() - started, err


@pytest.mark.parametrize("with_redis", [True, False], ids=["redis", "postgresql"])
def test_a_ledger_that_answers_gets_every_settlement_of_a_host_that_exits_at_once(
        home: Path, tmp_path: Path, llm_server: ScriptedServer, pg_url: str, redis_server: RedisServer,
        monkeypatch: pytest.MonkeyPatch, with_redis: bool) -> None:
    monkeypatch.setenv("HERMES_STATE_URL", pg_url)
    if with_redis:
        monkeypatch.setenv("HERMES_REDIS_URL", redis_server.url)
    llm_config(home, llm_server.url, BUDGET)
    llm_server.always(Reply("ok", usage={"prompt_tokens": 30, "completion_tokens": USED - 30, "total_tokens": USED}))
    proc = host(tmp_path, 24, 0)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0 and out == "first\ndone\n", err[-2000:]
    assert "could not be reached" not in err
    assert ledger_figures(pg_url) == (24 * USED, 24)  # written before the process ended, none lost


def test_a_host_exiting_with_the_ledger_down_says_what_redis_held_and_was_not_recorded(
        home: Path, tmp_path: Path, llm_server: ScriptedServer, pg_cluster: PgCluster, pg_url: str,
        redis_server: RedisServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HERMES_STATE_URL", pg_url)
    monkeypatch.setenv("HERMES_REDIS_URL", redis_server.url)
    llm_config(home, llm_server.url, BUDGET)
    llm_server.always(Reply("ok", usage={"prompt_tokens": 30, "completion_tokens": USED - 30, "total_tokens": USED}))
    proc = host(tmp_path, 3, 2)
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "first\n"
        deadline = time.monotonic() + 30
        while ledger_figures(pg_url)[1] < 3 and time.monotonic() < deadline:  # the first three written
            time.sleep(0.05)
        pg_cluster.stop()  # the ledger out of reach; Redis's counters carry on
        (tmp_path / "go").touch()
        # the two settlements' write fails meanwhile (the pool waits up to 5 s for a connection first): kept
        took, err = exit_after_done(proc, tmp_path, wait=6.0)
    finally:
        if proc.poll() is None:
            proc.kill()
        pg_cluster.start()
    assert proc.returncode == 0, err[-2000:]
    lines = [line for line in err.splitlines() if "could not be reached at exit" in line]
    assert len(lines) == 1, err[-2000:]
    assert lines[0].startswith("hermes: the LLM usage ledger (postgresql://"), lines[0]
    assert "2 LLM calls' usage (160 tokens, $0.0000; probe) is not recorded" in lines[0]
    assert "the reservations held in Redis (by 20" in lines[0] and "released when their lease ends" in lines[0]
    assert took < 5.0, err  # the exit tries once more and goes (it waited out the ledger's 10 s before)
    assert ledger_figures(pg_url) == (3 * USED, 3)


def test_a_host_exiting_with_the_ledger_down_mid_call_says_its_reservation_expires(
        home: Path, tmp_path: Path, llm_server: ScriptedServer, pg_cluster: PgCluster, pg_url: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HERMES_STATE_URL", pg_url)
    monkeypatch.delenv("HERMES_REDIS_URL", raising=False)
    llm_config(home, llm_server.url, BUDGET)
    replies: list[Any] = []

    def answer(body: Any) -> Reply:  # the first call at once; the second once the ledger is down
        replies.append(body)
        delay = 0.0 if len(replies) == 1 else 3.0
        return Reply("ok", usage={"prompt_tokens": 30, "completion_tokens": USED - 30, "total_tokens": USED},
                     delay=delay)

    llm_server.answer(answer)
    (tmp_path / "go").touch()
    proc = host(tmp_path, 1, 1, mode="sync")
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "first\n"
        deadline = time.monotonic() + 30
        while len(replies) < 2 and time.monotonic() < deadline:  # its reservation is written: the request is out
            time.sleep(0.02)
        pg_cluster.stop()
        took, err = exit_after_done(proc, tmp_path)
    finally:
        if proc.poll() is None:
            proc.kill()
        pg_cluster.start()
    assert proc.returncode == 0, err[-2000:]
    assert "1 LLM call's usage (80 tokens, $0.0000; probe) is not recorded" in err, err[-2000:]
    assert "the reservations in the ledger (by 20" in err
    assert took < 5.0, err
    assert ledger_figures(pg_url) == (USED, 1)
