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


MANY = """
import json
import os
import time

SCHEMA = {"name": "echo", "parameters": {"type": "object", "properties": {"text": {"type": "string"}}}}
HOME = os.environ["HERMES_HOME"]


def together(tool_name):  # every process reaches its failing callbacks before any of them runs them
    open(os.path.join(HOME, f"ready-{os.getpid()}"), "w").close()
    while not os.path.exists(os.path.join(HOME, "go")):
        time.sleep(0.01)


def failing(number):
    def fail(tool_name, status):
        time.sleep(0.001)
        raise RuntimeError(f"callback {number} failed")
    fail.__name__ = f"fail{number}"
    return fail


def register(ctx):
    ctx.register_tool("echo", "t", SCHEMA, lambda args, **kw: json.dumps(args))
    ctx.register_hook("pre_tool_call", together)
    for number in range(300):
        ctx.register_hook("post_tool_call", failing(number))
"""


def test_processes_sharing_a_home_keep_one_ring_of_two_files_whole(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import subprocess
    import time

    from tests.helpers import HERMES

    monkeypatch.setenv("HERMES_HOOK_SLOW_MS", "600000")  # only the failures are kept, however long the wait
    make_folder_plugin(home / "plugins", "many", MANY, "name: many\n")
    write_config(home, "plugins:\n  enabled: [many]\n")
    calls = [subprocess.Popen([str(HERMES), "tools", "call", "echo", '{"text": "hi"}'], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL) for _ in range(4)]
    try:
        deadline = time.monotonic() + 120
        while len(list(home.glob("ready-*"))) < len(calls) and time.monotonic() < deadline:
            time.sleep(0.05)
        (home / "go").touch()
        assert [call.wait(timeout=120) for call in calls] == [0] * len(calls)
    finally:
        for call in calls:
            call.kill()
    logs = home / "logs"
    newest = (logs / "hook-calls.jsonl").read_text(encoding="utf-8").splitlines()
    before = (logs / "hook-calls.jsonl.1").read_text(encoding="utf-8").splitlines()
    # 1,200 failures: two rotations at 500 lines each; .1 holds the second 500, the file the last 200
    assert (len(before), len(newest)) == (500, 200)
    rows = json.loads(hermes("plugins", "hook-calls", "--json", "--limit", "1000").stdout)
    assert len(rows) == 700 and {row["outcome"] for row in rows} == {"raised RuntimeError"}


COUNTED = """
import json

SCHEMA = {"name": "echo", "parameters": {"type": "object", "properties": {"text": {"type": "string"}}}}


def fail(tool_name, args, result, **kwargs):
    raise RuntimeError("failed for " + args["text"])


def register(ctx):
    ctx.register_tool("echo", "t", SCHEMA, lambda args, **kw: json.dumps(args))
    ctx.register_hook("post_tool_call", fail)
"""


def test_a_file_edited_in_place_to_the_same_size_is_counted_again(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import os
    import time

    from hermes_core import PluginManager

    def kept(text: str) -> None:  # the writer thread appends off the hot path: wait for the line
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if any(text in path.read_text(encoding="utf-8") for path in logs.glob("hook-calls.jsonl*")):
                return
            time.sleep(0.02)
        raise AssertionError(f"{text!r} was not kept")

    monkeypatch.setenv("HERMES_HOOK_SLOW_MS", "600000")
    make_folder_plugin(home / "plugins", "counted", COUNTED, "name: counted\n")
    write_config(home, "plugins:\n  enabled: [counted]\n")
    logs = home / "logs"
    logs.mkdir()
    path = logs / "hook-calls.jsonl"
    old = {"at": 1000.0, "hook": "pre_llm_call", "plugin": "old", "callback": "f", "ms": 300.0, "outcome": "slow",
           "error": ""}
    path.write_text((json.dumps(old) + "\n") * 497, encoding="utf-8")
    manager = PluginManager(home=home).load()
    try:
        manager.dispatch_tool("echo", {"text": "first"})
        kept("failed for first")  # this process knows the file: 498 lines
        status = path.stat()
        with open(path, "r+b") as handle:  # a person's edit in place: one long line, the same size and inode
            handle.write(b"x" * (status.st_size - 1) + b"\n")
        os.utime(path, ns=(status.st_atime_ns, status.st_mtime_ns + 1_000_000_000))
        assert (path.stat().st_ino, path.stat().st_size) == (status.st_ino, status.st_size)
        for text in ("second", "third", "fourth"):
            manager.dispatch_tool("echo", {"text": text})
            kept(f"failed for {text}")
    finally:
        manager.close()
    assert not (logs / "hook-calls.jsonl.1").exists()  # 1 + 3 lines: no rotation, counted from the file
    assert len(path.read_text(encoding="utf-8").splitlines()) == 4
