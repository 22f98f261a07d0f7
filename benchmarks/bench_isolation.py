"""An isolated plugin's calls against the same calls in-process (issue 33), in the same run.

    .venv/bin/python benchmarks/bench_isolation.py [--calls 2000] [--rounds 7]

Two folder plugins with the same code: a sync tool echoing its argument and a `post_llm_call`
hook; one loaded in the host's process, one with `isolation: process`. Alternating rounds of
`--calls` calls each: `PluginManager.dispatch_tool` of each plugin's tool, and the hook fired
through `manager.lifecycle` on a manager holding only that plugin. Reported: the median per-call
time of each, the difference (what the pipe round trip adds; target <= +300 us), and the child's
cold start (spawn, import, register: `PluginManager.load()` of the isolated plugin's manager).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from hermes_core import PluginManager  # noqa: E402

PLUGIN = '''
import json

def echo(args, **kwargs):
    return json.dumps({{"echo": args.get("text", "")}})

def note(**kwargs):
    return None

def register(ctx):
    ctx.register_tool("{name}_echo", "bench", {{"name": "{name}_echo", "parameters": {{"type": "object",
                      "properties": {{"text": {{"type": "string"}}}}}}}}, echo)
    ctx.register_hook("post_llm_call", note)
'''

HOOK_ARGS = dict(session_id="s", task_id="t", turn_id="s:t:1", user_message="hi", assistant_response="hello",
                 conversation_history=[{"role": "user", "content": "hi"}], model="m", platform="cli")


def home_with(root: Path, name: str, isolated: bool) -> Path:
    home = root / name
    folder = home / "plugins" / name
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text(PLUGIN.format(name=name))
    (folder / "plugin.yaml").write_text(f"name: {name}\n")
    entry = f"  entries:\n    {name}: {{isolation: process}}\n" if isolated else ""
    (home / "config.yaml").write_text(f"plugins:\n  enabled: [{name}]\n{entry}")
    return home


def per_call(action, calls: int) -> float:
    started = time.perf_counter()
    for _ in range(calls):
        action()
    return (time.perf_counter() - started) / calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        inproc = PluginManager(home=home_with(root, "inproc", False)).load()
        cold = []
        for i in range(5):  # a child's cold start: spawn, import hermes-core and the plugin, register
            home = home_with(root, f"cold{i}", True)
            started = time.perf_counter()
            manager = PluginManager(home=home).load()
            cold.append(time.perf_counter() - started)
            manager.remove_plugin(f"cold{i}")
        isolated = PluginManager(home=home_with(root, "iso", True)).load()
        assert isolated.record("iso").process is not None
        results: dict[str, list[float]] = {key: [] for key in ("tool in", "tool iso", "hook in", "hook iso")}
        for manager, name in ((inproc, "inproc"), (isolated, "iso")):  # warm: workers, validators
            per_call(lambda: manager.dispatch_tool(f"{name}_echo", {"text": "x"}), 50)
        for _ in range(args.rounds):
            results["tool in"].append(per_call(lambda: inproc.dispatch_tool("inproc_echo", {"text": "x"}), args.calls))
            results["tool iso"].append(per_call(lambda: isolated.dispatch_tool("iso_echo", {"text": "x"}), args.calls))
            results["hook in"].append(per_call(lambda: inproc.lifecycle.post_llm_call(**HOOK_ARGS).run(), args.calls))
            results["hook iso"].append(per_call(lambda: isolated.lifecycle.post_llm_call(**HOOK_ARGS).run(),
                                                args.calls))
        median = {key: statistics.median(values) * 1e6 for key, values in results.items()}
        print(f"{args.rounds} alternating rounds of {args.calls} calls; median per call:")
        for what, key in (("tool call", "tool"), ("hook call", "hook")):
            inside, outside = median[f"{key} in"], median[f"{key} iso"]
            print(f"  {what}   in-process {inside:7.1f} us   isolated {outside:7.1f} us   "
                  f"+{outside - inside:.1f} us (target <= +300 us)")
        print(f"  a child's cold start (load() of a manager with one isolated plugin): median "
              f"{statistics.median(cold) * 1e3:.0f} ms, min {min(cold) * 1e3:.0f} ms")
        isolated.remove_plugin("iso")


if __name__ == "__main__":
    main()
