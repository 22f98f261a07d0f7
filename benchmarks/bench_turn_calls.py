"""What one stateless turn costs the agent, counted: Python and C function calls per
`Agent()+ask+close`, as `hermes serve` runs one for each chat completion without a session.

    .venv/bin/python benchmarks/bench_turn_calls.py [--turns 300] [--top 0]

The scripted model server runs in its own process and answers at once; the turns run in this one,
with a home of their own and one shared session store (as the API server's). The count is
cProfile's total over `--turns` turns after 30 to warm up, divided by the turns: it does not
depend on the machine's load, so two trees can be compared on a busy machine
(`PYTHONPATH=TREE`); `--top N` also prints the N functions called most. The time per turn it
prints is cProfile's, several times the real one.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import sys
import tempfile
import time
from pathlib import Path

from _scripted import server_process


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=300)
    parser.add_argument("--top", type=int, default=0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, server_process(0.0, "echo", echo=True) as model:
        home = Path(tmp) / "home"
        home.mkdir()
        config = home / "config.yaml"
        config.write_text(f"model:\n  provider: custom\n  model: bench\n  base_url: {model}\n", encoding="utf-8")
        settled = time.time() - 3600  # an old file: read once, not again each turn
        os.utime(config, (settled, settled))
        os.environ["HERMES_HOME"] = str(home)
        from hermes_core import PluginManager
        from hermes_core.agent import Agent, Display, SessionStore

        manager = PluginManager(home=home).load()
        store = SessionStore(home)

        def turn() -> None:
            agent = Agent(manager, history=[], platform="api_server", store=store, display=Display(quiet=True))
            agent.ask("hi")
            agent.close()

        for _ in range(30):
            turn()
        profile = cProfile.Profile()
        profile.enable()
        for _ in range(args.turns):
            turn()
        profile.disable()
        stats = pstats.Stats(profile)
        calls, seconds = getattr(stats, "total_calls"), getattr(stats, "total_tt")
        print(f"{calls / args.turns:.0f} function calls per Agent()+ask+close "
              f"({seconds / args.turns * 1000:.2f} ms per turn under cProfile)")
        if args.top:
            stats.sort_stats("ncalls").print_stats(args.top)
        store.close()
        manager.close()


if __name__ == "__main__":
    main()
