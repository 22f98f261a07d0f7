"""`python3 dev.py test --quick`: the slow groups left out, property tests on few examples; the
plain command keeps everything."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import ROOT

pytestmark = pytest.mark.skipif(
    Path(sys.prefix).resolve() != (ROOT / ".venv").resolve(),
    reason="dev.py works in the checkout's .venv; run the suite with `python3 dev.py test`",
)

PROPERTY_TEST = "tests/hermes/test_hermes_names.py::test_tool_error_is_a_bounded_json_error"  # @given, no max_examples


def dev_test(*args: str) -> str:
    result = subprocess.run([sys.executable, str(ROOT / "dev.py"), "test", *args], capture_output=True, text=True,
                            timeout=300, cwd=ROOT)
    assert result.returncode == 0, (result.stdout[-3000:], result.stderr[-3000:])
    return result.stdout


def passing(output: str) -> int:
    """How many examples passed, from hypothesis' statistics (`- 10 passing, 0 failing, ...`)."""
    (count,) = re.findall(r"- (\d+) passing, 0 failing", output)
    return int(count)


def collected(output: str) -> set[str]:
    return {line.split("::")[0] for line in output.splitlines() if "::" in line}


def test_quick_leaves_out_the_slow_groups_and_the_full_run_keeps_them() -> None:
    files = ["tests/project/test_packaging.py", "tests/core/test_typing.py", "tests/faults/test_faults.py",
             "tests/cli/test_cli.py", "tests/kit/test_engine_contract.py"]
    quick = dev_test("--quick", "--collect-only", "-q", "-p", "no:cacheprovider", *files)
    assert collected(quick) == {"tests/cli/test_cli.py", "tests/kit/test_engine_contract.py"}
    assert "test_the_contract_fails_an_engine_that_orphans_tool_results" not in quick  # runs a pytest of its own
    full = dev_test("--collect-only", "-q", "-p", "no:cacheprovider", *files)
    assert collected(full) == set(files) and "test_the_contract_fails_an_engine_that_orphans_tool_results" in full


def test_quick_spreads_the_tests_over_worker_processes() -> None:
    output = dev_test("--quick", "-p", "no:cacheprovider", "tests/kit/test_scripted_server.py")
    assert re.search(r"created: \d+/\d+ workers", output) and " passed" in output


def test_quick_runs_property_tests_on_ten_examples() -> None:
    args = ("-q", "-p", "no:cacheprovider", "--hypothesis-show-statistics", PROPERTY_TEST)
    assert passing(dev_test("--quick", *args)) == 10
    assert passing(dev_test(*args)) >= 50  # hypothesis' own profile: 100 unless the search space runs out


def test_the_whole_suite_leaves_the_fleet_browser_and_otel_groups_to_runs_of_their_own() -> None:
    whole = collected(dev_test("--collect-only", "-q", "-pno:cacheprovider"))  # no test named: the whole suite
    assert {"tests/cli/test_cli.py", "tests/dashboard/test_dashboard_http.py", "tests/telemetry/test_export.py"} <= whole
    assert not any(path.startswith(("tests/fleet/", "tests/browser/", "tests/otel/")) for path in whole)
    fleet = collected(dev_test("--fleet", "--collect-only", "-q", "-pno:cacheprovider"))
    assert "tests/fleet/test_floor.py" in fleet and all(path.startswith("tests/fleet/") for path in fleet)
    browser = collected(dev_test("--browser", "--collect-only", "-q", "-pno:cacheprovider"))
    assert browser == {"tests/browser/test_dashboard_browser.py"}
    otel = collected(dev_test("--otel", "--collect-only", "-q", "-pno:cacheprovider"))  # collecting installs nothing
    assert otel == {"tests/otel/test_phoenix.py"}
