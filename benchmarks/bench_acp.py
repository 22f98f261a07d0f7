"""`hermes acp` as an editor sees it: how soon the answer's first text reaches the editor, and
how soon `session/cancel` is answered while a tool runs.

    .venv/bin/python benchmarks/bench_acp.py [--prompts 30] [--cancels 10]

The scripted model server runs in its own process and streams at once; `hermes acp` runs as the
editor's subprocess, driven by the official SDK's client side (the `acp` extra), in one session:

- **first text**: for each prompt, the time from sending `session/prompt` to the first
  `agent_message_chunk`, against the time to the first content chunk of the same streamed request
  sent straight to the model server, in turn; the difference is what the agent adds (its turn
  starting, the hooks, the request it builds) and bounds how long after the model's first token
  the editor sees it. Target (issue 43): <= 20 ms.
- **cancel**: a plugin tool that sleeps 10 s; once the editor is told the tool runs,
  `session/cancel`, and the time until the prompt answers `cancelled`. Target: <= 0.5 s.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

from _scripted import server_process

HERMES = str(Path(sys.executable).with_name("hermes"))

SLOW = '''
import json, time

def register(ctx):
    def slow(args, **kwargs):
        time.sleep(10)
        return json.dumps({"slept": 10})

    ctx.register_tool("slow", "slow", {"name": "slow", "description": "Sleeps", "parameters": {"type": "object"}},
                      slow)
'''


class Editor:
    def __init__(self) -> None:
        self.first_text = threading.Event()
        self.tool_running = threading.Event()
        self.first_text_at = 0.0

    async def session_update(self, session_id: str, update: Any, **_: Any) -> None:
        kind = getattr(update, "session_update", "")
        if kind == "agent_message_chunk" and not self.first_text.is_set():
            self.first_text_at = time.perf_counter()
            self.first_text.set()
        elif kind == "tool_call":
            self.tool_running.set()

    async def request_permission(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("no permission is asked in this benchmark")


def straight(url: str) -> float:
    """Seconds to the first content chunk of a streamed request sent straight to the model server."""
    body = {"model": "scripted-model", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
    request = urllib.request.Request(f"{url}/chat/completions", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    started = time.perf_counter()
    with urllib.request.urlopen(request, timeout=60) as response:
        for line in response:
            if not line.startswith(b"data: {"):
                continue
            choices = json.loads(line[6:]).get("choices") or [{}]
            if choices[0].get("delta", {}).get("content"):
                elapsed = time.perf_counter() - started
                response.read()
                return elapsed
    raise RuntimeError("the model server sent no content")


async def prompts(home: Path, url: str, count: int) -> list[tuple[float, float]]:
    from acp import PROTOCOL_VERSION, spawn_agent_process, text_block

    editor = Editor()
    env = {**os.environ, "HERMES_HOME": str(home)}
    pairs = []
    async with spawn_agent_process(editor, HERMES, "acp", env=env) as (conn, _):
        await conn.initialize(protocol_version=PROTOCOL_VERSION)
        session = await conn.new_session(cwd=str(home), mcp_servers=[])
        for number in range(count + 3):  # three warm-up prompts
            editor.first_text.clear()
            started = time.perf_counter()
            await conn.prompt(session_id=session.session_id, prompt=[text_block(f"hello {number}")])
            through = editor.first_text_at - started
            direct = await asyncio.to_thread(straight, url)
            if number >= 3:
                pairs.append((through, direct))
    return pairs


async def cancels(home: Path, count: int) -> list[float]:
    from acp import PROTOCOL_VERSION, spawn_agent_process, text_block

    editor = Editor()
    env = {**os.environ, "HERMES_HOME": str(home)}
    waits = []
    async with spawn_agent_process(editor, HERMES, "acp", env=env) as (conn, _):
        await conn.initialize(protocol_version=PROTOCOL_VERSION)
        for _number in range(count):
            session = await conn.new_session(cwd=str(home), mcp_servers=[])  # a session per slow turn
            editor.tool_running.clear()
            asked = asyncio.ensure_future(conn.prompt(session_id=session.session_id, prompt=[text_block("slow")]))
            await asyncio.to_thread(editor.tool_running.wait, 60)
            started = time.perf_counter()
            await conn.cancel(session_id=session.session_id)
            answer = await asked
            waits.append(time.perf_counter() - started)
            assert answer.stop_reason == "cancelled", answer
    return waits


def config(home: Path, url: str, extra: str = "") -> None:
    home.mkdir(parents=True, exist_ok=True)
    text = (f"model:\n  provider: custom\n  model: scripted-model\n  base_url: {url}\n"
            f"plugins:\n  disabled: [cron, clock, memory/builtin]\n{extra}")
    path = home / "config.yaml"
    path.write_text(text, encoding="utf-8")
    os.utime(path, (time.time() - 3600, time.time() - 3600))  # an installed config, not one written just now


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--prompts", type=int, default=30)
    parser.add_argument("--cancels", type=int, default=10)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        with server_process(0.0, text="pong from the model") as url:
            config(root / "fast", url)
            pairs = asyncio.run(prompts(root / "fast", url, options.prompts))
        through = [p[0] * 1000 for p in pairs]
        direct = [p[1] * 1000 for p in pairs]
        added = [a - b for a, b in zip(through, direct)]
        print(f"first text through hermes acp p50 {statistics.median(through):6.1f} ms, straight to the model "
              f"p50 {statistics.median(direct):6.1f} ms; added p50 {statistics.median(added):6.1f} ms "
              f"(max {max(added):.1f}) over {len(pairs)} prompts; target <= 20 ms")
        with server_process(0.0, text="never", tool="slow") as url:
            slow = root / "slow" / "plugins" / "slow"
            slow.mkdir(parents=True)
            (slow / "__init__.py").write_text(SLOW, encoding="utf-8")
            (slow / "plugin.yaml").write_text("name: slow\n", encoding="utf-8")
            config(root / "slow", url, "  enabled: [slow]\n")
            waits = [w * 1000 for w in asyncio.run(cancels(root / "slow", options.cancels))]
        print(f"cancel during a 10 s tool answered after p50 {statistics.median(waits):6.1f} ms "
              f"(max {max(waits):.1f}) over {len(waits)} cancels; target <= 500 ms")


if __name__ == "__main__":
    main()
