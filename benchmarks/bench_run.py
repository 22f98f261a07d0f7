"""`hermes run` with one tool round against a raw openai script making the same two calls.

    .venv/bin/python benchmarks/bench_run.py [--runs 15] [--history 150]

Both are fresh processes against the same scripted server (in this process; the clients are
subprocesses, so they share no GIL with it), alternately. Each run: a request that the server
answers with a `current_time` tool call, the tool's result, a second request answered with
text. `hermes run` continues a stored session of `--history` messages (a copy of it each
run, made before the clock starts); the raw script sends the same messages and tools (those
hermes sent, captured in the warm-up run), runs the same kind of tool and prints the answer.
Target: hermes run at most +80 ms over the raw script (median of paired differences).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from hermes_core.agent import SessionStore
from hermes_core.testing import ScriptedServer, tool_call

HERMES = str(Path(sys.executable).with_name("hermes"))
SESSION = "bench-session"

RAW = """
import datetime, json, sys
import openai

url, path = sys.argv[1], sys.argv[2]
with open(path) as handle:
    request = json.load(handle)
client = openai.OpenAI(api_key="no-key-needed", base_url=url, max_retries=0)
messages, tools = request["messages"], request["tools"]
reply = client.chat.completions.create(model=request["model"], messages=messages, tools=tools)
message = reply.choices[0].message
messages.append(message.model_dump(exclude_none=True))
for call in message.tool_calls or []:
    result = json.dumps({"utc": datetime.datetime.now(datetime.timezone.utc).isoformat()})
    messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
reply = client.chat.completions.create(model=request["model"], messages=messages, tools=tools)
print(reply.choices[0].message.content)
"""


def history(count: int) -> list[dict[str, object]]:
    """A coding-agent history: user, tool call, its result, answer."""
    out: list[dict[str, object]] = []
    for i in range(count // 4):
        out += [
            {"role": "user", "content": f"step {i}: " + "please look at the file and explain it " * 8},
            {"role": "assistant", "content": "", "tool_calls": [tool_call("read_file", {"path": f"f{i}.py"}, f"c{i}")]},
            {"role": "tool", "tool_call_id": f"c{i}", "content": "def f():\n    return 1\n" * 100},
            {"role": "assistant", "content": "It defines f, which returns 1. " * 10},
        ]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--history", type=int, default=150)
    args = parser.parse_args()
    with ScriptedServer() as server, tempfile.TemporaryDirectory() as tmp:
        home, template = Path(tmp) / "home", Path(tmp) / "template.db"
        home.mkdir()
        (home / "config.yaml").write_text(f"model:\n  provider: custom\n  model: bench\n  base_url: {server.url}\n")
        hour_ago = time.time() - 3600  # an operator's config is not seconds old
        os.utime(home / "config.yaml", (hour_ago, hour_ago))
        store = SessionStore(home)
        store.start(SESSION, "bench")
        for message in history(args.history):
            store.append(SESSION, message)
        store.close()
        shutil.copy(home / "sessions.db", template)
        # Compiled modules cached as an installed package has them (outside the tree, in a folder of its own).
        env = {**os.environ, "HERMES_HOME": str(home), "PYTHONPYCACHEPREFIX": str(Path(tmp) / "pycache")}
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        captured = Path(tmp) / "request.json"

        def hermes() -> str:
            for suffix in ("", "-wal", "-shm"):
                (home / f"sessions.db{suffix}").unlink(missing_ok=True)
            shutil.copy(template, home / "sessions.db")
            started = time.perf_counter()
            done = subprocess.run([HERMES, "run", "--session", SESSION, "what time is it?"], env=env,
                                  capture_output=True, text=True)
            elapsed = time.perf_counter() - started
            assert done.returncode == 0 and done.stdout.strip() == "It is noon.", done.stderr
            return f"{elapsed!r}"

        def raw() -> str:
            started = time.perf_counter()
            done = subprocess.run([sys.executable, "-c", RAW, server.url, str(captured)], env=env,
                                  capture_output=True, text=True)
            elapsed = time.perf_counter() - started
            assert done.returncode == 0 and done.stdout.strip() == "It is noon.", done.stderr
            return f"{elapsed!r}"

        def script() -> None:
            server.reply(None, tool_calls=[tool_call("current_time", {"timezone": "UTC"}, "call_1")])
            server.reply("It is noon.")

        script()
        hermes()  # warm up, and capture what hermes sends
        first = server.requests[0].body
        captured.write_text(json.dumps({"model": first["model"], "messages": first["messages"],
                                        "tools": first["tools"]}))
        print(f"{len(first['messages'])} messages and {len(first['tools'])} tools in the first request")
        script()
        raw()
        for _ in range(2):  # and once more each, with every module compiled
            script()
            hermes()
            script()
            raw()
        times: dict[str, list[float]] = {"hermes run": [], "raw openai script": []}
        for i in range(args.runs):
            order = [("hermes run", hermes), ("raw openai script", raw)]
            for label, run in order if i % 2 == 0 else order[::-1]:
                script()
                times[label].append(float(run()))
        ours, base = times["hermes run"], times["raw openai script"]
        print(f"hermes run vs a raw openai script, one tool round, {args.runs} alternating pairs")
        for label, values in times.items():
            print(f"  {label:<18} median {statistics.median(values) * 1e3:7.1f} ms   min {min(values) * 1e3:7.1f} ms")
        diffs = [o - b for o, b in zip(ours, base)]
        print(f"  hermes run - raw script: median of paired differences {statistics.median(diffs) * 1e3:+.1f} ms, "
              f"of minima {(min(ours) - min(base)) * 1e3:+.1f} ms; "
              f"paired ratio {statistics.median(o / b for o, b in zip(ours, base)):.2f}x; target <= +80 ms")


if __name__ == "__main__":
    main()
