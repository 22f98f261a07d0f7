"""The install scan (issue 56) on the fixture plugins of tests/trust and, given `--wheels DIR`, on
real wheels (a folder of published Hermes plugins, such as the survey's download cache): how many
draw a finding that asks or blocks, and the scan's time per distribution (p50, p95).

    .venv/bin/python benchmarks/bench_trust_scan.py [--wheels DIR] [--guarddog] [--survey]

`--guarddog` runs GuardDog (when installed) on each as well, at `plugins.guarddog: ask`.
`--survey` downloads the published Hermes plugins of the survey set (SURVEY below, pinned; the
network is needed once, into a temporary folder that is deleted after) and runs
`hermes plugins scan --json` on each, one process per plugin: how many draw a finding that asks
(target: at most 2%) and the wall time of each scan, process start included (target: p95 <= 2 s).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from hermes_core._trust import guarddog  # noqa: E402
from hermes_core._trust.findings import verdict  # noqa: E402
from hermes_core._trust.scan import dist_name, scan_dist  # noqa: E402
from tests.trust.corpus import BENIGN, MALICIOUS  # noqa: E402
from tests.trust.wheels import write_wheel  # noqa: E402


def measure(label: str, wheels: list[Path], use_guarddog: bool) -> None:
    if not wheels:
        print(f"{label}: no wheels")
        return
    times, flagged = [], {}
    for wheel in wheels:
        start = time.process_time()  # CPU time: the machine is shared, wall time says more about the others
        findings = scan_dist(wheel, dist_name(wheel))
        times.append(time.process_time() - start)
        if use_guarddog:
            findings += guarddog.scan(wheel, dist_name(wheel), "ask")
        if verdict(findings) != "ok":
            flagged[wheel.name] = sorted({f"{f.level} {f.rule} {f.file}:{f.line}" for f in findings
                                          if f.level != "note"})
    times.sort()
    p95 = times[max(0, round(0.95 * len(times)) - 1)]
    print(f"{label}: {len(flagged)}/{len(wheels)} ask or block; our rules' CPU time p50 "
          f"{statistics.median(times) * 1000:.1f} ms, "
          f"p95 {p95 * 1000:.1f} ms, max {times[-1] * 1000:.1f} ms")
    for name, found in sorted(flagged.items()):
        print(f"  {name}: {'; '.join(found)}")


# The survey set of published Hermes plugins (docs/trust.md, BENCHMARKS.md), pinned as surveyed.
SURVEY = ("blackwall-hermes-plugin==0.1.0", "rtk-hermes==1.2.3", "acp-hermes==0.3.2", "noisegate-hermes==0.3.3",
          "hermes-plugin-guard==0.2.1", "hermes-loop-plugin==1.0.2", "hermes-plugin-telegram-reactions==1.0.0",
          "hermes-evolve==1.3.0", "hermes-delegate-routing==0.1.3", "hermes-local-memory==0.3.1",
          "hermes-brain-memory==0.1.0", "hermes-llmwiki==0.1.1", "tabularius==1.0.0", "hermes-memoryrouter==0.1.1",
          "sonzai-hermes==1.0.0", "lossless-hermes-py==0.1.6", "hermes-jev-compact==0.2.1",
          "hermes-yandex-search-api==0.1.6", "hermes-vk-community==1.1.4", "tokenlab-hermes-provider==0.1.0")


def survey() -> None:
    """`hermes plugins scan` on each published plugin of SURVEY, downloaded into a temporary folder."""
    import json
    import subprocess

    with tempfile.TemporaryDirectory(prefix="hermes-survey-scan-") as tmp:
        subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "-d", tmp, *SURVEY],
                       check=True)
        files = sorted(p for p in Path(tmp).iterdir() if p.name.endswith((".whl", ".tar.gz")))
        times, asking, timed = [], [], []
        for path in files:
            start = time.perf_counter()
            result = subprocess.run([sys.executable, "-c", "from hermes_core.cli import main; main()", "plugins",
                                     "scan", "--json", str(path)], capture_output=True, text=True)
            times.append(time.perf_counter() - start)
            timed.append((times[-1], path.name, path.stat().st_size))
            row = json.loads(result.stdout)[0]
            if row["verdict"] != "ok":
                asking.append(f"  {path.name}: {row['verdict']}: " + "; ".join(
                    f"{f['rule']} {f['file']}:{f['line']}" for f in row["findings"] if f["level"] != "note"))
        times.sort()
        p95 = times[max(0, round(0.95 * len(times)) - 1)]
        print(f"survey: {len(asking)}/{len(files)} published plugins ask or block "
              f"({100 * len(asking) / len(files):.0f}%); `hermes plugins scan` wall time p50 "
              f"{statistics.median(times):.2f} s, p95 {p95:.2f} s, max {times[-1]:.2f} s")
        print("\n".join(asking))
        print("slowest: " + ", ".join(f"{name} ({size // 1024} KB) {took:.2f} s" for took, name, size in
                                      sorted(timed, reverse=True)[:3]))
        measure("survey, our rules in process", files, False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--wheels", type=Path, action="append", default=[])
    parser.add_argument("--guarddog", action="store_true")
    parser.add_argument("--survey", action="store_true")
    options = parser.parse_args()
    if options.survey:
        survey()
        return
    with tempfile.TemporaryDirectory() as tmp:
        benign = [write_wheel(Path(tmp, "b"), n, f) for n, f in BENIGN.items()]
        malicious = [write_wheel(Path(tmp, "m"), n, f) for n, f in MALICIOUS.items()]
        measure("benign fixtures", benign, options.guarddog)
        measure("malicious fixtures", malicious, options.guarddog)
    for folder in options.wheels:
        found = sorted([*folder.glob("*.whl"), *folder.glob("*.tar.gz")])
        measure(f"{folder} ({len(found)} files)", found, options.guarddog)


if __name__ == "__main__":
    main()
