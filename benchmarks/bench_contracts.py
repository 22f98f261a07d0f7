"""How long a contract suite takes per plugin: the built-in engines and provider, and the
engine and memory provider the template renders, each as its own `pytest` process (what a
plugin author waits for), with the default profile and the thorough one.

    .venv/bin/python benchmarks/bench_contracts.py [--runs 3] [--thorough]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BUILTIN = [
    ("compressor (built-in engine)", ROOT, "tests/kit/test_engine_contract.py::TestCompressorPassesTheContract"),
    ("lcm (built-in engine)", ROOT, "tests/kit/test_engine_contract.py::TestLcmPassesTheContract"),
    ("builtin (built-in memory provider)", ROOT, "tests/kit/test_memory_contract.py::TestBuiltinProviderPassesTheContract"),
]


def rendered(folder: Path) -> list[tuple[str, Path, str]]:
    """The template's engine and memory provider, rendered with `hermes plugins new`."""
    hermes = Path(sys.executable).parent / "hermes"
    targets = []
    for kind in ("context_engine", "memory_provider"):
        subprocess.run([str(hermes), "plugins", "new", f"Bench {kind}", "--kind", kind, "--output-dir", str(folder)],
                       check=True, capture_output=True)
        project = folder / f"bench-{kind.replace('_', '-')}"
        test_file = next((project / "tests").glob("test_*.py"))
        targets.append((f"template {kind}", project, f"tests/{test_file.name}::TestTheContract"))
    return targets


def timed(cwd: Path, nodeid: str, extra: list[str]) -> float:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(cwd), os.environ.get("PYTHONPATH", "")]))
    started = time.perf_counter()
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", nodeid, *extra],
                            cwd=cwd, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    if result.returncode != 0:
        raise SystemExit(f"{nodeid} failed:\n{result.stdout[-2000:]}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--thorough", action="store_true", help="also time --hypothesis-profile=hermes-contract-thorough")
    options = parser.parse_args()
    profiles = [("default (hermes-contract)", [])]
    if options.thorough:
        profiles.append(("thorough", ["--hypothesis-profile=hermes-contract-thorough"]))
    with tempfile.TemporaryDirectory() as tmp:
        targets = BUILTIN + rendered(Path(tmp))
        print(f"wall time of `pytest <contract class>`, median of {options.runs} runs (pytest start-up included)")
        for label, extra in profiles:
            print(f"profile {label}")
            for name, cwd, nodeid in targets:
                runs = [timed(cwd, nodeid, extra) for _ in range(options.runs if not extra else 1)]
                print(f"  {name:38} {statistics.median(runs):6.1f} s   (min {min(runs):.1f}, max {max(runs):.1f})")


if __name__ == "__main__":
    main()
