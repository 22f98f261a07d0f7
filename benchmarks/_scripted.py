"""The scripted OpenAI-compatible server in its own process, for benchmarks."""

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import Iterator

_SERVE = """
import sys
from hermes_core.testing import Reply, ScriptedServer
with ScriptedServer() as server:
    server.always(Reply(sys.argv[2], delay=float(sys.argv[1])))
    print(server.url, flush=True)
    sys.stdin.read()
"""


@contextlib.contextmanager
def server_process(delay: float, text: str = "pong") -> Iterator[str]:
    """The scripted server in its own process (so that it does not share the client's GIL),
    answering every request with `text` after `delay` seconds; yields its URL."""
    proc = subprocess.Popen([sys.executable, "-c", _SERVE, str(delay), text], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        yield proc.stdout.readline().strip()
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(timeout=10)
