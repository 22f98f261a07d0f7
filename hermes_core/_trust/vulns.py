"""Known vulnerabilities in the resolved distributions, by `pip-audit --strict` (the `audit` extra)
against PyPI's advisory data or an OSV service (`plugins.vulnerability_service`), run as a program. It says "not checked" whenever it could not check
(pip-audit missing, the service unreachable, a distribution the service does not know): never
"no known vulnerabilities" for what was not looked at."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import attrs

from .findings import ASK, Finding

__all__ = ["Audited", "audit_versions", "parse_report"]


@attrs.frozen
class Audited:
    """`checked` (findings: one per known vulnerability) or `unchecked` (why in `detail`)."""

    status: str
    detail: str
    findings: tuple[Finding, ...] = ()


def parse_report(text: str, service: str = "pypi") -> Audited:
    """pip-audit's JSON report (`-f json`) as findings that ask, one per vulnerability; `unchecked`
    when any distribution was skipped (unknown to the service) or the report cannot be read."""
    try:
        report = json.loads(text)
        dependencies = report["dependencies"]
    except (ValueError, KeyError, TypeError):
        return Audited("unchecked", "known vulnerabilities not checked: pip-audit's report could not be read")
    skipped = [f"{d.get('name')} ({d['skip_reason']})" for d in dependencies if d.get("skip_reason")]
    if skipped:
        return Audited("unchecked", "known vulnerabilities not checked: pip-audit skipped " + "; ".join(skipped))
    findings = []
    for dep in dependencies:
        for vuln in dep.get("vulns", []):
            aliases = [a for a in vuln.get("aliases", []) if a != vuln.get("id")]
            fixed = ", ".join(vuln.get("fix_versions", [])) or "no fixed version yet"
            findings.append(Finding(ASK, "known-vulnerability", f"{dep['name']} {dep.get('version', '')}".strip(), 0,
                                    f"{vuln.get('id')}" + (f" ({', '.join(aliases)})" if aliases else "")
                                    + f": fixed in {fixed}", dep["name"]))
    count = len(dependencies)
    detail = (f"known vulnerabilities: {len(findings)} in {count} distribution(s) (pip-audit)" if findings
              else f"no known vulnerabilities in {count} distribution(s) (pip-audit, "
              + ("PyPI's advisory data)" if service == "pypi" else f"OSV at {service})"))
    return Audited("checked", detail, tuple(findings))


def audit_versions(pins: Sequence[tuple[str, str]], work: Path, *, service: str = "pypi",
                   timeout: float = 120) -> Audited:
    """`pip-audit --strict` over the distributions `pins` ((name, version) each, from an index), against
    `service`: `pypi` (PyPI's advisory data) or the URL of an OSV query API (`https://api.osv.dev/v1/query`)."""
    import importlib.util

    if not pins:
        return Audited("unchecked", "known vulnerabilities not checked: no distribution from an index")
    if importlib.util.find_spec("pip_audit") is None:
        return Audited("unchecked", "known vulnerabilities not checked: pip install 'hermes-core[audit]' (pip-audit)")
    requirements = work / "audit-requirements.txt"
    requirements.write_text("".join(f"{name}=={version}\n" for name, version in pins), encoding="utf-8")
    command = [sys.executable, "-m", "pip_audit", "--requirement", str(requirements), "--no-deps", "--disable-pip",
               "--strict", "--progress-spinner", "off", "--format", "json", "--aliases", "on",
               *(["--vulnerability-service", "osv", "--osv-url", service] if service != "pypi" else [])]
    try:
        result = subprocess.run(command, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=timeout)
    except subprocess.TimeoutExpired:
        return Audited("unchecked", f"known vulnerabilities not checked: pip-audit took over {timeout:.0f} s")
    if result.stdout.strip():  # a report: none found (exit 0) or some (exit 1)
        return parse_report(result.stdout, service)
    errors = [line.split(":", 2)[-1].strip() for line in result.stderr.splitlines() if line.startswith("ERROR:")]
    why = errors[-1] if errors else (result.stderr.strip().splitlines() or [f"exit {result.returncode}"])[-1]
    return Audited("unchecked", f"known vulnerabilities not checked: pip-audit could not ({why[:200]})")
