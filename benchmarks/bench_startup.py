"""Start-up with many plugins (issue 31): `hermes run`, `hermes chat` and `hermes tools call` with 60
tool-only folder plugins enabled, against the same with none of them, side by side in one run.

    .venv/bin/python benchmarks/bench_startup.py [--runs 10] [--plugins 60] [--import-ms 15] [--eager]

Each `$HERMES_HOME` holds the same plugin folders: `--plugins` tool-only plugins, each doing about
`--import-ms` of CPU work at import (a table built at module level, as an SDK's import is work
rather than waiting: sized in this process, then resized until it measures that long inside
`hermes`, where the same work can take another time), then registering two tools with JSON schemas and one
slash command; and one plugin with a `pre_llm_call` hook. Every plugin appends its name (and what
its import work took) to a marker file when it is imported, so each run counts the plugin modules
it imported. config.yaml (back-dated an hour, as an operator's is) points `model:` at the scripted
OpenAI-compatible server, in its own process, answering every request with text at once.

- home A enables every plugin; home B enables the hook plugin alone; home C the hook plugin and
  the one tool plugin whose tool is called.
- `hermes run "hello"` in A and in B, whole processes, alternately: medians, the median of the
  paired ratios A/B, the children's CPU time. Target once plugins activate lazily: <= 1.1x.
- `hermes chat` with stdin a pipe: the time until it writes its session line to stderr, which it
  does just before reading the first line (the time to the first prompt; on a terminal the prompt
  also sets up readline and reads the history), then `/exit`; the whole process time beside it.
- `hermes tools call <a tool of the first plugin>` in A against C (where that plugin is the only
  tool plugin): the first call of a lazy tool should cost its own plugin's import and no other.
- In one process per run (`PluginManager(home=A, lazy=True).load()`, as a host opting in to lazy
  activation): the load, then the first and the second `dispatch_tool` of that tool: the first call
  should pay the plugin's import once, the second not.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

from _scripted import server_process

HERMES = str(Path(sys.executable).with_name("hermes"))
HOOK = "bench-hook"

# Module-level work of a tool plugin's import, `N` sized to take --import-ms here.
WORK = """
_INDEX = {}
for _i in range(N):
    _INDEX[f"term{_i}"] = (_i, _i * 7 % 13, str(_i))
"""

TOOL_PLUGIN = '''
"""Benchmark plugin {name}: two tools and a slash command; its import is work, as an SDK's is."""
import json
import time

_started = time.perf_counter()
N = {n}
{work}
with open({marker!r}, "a") as _marker:
    _marker.write(f"{name} {{time.perf_counter() - _started}}\\n")

SEARCH = {{
    "name": "{slug}_search",
    "description": "Search the {name} index for a term.",
    "parameters": {{
        "type": "object",
        "properties": {{
            "query": {{"type": "string", "description": "what to look for"}},
            "limit": {{"type": "integer", "minimum": 1, "maximum": 50, "default": 10}},
        }},
        "required": ["query"],
    }},
}}
FETCH = {{
    "name": "{slug}_fetch",
    "description": "Fetch one entry of the {name} index.",
    "parameters": {{
        "type": "object",
        "properties": {{"key": {{"type": "string"}}, "fields": {{"type": "array", "items": {{"type": "string"}}}}}},
        "required": ["key"],
    }},
}}


def search(args, **kwargs):
    hits = [k for k in ("term1", "term2", "term3") if args["query"] in k][: args.get("limit", 10)]
    return json.dumps({{"plugin": {name!r}, "hits": hits}})


def fetch(args, **kwargs):
    return json.dumps({{"plugin": {name!r}, "entry": _INDEX.get(args["key"])}})


def register(ctx):
    ctx.register_tool(SEARCH["name"], {slug!r}, SEARCH, search)
    ctx.register_tool(FETCH["name"], {slug!r}, FETCH, fetch)
    ctx.register_command("{name}-stats", lambda raw_args: f"{{len(_INDEX)}} terms", description="index size")
'''

HOOK_PLUGIN = '''
"""Benchmark plugin {name}: one pre_llm_call hook."""
with open({marker!r}, "a") as _marker:
    _marker.write({name!r} + "\\n")


def note(user_message, is_first_turn):
    with open({marker!r}, "a") as marker:
        marker.write("pre_llm_call\\n")
    return "Reply briefly." if is_first_turn else None


def register(ctx):
    ctx.register_hook("pre_llm_call", note)
'''

IN_PROCESS = """
import json, sys, time
from pathlib import Path
started = time.perf_counter()
from hermes_core import PluginManager
manager = PluginManager(home=Path(sys.argv[1]), lazy=True).load()
loaded = time.perf_counter()
first = manager.dispatch_tool(sys.argv[2], {"query": "term"})
called = time.perf_counter()
second = manager.dispatch_tool(sys.argv[2], {"query": "term"})
again = time.perf_counter()
assert "term1" in first and first == second, (first, second)
print(json.dumps({"load": loaded - started, "first": called - loaded, "second": again - called}))
"""


def size_work(target: float) -> int:
    """N such that `WORK` takes about `target` seconds here (the fastest of 7), run as module code as
    an import runs it: a first guess, corrected inside `hermes` by `main`."""
    code = compile(WORK, "<work>", "exec")

    def seconds(n: int) -> float:
        times = []
        for _ in range(7):
            started = time.perf_counter()
            exec(code, {"N": n})
            times.append(time.perf_counter() - started)
        return min(times)

    n = 1000
    while seconds(n) < target / 4:
        n *= 2
    for _ in range(3):
        n = max(1, round(n * target / seconds(n)))
    return n


def write_plugins(home: Path, names: list[str], n: int) -> Path:
    """A plugin folder in `home` for each of `names` (the hook plugin among them); returns the marker file."""
    marker = home / "imported.txt"
    for name in names:
        folder = home / "plugins" / name
        folder.mkdir(parents=True, exist_ok=True)
        if name == HOOK:
            code = HOOK_PLUGIN.format(name=name, marker=str(marker))
        else:
            code = TOOL_PLUGIN.format(name=name, slug=name.replace("-", "_"), marker=str(marker), n=n,
                                      work=textwrap.dedent(WORK))
        (folder / "__init__.py").write_text(code.lstrip())
        (folder / "plugin.yaml").write_text(f"name: {name}\nversion: 1.0.0\ndescription: benchmark plugin {name}\n")
        hour_ago = time.time() - 3600  # an installed plugin is not seconds old
        for path in (folder / "__init__.py", folder / "plugin.yaml"):
            os.utime(path, (hour_ago, hour_ago))
    return marker


def build_home(home: Path, url: str, names: list[str], enabled: list[str], n: int, eager: bool) -> Path:
    """`home` with every plugin folder of `names` and `enabled` enabled (with `eager`, lazy activation
    off: every enabled plugin imported at start); returns its marker file."""
    marker = write_plugins(home, names, n)
    config = home / "config.yaml"
    config.write_text(f"model:\n  provider: custom\n  model: bench\n  base_url: {url}\n"
                      f"plugins:\n  lazy: {str(not eager).lower()}\n  enabled:\n"
                      + "".join(f"    - {name}\n" for name in enabled))
    hour_ago = time.time() - 3600  # an operator's config is not seconds old
    os.utime(config, (hour_ago, hour_ago))
    return marker


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


class Home:
    """One `$HERMES_HOME`: its environment, and what each run imported."""

    def __init__(self, label: str, path: Path, marker: Path, env: dict[str, str]) -> None:
        self.label, self.path, self.marker = label, path, marker
        self.env = {**env, "HERMES_HOME": str(path)}
        self.import_times: list[float] = []  # each tool plugin's import work, as it measured it

    def imported(self) -> tuple[int, int]:
        """(tool plugins imported, pre_llm_call hooks called) since the last call; resets the count."""
        lines = self.marker.read_text().splitlines() if self.marker.exists() else []
        self.marker.unlink(missing_ok=True)
        tools = [float(line.split()[1]) for line in lines if line.startswith("bench-tool-")]
        self.import_times += tools
        return len(tools), lines.count("pre_llm_call")

    def run(self, cwd: Path) -> tuple[float, float]:
        started, cpu = time.perf_counter(), children_cpu()
        done = subprocess.run([HERMES, "run", "hello"], env=self.env, cwd=cwd, capture_output=True, text=True)
        elapsed = time.perf_counter() - started
        assert done.returncode == 0 and done.stdout.strip() == "Hello!", (done.returncode, done.stdout, done.stderr)
        return elapsed, children_cpu() - cpu

    def chat(self, cwd: Path) -> tuple[float, float, float]:
        """(time to the session line written just before the first prompt, whole process, CPU)."""
        started, cpu = time.perf_counter(), children_cpu()
        proc = subprocess.Popen([HERMES, "chat"], env=self.env, cwd=cwd, stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert proc.stdin is not None and proc.stderr is not None
        seen = []
        for line in proc.stderr:
            seen.append(line)
            if line.startswith("session ") and "/exit" in line:
                break
        prompt = time.perf_counter() - started
        out, err = proc.communicate("/exit\n", timeout=120)
        elapsed = time.perf_counter() - started
        assert proc.returncode == 0 and "saved" in err, (proc.returncode, out, "".join(seen) + err)
        return prompt, elapsed, children_cpu() - cpu

    def call(self, cwd: Path, tool: str) -> tuple[float, float]:
        started, cpu = time.perf_counter(), children_cpu()
        done = subprocess.run([HERMES, "tools", "call", tool, '{"query": "term"}'], env=self.env, cwd=cwd,
                              capture_output=True, text=True)
        elapsed = time.perf_counter() - started
        assert done.returncode == 0 and "term1" in done.stdout, (done.returncode, done.stdout, done.stderr)
        return elapsed, children_cpu() - cpu


def paired(label: str, first: Home, second: Home, runs: int, measure: Callable[[Home], tuple[float, ...]],
           columns: list[str], target: str) -> None:
    """`measure` in `first` and `second` alternately (the order swapped every pair), then one table
    row per column: medians, the median of the paired ratios, and the plugin modules each imported."""
    results: dict[str, list[tuple[float, ...]]] = {first.label: [], second.label: []}
    counts: dict[str, set[tuple[int, int]]] = {first.label: set(), second.label: set()}
    for home in (first, second):
        home.imported()
        home.import_times.clear()
    for i in range(runs):
        for home in (first, second) if i % 2 == 0 else (second, first):
            results[home.label].append(measure(home))
            counts[home.label].add(home.imported())
    print(f"\n{label}: {runs} alternating pairs, {first.label} against {second.label}; target {target}")
    print(f"  {'':<26} {first.label + ' median':>12} {second.label + ' median':>12} {'paired ratio':>13}"
          f" {'ratio of medians':>17}")
    for index, column in enumerate(columns):
        a = [r[index] for r in results[first.label]]
        b = [r[index] for r in results[second.label]]
        ratio = statistics.median(x / y for x, y in zip(a, b))
        print(f"  {column:<26} {statistics.median(a) * 1e3:9.0f} ms {statistics.median(b) * 1e3:9.0f} ms"
              f" {ratio:12.2f}x {statistics.median(a) / statistics.median(b):16.2f}x")
    for home in (first, second):
        shown = "; ".join(f"{tools} tool plugins imported, pre_llm_call called {hooks} times"
                          for tools, hooks in sorted(counts[home.label]))
        print(f"  per run in {home.label}: {shown}")
        if home.import_times:
            print(f"    a tool plugin's import work there: median {statistics.median(home.import_times) * 1e3:.1f} ms, "
                  f"total per run {sum(home.import_times) / runs * 1e3:.0f} ms")


def in_process(home: Home, tool: str, runs: int, cwd: Path) -> None:
    rows = []
    for _ in range(runs):
        done = subprocess.run([sys.executable, "-c", IN_PROCESS, str(home.path), tool], env=home.env, cwd=cwd,
                              capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        rows.append(json.loads(done.stdout.splitlines()[-1]))
        tools, _ = home.imported()
    print(f"\nIn one process, {home.label}, {runs} processes: PluginManager.load() then dispatch_tool({tool!r}) twice"
          "; target: the first call pays its plugin's import once, the second nothing")
    for key, what in (("load", "load()"), ("first", "first call"), ("second", "second call")):
        values = [row[key] for row in rows]
        print(f"  {what:<14} median {statistics.median(values) * 1e3:9.2f} ms   min {min(values) * 1e3:9.2f} ms")
    print(f"  tool plugins imported per process: {tools}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10, help="alternating pairs per comparison")
    parser.add_argument("--plugins", type=int, default=60, help="tool-only plugins in home A")
    parser.add_argument("--import-ms", type=float, default=15.0, help="CPU work of each tool plugin's import")
    parser.add_argument("--work", type=int, help="N of the import work itself, instead of sizing it to --import-ms")
    parser.add_argument("--eager", action="store_true",
                        help="plugins.lazy: false in every home: the figures without lazy activation")
    parser.add_argument("--only", choices=("run", "chat", "call", "in-process"), action="append",
                        help="only these comparisons (repeatable)")
    args = parser.parse_args()
    wanted = set(args.only or ("run", "chat", "call", "in-process"))
    n = args.work or size_work(args.import_ms / 1e3)
    tools = [f"bench-tool-{i:02d}" for i in range(args.plugins)]
    names = tools + [HOOK]
    called = tools[0].replace("-", "_") + "_search"
    with server_process(0.0, "Hello!") as url, tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        cwd = root / "cwd"
        cwd.mkdir()
        # Compiled modules cached as an installed package has them (outside the tree, in a folder of its own).
        env = {**os.environ, "PYTHONPYCACHEPREFIX": str(root / "pycache")}
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        homes = {}
        for label, enabled in (("A", names), ("B", [HOOK]), ("C", [tools[0], HOOK])):
            path = root / f"home-{label}"
            homes[label] = Home(label, path, build_home(path, url, names, enabled, n, args.eager), env)
        a, b, c = homes["A"], homes["B"], homes["C"]
        sized = "given"
        if not args.work:  # sized again where it runs: inside hermes, after the other plugins' imports
            for _ in range(3):
                for _ in range(3):
                    a.call(cwd, called)
                a.imported()
                took, a.import_times = statistics.median(a.import_times), []
                if abs(took / (args.import_ms / 1e3) - 1) < 0.15:
                    break
                n = max(1, round(n * args.import_ms / 1e3 / took))
                for home in homes.values():
                    write_plugins(home.path, names, n)
            sized = f"sized to ~{args.import_ms:g} ms inside hermes"
        print(f"{args.plugins} tool plugins (two tools and a command each, import work N={n:,}, {sized}) "
              "and one pre_llm_call plugin; "
              f"A enables all {len(names)}, B the hook plugin alone, C the hook plugin and {tools[0]}")
        for home in (a, b, c):  # warm up: compiled modules, the config and command caches, the page cache
            for _ in range(2):
                home.run(cwd)
                home.chat(cwd)
                if home is not b:
                    home.call(cwd, called)
            home.imported()
        if "run" in wanted:
            paired('hermes run "hello"', a, b, args.runs, lambda h: h.run(cwd), ["wall", "CPU"], "A/B <= 1.1x")
        if "chat" in wanted:
            paired("hermes chat, stdin a pipe, /exit at the first prompt", a, b, args.runs, lambda h: h.chat(cwd),
                   ["to the first prompt", "whole process", "CPU"], "A/B <= 1.1x")
        if "call" in wanted:
            paired(f"hermes tools call {called}", a, c, args.runs, lambda h: h.call(cwd, called), ["wall", "CPU"],
                   "A/C <= 1.1x (its own plugin's import only)")
        if "in-process" in wanted:
            in_process(a, called, args.runs, cwd)


if __name__ == "__main__":
    main()
