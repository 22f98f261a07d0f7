"""Hook tracing: one line on stderr per hook callback call, when `HERMES_TRACE_HOOKS` is set
(any value but `0`) or the CLI runs with `--debug`.

A `HookRunner` reads the variable once, when it is made; a traced hook call runs its chain
wrapped in `Traced`, so an untraced call does no per-callback work for it. A line names the
hook, the plugin, the callback, how long it took and how it ended (`ok`, `blocked`,
`raised <type>`, `timed out`); `plugin=-` is a callback of the host's own:

    hermes: hook pre_tool_call plugin=guard callback=Guard.check 0.15 ms blocked

With OpenTelemetry export on (`_telemetry`), each callback's time and outcome also go to its
`report` (hook time by plugin; a span for a callback that fails or is slow), lines or not.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Mapping
from collections.abc import Callable
from typing import Any, TypeVar, final

from .._runtime.invoke import Failure
from .chains import Callback, Chain

__all__ = ["VARIABLE", "Traced", "from_environment", "line"]

VARIABLE = "HERMES_TRACE_HOOKS"
R = TypeVar("R")


def from_environment() -> bool:
    """Whether `HERMES_TRACE_HOOKS` asks for tracing: set, and neither empty nor `0`."""
    return os.environ.get(VARIABLE, "").strip() not in ("", "0")


def line(hook: str, plugin_id: str | None, callback: str, seconds: float, outcome: str) -> str:
    """`hermes: hook HOOK plugin=ID callback=NAME 0.15 ms OUTCOME`, without its newline; a
    name's whitespace becomes `_`, so that the fields split on spaces."""
    return (f"hermes: hook {hook} plugin={plugin_id or '-'} callback={'_'.join(callback.split())} "
            f"{seconds * 1000:.2f} ms {outcome}")


def _outcome(result: Any, blocked: bool) -> str:
    if type(result) is Failure:
        return "timed out" if result.timed_out else f"raised {type(result.error).__name__}"
    return "blocked" if blocked else "ok"


def _write(text: str) -> None:
    """`text` on stderr in one write, so that lines from concurrent calls never interleave; a
    stderr that is gone or closed loses the line, never the hook call."""
    stream = sys.stderr
    if stream is None:
        return
    try:
        stream.write(text)
        stream.flush()
    except (OSError, ValueError):
        pass


@final
class Traced(Chain[R]):
    """`chain`, writing the trace line of each callback's result it takes.

    A callback's clock starts when a driver asks for the arguments to call it with (each driver
    does so once, right before the call) and stops when its result, or its `Failure`, is taken:
    a callback abandoned at its time limit is timed to when the driver gave up on it.
    """

    __slots__ = ("_chain", "_hook", "_started", "_lines", "_report")

    def __init__(self, hook: str, chain: Chain[R], *, lines: bool = True,
                 report: Callable[[str | None, str, float, float, str], None] | None = None) -> None:
        super().__init__(chain.kwargs)
        self._chain, self._hook = chain, hook
        self._lines, self._report = lines, report
        self._started = time.perf_counter()

    def arguments(self) -> Mapping[str, Any]:
        self._started = time.perf_counter()
        return self._chain.arguments()

    def take(self, cb: Callback, result: Any) -> bool:
        started = self._started
        seconds = time.perf_counter() - started
        go_on = self._chain.take(cb, result)
        outcome = _outcome(result, not go_on and self._chain.blocked)
        plugin_id = getattr(cb, "plugin_id", None)
        if self._lines:
            _write(line(self._hook, plugin_id, cb.name, seconds, outcome) + "\n")
        if self._report is not None:
            try:
                self._report(plugin_id, cb.name, started, seconds, outcome)
            except Exception:  # noqa: BLE001 - telemetry never fails a hook call
                pass
        return go_on

    @property
    def result(self) -> R:
        return self._chain.result

    @property
    def blocked(self) -> bool:
        return self._chain.blocked
