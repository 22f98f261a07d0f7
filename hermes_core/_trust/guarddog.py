"""GuardDog (DataDog's scanner for malicious packages, extra `hermes-core[guarddog]`), run in a
process of its own on each requested distribution when it is installed: it sandboxes its own
process (no network, the scan path only), which must never be the host's.

Its findings are notes by default (`plugins.guarddog: note`): measured on 70 published Hermes
plugins, asking at its `suspicious` label or above would ask about 8 (11%), none malicious, most
for reading `~/.hermes/.env`, which is where Hermes keeps plugin secrets. `plugins.guarddog: ask`
makes its `suspicious` and `high_risk` labels ask; `off` does not run it.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from .findings import ASK, NOTE, Finding

__all__ = ["command", "scan"]

TIMEOUT = 120.0  # seconds for one distribution


def command() -> list[str] | None:
    """How to start GuardDog: its script beside this interpreter's, or on PATH; None when not installed."""
    beside = Path(sys.executable).with_name("guarddog")
    found = str(beside) if beside.exists() else shutil.which("guarddog")
    return [found] if found else None


def scan(path: Path, name: str, mode: str = "note") -> list[Finding]:
    """GuardDog's risks in the distribution file `path`, as findings (one note when it could not run)."""
    start = command()
    if start is None or mode == "off":
        return []
    try:
        result = subprocess.run([*start, "pypi", "scan", str(path), "--output-format", "json"], capture_output=True,
                                text=True, timeout=TIMEOUT, stdin=subprocess.DEVNULL)
        report = json.loads(result.stdout)
    except (OSError, subprocess.TimeoutExpired, ValueError) as exc:
        return [Finding(NOTE, "guarddog", path.name, 0, f"GuardDog did not run ({type(exc).__name__}): not scanned "
                                                        "by it", name)]
    label = (report.get("risk_score") or {}).get("label", "unknown")
    level = ASK if mode == "ask" and label in ("suspicious", "high_risk") else NOTE
    findings = []
    for risk in report.get("risks") or []:
        where = str(risk.get("threat_location") or path.name)
        file, _, line = where.rpartition(":")
        findings.append(Finding(level, f"guarddog:{risk.get('threat_rule', '?')}", file or where,
                                int(line) if line.isdigit() else 0,
                                f"{risk.get('threat_description', '')} (severity {risk.get('severity', '?')}; "
                                f"GuardDog labels the package {label})", name))
    return findings
