"""Known vulnerabilities at install: `pip-audit --strict` over the distributions that came from an
index. Where the service cannot be reached it says "not checked", never "no known
vulnerabilities"; a report's vulnerabilities are findings that ask. pip-audit's JSON report is
read from a record in its format (`pip-audit -f json --aliases on`, tests/trust/pip-audit-report.json)."""

from __future__ import annotations

from pathlib import Path

from hermes_core._trust.vulns import parse_report
from tests.trust.conftest import Hermes, from_index
from tests.trust.index import Index
from tests.trust.wheels import write_wheel

REPORT = Path(__file__).parent / "pip-audit-report.json"


def test_each_known_vulnerability_in_a_report_is_a_finding_that_asks() -> None:
    audited = parse_report(REPORT.read_text())
    assert audited.status == "checked"
    assert audited.detail == "known vulnerabilities: 2 in 2 distribution(s) (pip-audit)"
    assert [f.text() for f in audited.findings] == [
        "ask    requests: requests 2.19.0  known-vulnerability: PYSEC-2018-28 (CVE-2018-18074, GHSA-x84v-xcm2-53pg): "
        "fixed in 2.20.0",
        "ask    requests: requests 2.19.0  known-vulnerability: PYSEC-2023-74 (CVE-2023-32681, GHSA-j8r2-6x86-q33q): "
        "fixed in 2.31.0"]


def test_a_clean_report_says_no_known_vulnerabilities_and_a_skipped_distribution_makes_it_not_checked() -> None:
    clean = parse_report('{"dependencies": [{"name": "idna", "version": "3.7", "vulns": []}], "fixes": []}')
    assert (clean.status, clean.detail) == (
        "checked", "no known vulnerabilities in 1 distribution(s) (pip-audit, PyPI's advisory data)")
    skipped = parse_report('{"dependencies": [{"name": "idna", "version": "3.7", "vulns": []}, {"name": "hermes-x", '
                           '"skip_reason": "Dependency not found on PyPI and could not be audited"}], "fixes": []}')
    assert (skipped.status, skipped.findings) == ("unchecked", ())
    assert skipped.detail == ("known vulnerabilities not checked: pip-audit skipped hermes-x (Dependency not found "
                              "on PyPI and could not be audited)")
    assert parse_report("not json").status == "unchecked"


def test_install_says_not_checked_when_no_vulnerability_service_is_reachable(
        home: Path, hermes_env: Hermes, index: Index, tmp_path: Path) -> None:
    index.add(write_wheel(tmp_path / "w", "hermes-dice", {"hermes_dice/__init__.py": "def register(ctx):\n    pass\n"}),
              "hermes-dice")
    result = hermes_env("plugins", "install", "--yes", "hermes-dice", **from_index(index))
    lines = result.stderr.splitlines()
    assert any(line.startswith("  known vulnerabilities not checked: pip-audit could not (") for line in lines), lines
    assert "no known vulnerabilities" not in result.stderr
    assert result.stdout.splitlines() == ["installed hermes-dice 1.0", "enabled dice"]


def test_a_local_file_is_not_checked_for_vulnerabilities_and_it_says_so(
        home: Path, hermes_env: Hermes, wheelhouse: Path) -> None:
    wheel = write_wheel(wheelhouse, "hermes-dice", {"hermes_dice/__init__.py": "def register(ctx):\n    pass\n"})
    result = hermes_env("plugins", "install", "--yes", str(wheel))
    assert "  known vulnerabilities not checked: no distribution from an index" in result.stderr.splitlines()
