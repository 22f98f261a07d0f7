"""The install scan (issue 56) on the fixture plugins of tests/trust and, given `--wheels DIR`, on
real wheels (a folder of published Hermes plugins, such as the survey's download cache): how many
draw a finding that asks or blocks, and the scan's time per distribution (p50, p95).

    .venv/bin/python benchmarks/bench_trust_scan.py [--wheels DIR] [--guarddog]

`--guarddog` runs GuardDog (when installed) on each as well, at `plugins.guarddog: ask`.
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--wheels", type=Path, action="append", default=[])
    parser.add_argument("--guarddog", action="store_true")
    options = parser.parse_args()
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
