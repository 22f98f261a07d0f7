"""The scripted OpenAI-compatible server in its own process, for benchmarks."""

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import Iterator

_SERVE = """
import sys
from hermes_core.testing import Reply, ScriptedServer, tool_call
delay, text, tool, echo = float(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4] == "echo"

def tool_round(body):  # a call of `tool` first, then `text` once its result is back
    if body["messages"][-1]["role"] == "tool":
        return Reply(text, delay=delay)
    return Reply("", tool_calls=[tool_call(tool, {"key": "k"})], delay=delay)

with ScriptedServer() as server:
    server.always(Reply(text, delay=delay))
    if tool:
        server.answer(tool_round)
    if echo:  # the last user message's text, word by word, as the answer: each caller's own
        server.answer(lambda body: Reply(f"{text} {body['messages'][-1]['content']}", delay=delay))
    print(server.url, flush=True)
    sys.stdin.read()
"""


@contextlib.contextmanager
def server_process(delay: float, text: str = "pong", tool: str = "", echo: bool = False) -> Iterator[str]:
    """The scripted server in its own process (so that it does not share the client's GIL),
    answering every request with `text` after `delay` seconds (with `tool`: each conversation's
    first request with a call of that tool, the next with `text`; with `echo`: `text` and the last user
    message's text); yields its URL."""
    proc = subprocess.Popen([sys.executable, "-c", _SERVE, str(delay), text, tool, "echo" if echo else ""],
                            stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        yield proc.stdout.readline().strip()
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(timeout=10)
