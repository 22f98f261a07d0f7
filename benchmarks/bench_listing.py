"""`hermes plugins list` with 100 installed entry-point plugins, against the bare
entry-point scan it cannot avoid, run alternately in the same session; the same listing through
the click command line (`hermes_core.cli.main`, which the console script skips for it); and
`hermes --help` against both (the plugins' commands and the text click rendered known from the last
runs: no plugin imported, and no click).

    .venv/bin/python benchmarks/bench_listing.py [--plugins 100] [--runs 30]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from _venv import bench_venv, timed

BASELINE = "import importlib.metadata as m; m.entry_points(group='hermes_agent.plugins')"
WITH_CLICK = "import click; " + BASELINE  # the part of the gap that is click's own import
CLICK_MAIN = "from hermes_core.cli import main; main()"  # the click command line: what `hermes` runs for other commands


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--plugins", type=int, default=100)
    parser.add_argument("--runs", type=int, default=30)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        python, ids = bench_venv(root / "venv", options.plugins)
        hermes = str(python.parent / "hermes")
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        scenarios = {"no config.yaml": root / "home-empty", "config.yaml enabling all": root / "home-config"}
        for home in scenarios.values():
            home.mkdir()
        config = scenarios["config.yaml enabling all"] / "config.yaml"
        config.write_text("# every benchmark plugin\nplugins:\n  enabled:\n" + "".join(f"    - {i}\n" for i in ids))
        an_hour_ago = time.time() - 3600  # edited earlier, as an operator's config is (see load_config)
        os.utime(config, (an_hour_ago, an_hour_ago))
        listed = subprocess.run([hermes, "plugins", "list", "--json"], env=env | {"HERMES_HOME": str(root / "home-empty")},
                                capture_output=True, text=True, check=True, cwd=root).stdout
        assert listed.count('"id": "bench') == options.plugins, "not every plugin was listed"
        print(f"{options.plugins} entry-point plugins, {options.runs} alternating runs each (wall time)")
        for label, home in scenarios.items():
            run_env = env | {"HERMES_HOME": str(home)}
            base, ours, clicked, helped, through_click = [], [], [], [], []
            for _ in range(3):  # warm the page cache; the first two --help keep the plugins' commands, then click's text
                timed([str(python), "-c", BASELINE], run_env, root)
                timed([hermes, "plugins", "list"], run_env, root)
                timed([hermes, "--help"], run_env, root)
            probe = subprocess.run([str(python), "-X", "importtime", hermes, "--help"], env=run_env, cwd=root,
                                   capture_output=True, text=True, check=True).stderr
            assert "| click\n" not in probe, "hermes --help still imports click after three runs"
            for _ in range(options.runs):
                base.append(timed([str(python), "-c", BASELINE], run_env, root))
                ours.append(timed([hermes, "plugins", "list"], run_env, root))
                clicked.append(timed([str(python), "-c", WITH_CLICK], run_env, root))
                helped.append(timed([hermes, "--help"], run_env, root))
                through_click.append(timed([str(python), "-c", CLICK_MAIN, "plugins", "list"], run_env, root))
            b, o = statistics.median(base), statistics.median(ours)
            paired = statistics.median(x / y for x, y in zip(ours, base))
            print(f"  {label:<26} baseline {b * 1000:6.1f} ms   hermes plugins list {o * 1000:6.1f} ms   "
                  f"ratio: of medians {o / b:.2f}x, median of paired runs {paired:.2f}x, "
                  f"of minima {min(ours) / min(base):.2f}x")
            print(f"  {'':<26} baseline + `import click` alone {statistics.median(clicked) * 1000:6.1f} ms "
                  f"({statistics.median(clicked) / b:.2f}x)")
            c = statistics.median(through_click)
            print(f"  {'':<26} the same listing through click (hermes_core.cli.main) {c * 1000:6.1f} ms "
                  f"({c / b:.2f}x; median of paired runs {statistics.median(x / y for x, y in zip(through_click, base)):.2f}x)")
            h = statistics.median(helped)
            print(f"  {'':<26} hermes --help {h * 1000:6.1f} ms: against hermes plugins list, of medians "
                  f"{h / o:.2f}x, median of paired runs {statistics.median(x / y for x, y in zip(helped, ours)):.2f}x; "
                  f"against the listing through click {statistics.median(x / y for x, y in zip(helped, through_click)):.2f}x")


if __name__ == "__main__":
    main()
