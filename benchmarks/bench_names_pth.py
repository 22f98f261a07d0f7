"""Interpreter start-up with `hermes_core_names.pth` (Hermes' import names in every interpreter of
the environment, issue 45) against the same installation without it, run alternately.

    .venv/bin/python benchmarks/bench_names_pth.py [--runs 40]

hermes-core is pip-installed into a temporary venv. Each pair of runs times a whole process with
the .pth in site-packages and then with it renamed away (site reads only `*.pth`): `python -c pass`
and `hermes --help`. Printed: the medians and the median of the paired ratios (with/without);
then, for scale, what serving a name costs on its first import (`import gateway.config`, which
loads hermes-core's finder) against `python -c pass`.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
from pathlib import Path

from _venv import bench_venv, site_packages, timed

PTH = "hermes_core_names.pth"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=40)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        python, _ = bench_venv(root / "venv", 0)
        pth = site_packages(python) / PTH
        away = pth.with_suffix(".off")
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"HERMES_HOME": str(root / "home")}
        commands = {"python -c pass": [str(python), "-c", "pass"],
                    "hermes --help": [str(python.parent / "hermes"), "--help"]}
        for label, cmd in commands.items():
            timed(cmd, env, root)  # warm the caches and hermes' kept help
            with_pth, without = [], []
            for _ in range(options.runs):
                with_pth.append(timed(cmd, env, root))
                pth.rename(away)
                without.append(timed(cmd, env, root))
                away.rename(pth)
            paired = statistics.median(a / b for a, b in zip(with_pth, without))
            print(f"{label:<16} with the .pth {statistics.median(with_pth) * 1000:6.1f} ms, without "
                  f"{statistics.median(without) * 1000:6.1f} ms; median of paired ratios {paired:.3f}x")
        served = [timed([str(python), "-c", "import gateway.config"], env, root) for _ in range(options.runs // 4 or 1)]
        bare = [timed(commands["python -c pass"], env, root) for _ in range(options.runs // 4 or 1)]
        print(f"{'import gateway.config':<16} {statistics.median(served) * 1000:6.1f} ms against python -c pass "
              f"{statistics.median(bare) * 1000:6.1f} ms (the first served import loads hermes-core's finder)")


if __name__ == "__main__":
    main()
