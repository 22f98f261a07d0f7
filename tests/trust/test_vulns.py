"""Known vulnerabilities at install: `pip-audit --strict` over the distributions that came from an
index, against PyPI's advisory data or an OSV service (`plugins.vulnerability_service`). Where the
service cannot be reached it says "not checked", never "no known vulnerabilities"; each
vulnerability in pip-audit's report is a finding that asks. Offline: an index and an OSV service
on loopback (tests/trust/index.py), everything else behind a proxy that refuses."""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers import write_config
from tests.trust.conftest import Hermes, from_index
from tests.trust.index import Index
from tests.trust.wheels import write_wheel

ADVISORY = json.loads((Path(__file__).parent / "osv-advisory.json").read_text())
DICE = {"hermes_dice/__init__.py": "def register(ctx):\n    pass\n"}


def test_install_says_not_checked_when_no_vulnerability_service_is_reachable(
        home: Path, hermes_env: Hermes, index: Index, tmp_path: Path) -> None:
    index.add(write_wheel(tmp_path / "w", "hermes-dice", DICE), "hermes-dice")
    result = hermes_env("plugins", "install", "--yes", "hermes-dice", **from_index(index))
    lines = result.stderr.splitlines()
    assert any(line.startswith("  known vulnerabilities not checked: pip-audit could not (") for line in lines), lines
    assert "no known vulnerabilities" not in result.stderr
    assert result.stdout.splitlines() == ["installed hermes-dice 1.0", "enabled dice"]


def test_a_known_vulnerability_asks_and_a_version_without_one_says_so(
        home: Path, hermes_env: Hermes, index: Index, tmp_path: Path) -> None:
    write_config(home, f"plugins:\n  vulnerability_service: {index.osv_url}\n")
    index.add(write_wheel(tmp_path / "w", "hermes-dice", DICE), "hermes-dice")
    index.advisories["hermes-dice"] = [ADVISORY]
    refused = hermes_env("plugins", "install", "--yes", "hermes-dice", **from_index(index), check=1)
    lines = refused.stderr.splitlines()
    assert "  known vulnerabilities: 1 in 1 distribution(s) (pip-audit)" in lines
    assert ("  ask    hermes-dice: hermes-dice 1.0  known-vulnerability: CVE-2026-40112 (GHSA-hd1c-e7q2-9vx5): "
            "fixed in 1.1") in lines
    assert "plugins.install_policy is safe" in lines[-1]

    index.advisories.clear()  # the advisory data knows nothing of it
    clean = hermes_env("plugins", "install", "--yes", "hermes-dice", **from_index(index))
    assert (f"  no known vulnerabilities in 1 distribution(s) (pip-audit, OSV at {index.osv_url})"
            in clean.stderr.splitlines())


def test_a_local_file_is_not_checked_for_vulnerabilities_and_it_says_so(
        home: Path, hermes_env: Hermes, wheelhouse: Path) -> None:
    wheel = write_wheel(wheelhouse, "hermes-dice", DICE)
    result = hermes_env("plugins", "install", "--yes", str(wheel))
    assert "  known vulnerabilities not checked: no distribution from an index" in result.stderr.splitlines()


def test_audit_finds_a_vulnerability_published_after_the_install(
        home: Path, hermes_env: Hermes, index: Index, tmp_path: Path) -> None:
    write_config(home, f"plugins:\n  vulnerability_service: {index.osv_url}\n")
    index.add(write_wheel(tmp_path / "w", "hermes-dice", DICE), "hermes-dice")
    hermes_env("plugins", "install", "--yes", "hermes-dice", **from_index(index))
    assert hermes_env("plugins", "audit", **from_index(index)).stdout.splitlines()[:2] == [
        "ok hermes-dice 1.0", f"no known vulnerabilities in 1 distribution(s) (pip-audit, OSV at {index.osv_url})"]
    index.advisories["hermes-dice"] = [ADVISORY]  # published since
    lines = hermes_env("plugins", "audit", **from_index(index), check=1).stdout.splitlines()
    assert lines[:3] == ["FAIL hermes-dice 1.0",
                         "  ask    hermes-dice 1.0  known-vulnerability: CVE-2026-40112 (GHSA-hd1c-e7q2-9vx5): fixed in 1.1",
                         "known vulnerabilities: 1 in 1 distribution(s) (pip-audit)"]
