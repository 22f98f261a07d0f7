"""What OpenTelemetry export costs (docs/observability.md): with it on, the time added to a tool
call, a hook call and an agent turn; with it off, what the seams cost.

    .venv/bin/python benchmarks/bench_otel.py [--turns 60]

"On" is the real thing: the SDK's providers with a batching span processor and a periodic metric
reader, exporting over OTLP/HTTP to a receiver in another process that takes and drops what it
gets. Each measure alternates on and off in the same process (the seam reads one module attribute,
which is all the toggle sets), and reports the median of the paired differences.

- tool call: `manager.dispatch_tool` of a plugin's tool, inline (`tools.timeout: 0`, so that a
  worker hand-off's noise does not drown the difference); target with export on: <= 50 us p50 in
  bursts of 200 calls with the spans exported between them (as between an agent's tool calls), and
  back to back too (thousands of calls a second: the exporter's thread takes its share meanwhile);
- the seam off: `run` (the seam reading `_telemetry.ACTIVE`, None) against the same call without it;
- hook call: a lifecycle hook with 10 callbacks, inline;
- isolated tool call: the same tool in a plugin with `isolation: process`: with export on, the call
  carries the trace context to the child, which runs it under that context and sends back what
  it collected (here nothing: the tool makes no span of its own);

The tool and hook rows are also given in the calling thread's CPU time (`time.thread_time`): what
the call path itself costs, whatever else the machine runs meanwhile.
- turn: `Agent.ask` against the scripted server in its own process, one tool round (two model
  calls, one tool call, the turn's hooks); target with export on: <= 1 ms p50. Also in the
  process's CPU time (`time.process_time`, every thread of the host: the turn's worker threads
  too; the scripted model is another process), which a loaded machine inflates far less.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
import timeit
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _scripted import server_process  # noqa: E402

import hermes_core._telemetry as telemetry  # noqa: E402
from hermes_core import HookRunner, LifecycleHooks, PluginManager  # noqa: E402
from hermes_core._runtime.invoke import drive  # noqa: E402
from hermes_core._telemetry.settings import Settings  # noqa: E402
from hermes_core._telemetry.start import start  # noqa: E402
from hermes_core._tools import call as tool_call  # noqa: E402
from hermes_core._tools.call import NO_IDS  # noqa: E402

DROP = """
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
class Drop(BaseHTTPRequestHandler):
    def log_message(self, *args): pass
    def do_POST(self):
        self.rfile.read(int(self.headers.get("content-length", 0)))
        self.send_response(200); self.send_header("content-length", "0"); self.end_headers()
server = ThreadingHTTPServer(("127.0.0.1", 0), Drop)
print(f"http://127.0.0.1:{server.server_address[1]}", flush=True)
server.serve_forever()
"""

PLUGIN = """
def register(ctx):
    ctx.register_tool("lookup", "demo", {"name": "lookup", "parameters": {"type": "object"}},
                      lambda args, **kw: '{"value": 1}')
"""


@contextmanager
def receiver() -> Iterator[str]:
    """An OTLP/HTTP receiver in its own process that drops what it gets; yields its URL."""
    proc = subprocess.Popen([sys.executable, "-c", DROP], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        yield proc.stdout.readline().strip()
    finally:
        proc.kill()
        proc.wait()


def flush() -> None:
    """Export what the batching span processor holds now (outside the clock): it exports in the
    gaps between calls, as it does between an agent's tool calls."""
    from opentelemetry import trace

    trace.get_tracer_provider().force_flush()  # type: ignore[attr-defined]


def paired(label: str, off: Callable[[], Any], on: Callable[[], Any], number: int, repeat: int = 15,
           on_state: Any = None, off_state: Any = None, between: Callable[[], None] = flush,
           timer: Callable[[], float] = time.perf_counter) -> float:
    """Time `off` with ACTIVE=`off_state` and `on` with ACTIVE=`on_state`, alternately, `between()`
    before each; print and return the median of the paired differences (seconds per call)."""
    base, mine, extra = [], [], []
    for _ in range(repeat):
        telemetry.ACTIVE = off_state
        between()
        b = timeit.timeit(off, timer=timer, number=number) / number
        telemetry.ACTIVE = on_state
        between()
        o = timeit.timeit(on, timer=timer, number=number) / number
        telemetry.ACTIVE = None
        base.append(b)
        mine.append(o)
        extra.append(o - b)
    added = statistics.median(extra)
    print(f"  {label:<52} {statistics.median(base) * 1e6:9.2f} µs -> {statistics.median(mine) * 1e6:9.2f} µs"
          f"   {'+' if added >= 0 else ''}{added * 1e6:.2f} µs")
    return added


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=60, help="pairs of turns (on, off)")
    options = parser.parse_args()
    home = Path(tempfile.mkdtemp(prefix="bench-otel-"))
    (home / "plugins" / "demo").mkdir(parents=True)
    (home / "plugins" / "demo" / "__init__.py").write_text(PLUGIN)
    (home / "plugins" / "demo" / "plugin.yaml").write_text("name: demo\n")
    import os

    os.environ["HERMES_HOME"] = str(home)
    with receiver() as url, server_process(0.0, "done", tool="lookup") as model_url:
        (home / "plugins" / "apart").mkdir(parents=True)
        (home / "plugins" / "apart" / "__init__.py").write_text(PLUGIN.replace('"lookup"', '"apart"'))
        (home / "plugins" / "apart" / "plugin.yaml").write_text("name: apart\n")
        (home / "config.yaml").write_text(
            f"model:\n  provider: custom\n  model: scripted-model\n  base_url: {model_url}\n"
            "plugins:\n  enabled: [demo, apart]\n  hook_callback_timeout: 0\n"
            "  entries:\n    apart: {isolation: process}\ntools:\n  timeout: 0\n")
        on = start(Settings(url))
        assert on is not None, "pip install 'hermes-core[otel]'"
        manager = PluginManager().load()
        registry, hooks = manager.tools, manager.lifecycle
        args = {"key": "k"}
        print("tool call (manager.dispatch_tool, inline)")
        paired("export on (bursts of 200, exported between them)", lambda: manager.dispatch_tool("lookup", args),
               lambda: manager.dispatch_tool("lookup", args), 200, 31, on_state=on)
        paired("  the same in the calling thread's CPU time", lambda: manager.dispatch_tool("lookup", args),
               lambda: manager.dispatch_tool("lookup", args), 200, 31, on_state=on, timer=time.thread_time)
        paired("export on (back to back: the exporter busy meanwhile)", lambda: manager.dispatch_tool("lookup", args),
               lambda: manager.dispatch_tool("lookup", args), 2000, on_state=on, between=lambda: None)
        paired("export off: the seam (run) against the call without it",
               lambda: drive(tool_call._call(registry, None, "lookup", args, NO_IDS, {})),
               lambda: tool_call.run(registry, None, "lookup", args, kwargs={}), 5000)
        print("isolated tool call (isolation: process)")
        telemetry.ACTIVE = on
        manager.dispatch_tool("apart", args)  # the child sets up its collector once
        telemetry.ACTIVE = None
        paired("export on (bursts of 200, exported between them)", lambda: manager.dispatch_tool("apart", args),
               lambda: manager.dispatch_tool("apart", args), 200, 15, on_state=on)
        runner = HookRunner(lambda: 0)
        for i in range(10):
            runner.add("on_session_start", lambda session_id: None, f"p{i}")
        typed = LifecycleHooks(runner)
        kwargs = {"session_id": "s", "model": "m", "platform": "cli"}
        print("hook call (10 callbacks, inline)")
        paired("export on (metrics only: a quick callback gets no span)", lambda: typed.on_session_start(**kwargs).run(),
               lambda: typed.on_session_start(**kwargs).run(), 2000, on_state=on)
        paired("  the same in the calling thread's CPU time", lambda: typed.on_session_start(**kwargs).run(),
               lambda: typed.on_session_start(**kwargs).run(), 2000, on_state=on, timer=time.thread_time)
        from hermes_core.agent import Agent

        print(f"agent turn (one tool round: 2 model calls, 1 tool call; {options.turns} pairs)")
        with Agent(manager) as agent:
            ask = lambda: agent.ask("look it up")  # noqa: E731
            for _ in range(5):
                ask()
            paired("export on", ask, ask, 1, repeat=options.turns, on_state=on)
            paired("  the same in the process's CPU time (all its threads)", ask, ask, 1, repeat=options.turns,
                   on_state=on, timer=time.process_time)
        telemetry.ACTIVE = None
        on.tracer_provider.shutdown()  # the last export while the receiver still takes it
        on.meter_provider.shutdown()


if __name__ == "__main__":
    main()
