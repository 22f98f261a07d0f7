"""One lifecycle hook with 10 callbacks against a bare pluggy hook with 10 implementations,
and one tool dispatch with argument validation against a direct function call; each pair
is timed in the same process, interleaved. Each line: the medians, the median of the paired
ratios and the median of the paired differences (what hermes-core adds per call).

Under a time limit plugin code runs on a worker thread (a hook's whole chain in one hand-off,
a sync tool in one), so those lines also time the floor: the same baseline handed to a
persistent thread through a bare `queue.SimpleQueue` and answered through a lock, interleaved
with the other two. `floor` is that hand-off's own cost over the baseline; `over floor` is what
hermes-core adds on top of it.

    .venv/bin/python benchmarks/bench_dispatch.py
    .venv/bin/python benchmarks/bench_dispatch.py --checkouts ../old ../older --rounds 3

`--checkouts`: this script run against each checkout in turn (its hermes_core first on the path;
this tree's is `.`), `--rounds` times, alternating, then the median of each line's figures per
checkout: what a change added, with the machine's drift spread over all of them. Prefix `taskset
-c 0` to keep the worker on the caller's CPU: on a virtual machine with idle CPUs a thread woken
on another CPU can cost most of the hand-off (the floor line shows it).
"""

from __future__ import annotations

import json
import queue
import statistics
import threading
import timeit
from collections.abc import Callable
from typing import Any

import pluggy

from hermes_core import HookRunner, LifecycleHooks, PluginManager

CALLBACKS = 10


def bare_pluggy() -> pluggy.HookRelay:
    spec, impl = pluggy.HookspecMarker("bench"), pluggy.HookimplMarker("bench")

    class Spec:
        @spec
        def on_session_start(self, session_id, model, platform):
            """The spec."""

    pm = pluggy.PluginManager("bench")
    pm.add_hookspecs(Spec)
    for i in range(CALLBACKS):
        plugin = type(f"P{i}", (), {"on_session_start": impl(lambda self, session_id: None)})()
        pm.register(plugin, name=f"p{i}")
    return pm.hook


def runner(timeout: float) -> HookRunner:
    hooks = HookRunner(lambda: timeout)
    for i in range(CALLBACKS):
        hooks.add("on_session_start", lambda session_id: None, f"p{i}")
    return hooks


class Handoff:
    """The floor of waiting for work on another thread: one persistent thread fed by a
    `SimpleQueue`, answering through a lock made per call (no pool, no time-limit bookkeeping)."""

    def __init__(self) -> None:
        self.inbox: queue.SimpleQueue[tuple[Callable[[], Any], list[Any], threading.Lock]] = queue.SimpleQueue()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            fn, box, done = self.inbox.get()
            box.append(fn())
            done.release()

    def __call__(self, fn: Callable[[], Any]) -> Any:
        done = threading.Lock()
        done.acquire()
        box: list[Any] = []
        self.inbox.put((fn, box, done))
        done.acquire(True, 30)
        return box[0]


def with_floor(label: str, baseline, ours, number: int, repeat: int = 15) -> None:
    """`compare`, with the baseline through a bare thread hand-off timed between the two."""
    handoff = Handoff()
    floor = lambda: handoff(baseline)  # noqa: E731
    base, low, mine = [], [], []
    for _ in range(repeat):
        base.append(timeit.timeit(baseline, number=number) / number)
        low.append(timeit.timeit(floor, number=number) / number)
        mine.append(timeit.timeit(ours, number=number) / number)
    b, f, o = (statistics.median(x) for x in (base, low, mine))
    ratio = statistics.median(m / x for m, x in zip(mine, base))
    floor_ratio = statistics.median(x / y for x, y in zip(low, base))
    print(f"  {label:<58} {b * 1e6:8.2f} µs -> {o * 1e6:8.2f} µs   {ratio:6.1f}x"
          f"   +{statistics.median(m - x for m, x in zip(mine, base)) * 1e6:.2f} µs")
    print(f"  {'  the bare hand-off (floor): ' + f'{f * 1e6:.2f} µs':<58} floor {floor_ratio:.1f}x, +"
          f"{statistics.median(x - y for x, y in zip(low, base)) * 1e6:.2f} µs;"
          f" hermes-core over floor: +{statistics.median(m - x for m, x in zip(mine, low)) * 1e6:.2f} µs")


def compare(label: str, baseline, ours, number: int, repeat: int = 15) -> None:
    """Medians, the median of paired ratios and of paired differences (the overhead per call)."""
    base, mine, ratios, extra = [], [], [], []
    for _ in range(repeat):
        b = timeit.timeit(baseline, number=number) / number
        o = timeit.timeit(ours, number=number) / number
        base.append(b)
        mine.append(o)
        ratios.append(o / b)
        extra.append(o - b)
    b, o = statistics.median(base), statistics.median(mine)
    print(f"  {label:<58} {b * 1e6:8.2f} µs -> {o * 1e6:8.2f} µs   {statistics.median(ratios):6.1f}x"
          f"   +{statistics.median(extra) * 1e6:.2f} µs")


def main() -> None:
    kwargs = {"session_id": "s", "model": "m", "platform": "cli"}
    hook = bare_pluggy()
    print(f"lifecycle hook, {CALLBACKS} callbacks (bare pluggy -> hermes-core)")
    unlimited, limited = LifecycleHooks(runner(0)), LifecycleHooks(runner(30))  # the typed calls a host makes
    compare("no time limit (plugins.hook_callback_timeout: 0): inline", lambda: hook.on_session_start(**kwargs),
            lambda: unlimited.on_session_start(**kwargs).run(), 2000)
    with_floor("30 s limit per callback (the default): one worker hand-off",
               lambda: hook.on_session_start(**kwargs), lambda: limited.on_session_start(**kwargs).run(), 1000)

    def add(a: int, b: int) -> str:
        return json.dumps({"sum": a + b})

    manager = PluginManager(discover_plugins=False)
    schema = {"name": "add", "parameters": {"type": "object", "properties": {
        "a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"], "additionalProperties": False}}
    manager.add_plugin(lambda ctx: ctx.register_tool("add", "math", schema, lambda args, **kw: add(**args)), "bench")
    registry = manager.tools
    args = {"a": 2, "b": 3}
    print("tool dispatch (direct call -> hermes-core; the sync tool runs on a worker under tools.timeout)")
    with_floor("registry.dispatch_without_hooks: validate + call + wrap", lambda: add(**args),
               lambda: registry.dispatch_without_hooks("add", args), 3000)
    with_floor("manager.dispatch_tool: + pre/post/transform hooks (none)", lambda: add(**args),
               lambda: manager.dispatch_tool("add", args), 3000)
    wrong = {"a": 2, "b": "3"}
    print("rejected arguments (direct call -> the error result; jsonschema words it)")
    compare("registry.dispatch_without_hooks: validate, reject, word the error", lambda: add(**args),
            lambda: registry.dispatch_without_hooks("add", wrong), 2000)


def checkouts(trees: list[str], rounds: int) -> None:
    """Run this script against each checkout in turn, `rounds` times, and print the medians."""
    import os
    import re
    import subprocess
    import sys
    from collections import defaultdict

    figures: dict[str, dict[str, list[float]]] = {tree: defaultdict(list) for tree in trees}
    for _ in range(rounds):
        for tree in trees:
            env = {**os.environ, "PYTHONPATH": os.path.abspath(tree)}
            out = subprocess.run([sys.executable, __file__], env=env, capture_output=True, text=True, check=True).stdout
            label = ""
            for line in out.splitlines():
                if (added := re.search(r"^\s+(\S.*?)\s{2,}.*?([\d.]+)x\s+\+([-\d.]+) µs$", line)):
                    label = added.group(1).split(":")[0]
                    figures[tree][label].append(float(added.group(3)))
                elif (floor := re.search(r"hand-off \(floor\): ([\d.]+) µs.*over floor: \+([-\d.]+) µs", line)):
                    figures[tree][f"  {label}: the bare hand-off (floor)"].append(float(floor.group(1)))
                    figures[tree][f"  {label}: hermes-core over the floor"].append(float(floor.group(2)))
    print(f"median over {rounds} alternating runs, µs added per call (and the floor):")
    labels = list(dict.fromkeys(label for tree in trees for label in figures[tree]))
    print(f"  {'':<70}" + "".join(f"{os.path.basename(os.path.abspath(t)):>14}" for t in trees))
    for label in labels:
        print(f"  {label[:70]:<70}" + "".join(
            f"{statistics.median(figures[t][label]):>14.2f}" if figures[t][label] else f"{'':>14}" for t in trees))


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkouts", nargs="+", help="checkouts to compare (their hermes_core first on the path)")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    if args.checkouts:
        checkouts(args.checkouts, args.rounds)
    else:
        main()
