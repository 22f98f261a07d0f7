"""One cap across a fleet: eight host processes on one PostgreSQL database (alone, or with Redis's
hot counters), each with eight or 32 calls running at once against the scripted server (known
token counts), share a plugin's `tokens_per_day`: the cap is never passed (the estimates are upper
bounds: no overspend at all), at least 90 % of it is spent before the first refusal, no call is
refused while less than 90 % is spent, and the ledger agrees with what the server answered."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from hermes_core.testing import Reply, ScriptedServer
from tests.helpers import hermes, llm_config

HOSTS = 8
RESERVED, USED = 100, 80  # each call reserves 35 prompt tokens + max_tokens 65; the server says it used 80

HOST = """
import asyncio, json, pathlib, sys, time
from hermes_core import PluginLlmBudgetError, PluginManager

folder, index, workers = pathlib.Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
manager = PluginManager(discover_plugins=False).load()
ctx = manager.add_plugin(lambda ctx: ctx.register_command("probe", lambda raw: raw), "probe").ctx
(folder / f"ready-{index}").touch()
while not (folder / "go").exists():
    time.sleep(0.01)

async def worker():
    done = 0
    while True:
        try:
            await ctx.llm.acomplete([{"role": "user", "content": "hi, please answer in one short word: is the sky blue or green?"}], max_tokens=65)
        except PluginLlmBudgetError as exc:
            return done, str(exc)
        done += 1

async def main():
    return await asyncio.gather(*(worker() for _ in range(workers)))

results = asyncio.run(main())
print(json.dumps({"done": sum(r[0] for r in results), "refusals": [r[1] for r in results]}))
"""


@pytest.mark.parametrize(("concurrent", "counters"), [(8, "postgresql"), (32, "postgresql"), (32, "redis")])
def test_eight_hosts_share_one_cap_and_can_spend_nearly_all_of_it(
        home: Path, tmp_path: Path, llm_server: ScriptedServer, pg_url: str, monkeypatch: pytest.MonkeyPatch,
        request: pytest.FixtureRequest, concurrent: int, counters: str) -> None:
    monkeypatch.setenv("HERMES_STATE_URL", pg_url)
    if counters == "redis":
        monkeypatch.setenv("HERMES_REDIS_URL", request.getfixturevalue("redis_server").url)
    CAP = 24_000 if concurrent == 8 else 48_000  # noqa: N806 - the test's constant
    CONCURRENT = concurrent  # noqa: N806
    llm_config(home, llm_server.url, "plugins:\n  entries:\n    probe:\n"
                                     f"      llm_budget: {{tokens_per_day: {CAP}}}\n"
                                     "budgets:\n  fleet: {tokens_per_day: 10000000}\n"  # a second holder on each call
                                     "auxiliary:\n  plugin_llm: {timeout: 60}\n")
    llm_server.always(Reply("ok", usage={"prompt_tokens": 30, "completion_tokens": USED - 30, "total_tokens": USED},
                            delay=0.05))
    hosts = [subprocess.Popen([sys.executable, "-c", HOST, str(tmp_path), str(index), str(CONCURRENT)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for index in range(HOSTS)]
    try:
        deadline = time.monotonic() + 120
        while len(list(tmp_path.glob("ready-*"))) < HOSTS and time.monotonic() < deadline:
            assert all(host.poll() is None for host in hosts), [host.communicate() for host in hosts]
            time.sleep(0.05)
        (tmp_path / "go").touch()
        outcomes = [host.communicate(timeout=240) for host in hosts]
    finally:
        for host in hosts:
            if host.poll() is None:
                host.kill()
    assert all(host.returncode == 0 for host in hosts), [err[-2000:] for _, err in outcomes]
    reports: list[dict[str, Any]] = [json.loads(out) for out, _ in outcomes]
    answered = len(llm_server.requests)
    assert sum(report["done"] for report in reports) == answered
    spent = answered * USED
    assert CAP - RESERVED < spent <= CAP  # refused only once what was spent left no room for one more call
    assert spent >= 0.9 * CAP
    refusals = [text for report in reports for text in report["refusals"]]
    assert len(refusals) == HOSTS * CONCURRENT
    for text in refusals:  # every refusal came once at least 90 % was spent, naming the holder, cap and window
        assert text.startswith("plugin 'probe' is at its LLM budget tokens_per_day"), text
        found = re.search(r"used ([\d,]+) tokens of ([\d,]+) tokens today", text)
        assert found is not None, text
        assert int(found[1].replace(",", "")) >= 0.9 * CAP and int(found[2].replace(",", "")) == CAP
    rows = {row["plugin"]: row for row in json.loads(hermes("plugins", "usage", "--json").stdout)}
    assert (rows["probe"]["tokens"], rows["probe"]["requests"]) == (spent, answered)  # the ledger agrees
    assert rows["probe"]["refusals"] == len(refusals) and rows["probe"]["reserved"]["tokens"] == 0
    assert rows["fleet"]["tokens"] == spent
