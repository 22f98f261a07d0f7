"""Slow and failing hook calls are kept: a callback that raised, timed out or ran longer than
`HERMES_HOOK_SLOW_MS` is a line in `$HERMES_HOME/logs/hook-calls.jsonl` (a ring of two files of
500 lines), which `hermes plugins hook-calls` (and the dashboard's hook calls page) shows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import hermes, make_folder_plugin, write_config

PLUGIN = """
import json
import time

SCHEMA = {"name": "echo", "parameters": {"type": "object", "properties": {"text": {"type": "string"}}}}


def explode(tool_name):
    raise RuntimeError("audit log unavailable; token=sk-abcdefghijklmnopqrstuvwx")


def dawdle(tool_name, status):
    time.sleep(0.08)


def quick(tool_name):
    return None


def register(ctx):
    ctx.register_tool("echo", "t", SCHEMA, lambda args, **kw: json.dumps(args))
    ctx.register_hook("pre_tool_call", quick)
    ctx.register_hook("post_tool_call", explode)
    ctx.register_hook("post_tool_call", dawdle)
"""


@pytest.fixture
def guard(home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HERMES_HOOK_SLOW_MS", "40")
    make_folder_plugin(home / "plugins", "guard", PLUGIN, "name: guard\n")
    write_config(home, "plugins:\n  enabled: [guard]\n")
    return home


def test_a_failing_and_a_slow_callback_are_kept_and_listed_the_newest_first(guard: Path) -> None:
    assert hermes("plugins", "hook-calls").stdout.strip() == "no slow or failing hook calls kept"
    hermes("tools", "call", "echo", '{"text": "hi"}')
    rows = json.loads(hermes("plugins", "hook-calls", "--json").stdout)
    assert [(r["hook"], r["plugin"], r["callback"], r["outcome"]) for r in rows] == [
        ("post_tool_call", "guard", "dawdle", "slow"), ("post_tool_call", "guard", "explode", "raised RuntimeError")]
    assert rows[0]["ms"] >= 40 and rows[0]["error"] == ""
    assert "audit log unavailable" in rows[1]["error"] and "sk-abcdefghijklmnopqrstuvwx" not in rows[1]["error"]
    table = hermes("plugins", "hook-calls").stdout
    assert "dawdle" in table and "raised RuntimeError" in table and "quick" not in table


def test_the_kept_calls_are_a_ring_of_two_files(guard: Path) -> None:
    logs = guard / "logs"
    logs.mkdir(exist_ok=True)
    old = [{"at": 1000.0 + n, "hook": "pre_llm_call", "plugin": "old", "callback": "f", "ms": 300.0,
            "outcome": "slow", "error": ""} for n in range(500)]
    (logs / "hook-calls.jsonl").write_text("".join(json.dumps(r) + "\n" for r in old) + '{"cut short', encoding="utf-8")
    (logs / "hook-calls.jsonl.1").write_text(json.dumps({**old[0], "plugin": "older"}) + "\n", encoding="utf-8")
    hermes("tools", "call", "echo", '{"text": "hi"}')
    assert len((logs / "hook-calls.jsonl").read_text(encoding="utf-8").splitlines()) == 2  # the new file
    rows = json.loads(hermes("plugins", "hook-calls", "--json", "--limit", "1000").stdout)
    assert len(rows) == 2 + 500 and {r["plugin"] for r in rows} == {"guard", "old"}  # "older" was dropped
    assert [r["plugin"] for r in rows[:2]] == ["guard", "guard"]
