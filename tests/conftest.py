"""Shared fixtures: an isolated HERMES_HOME and a site directory for installed distributions;
the `slow` marker and the `quick` hypothesis profile of `python3 dev.py test --quick`; the
`fires` marker, which a test that fires hooks carries and which is checked.

`@pytest.mark.fires("pre_tool_call", ...)`: the test fires these hooks in this process. While it
runs, every lifecycle hook call the host makes is observed (at `HookRunner.call`, where every
hook call starts) and counts when it runs to a callback; a registration or CLI hook counts when
the test's plugin notes that its implementation was called (`fired_hooks.note(...)`). A named
hook that was not fired fails the test (tests/helpers/fires.py). `tests/core/test_hookspecs.py`
checks that every hook spec is named by some test's marker."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from hypothesis import settings

if TYPE_CHECKING:
    from tests.helpers.fires import FiredHooks

pytest_plugins = ["pytester"]

# What `python3 dev.py test --quick` leaves out (`-m "not slow"`), with the tests that run a pytest of
# their own and the few marked `slow` one by one (test_cli_operator's pip installs); the full run and CI
# keep them.
SLOW_MODULES = {
    "test_packaging.py": "builds and pip-installs real distributions into a new venv",
    "test_template.py": "renders, installs and tests a plugin project per kind",
    "test_lean_install.py": "builds venvs and installs the checkout as dev.py does",
    "test_main_job.py": "runs `python3 dev.py run` end to end, twice",
    "test_typing.py": "runs mypy --strict over hermes_core (a minute when its cache is cold)",
    "test_quick_run.py": "runs `python3 dev.py test` (a pytest of its own) four times",
    "test_faults.py": "runs the CLI with 52 misbehaving plugins, several waiting out time limits",
}

settings.register_profile("quick", max_examples=10, deadline=None)  # --hypothesis-profile=quick
# Tests assert no timing, hypothesis' 200 ms deadline per example included: on a loaded 2-core
# machine a property test that writes files can take longer, which is no failure of the code.
settings.register_profile("suite", deadline=None)
settings.load_profile("suite")  # --hypothesis-profile on the command line still wins


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark `slow` the tests of SLOW_MODULES, and those that run a pytest of their own (`pytester`:
    the contract suites' failure reports, each a hypothesis search in a subprocess); mark `fleet`
    those of tests/fleet (`python3 dev.py test --fleet`, after the whole suite), and `browser` those of
    tests/browser (`python3 dev.py test --browser`: Chromium driven by Playwright, after it too), and `otel`
    those of tests/otel (`python3 dev.py test --otel`: traces exported to Arize Phoenix, after it too)."""
    for item in items:
        if item.path.name in SLOW_MODULES or "pytester" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.slow)
        if item.path.parent.name == "fleet":
            item.add_marker(pytest.mark.fleet)
        if item.path.parent.name == "browser":
            item.add_marker(pytest.mark.browser)
        if item.path.parent.name == "otel":
            item.add_marker(pytest.mark.otel)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "fires(*hooks): the test fires these hooks in this process (checked)")


@pytest.fixture
def fired_hooks() -> FiredHooks:
    """The hooks fired during this test; a test's plugin notes its registration hooks' calls here."""
    from tests.helpers.fires import FiredHooks

    return FiredHooks()


@pytest.fixture(autouse=True)
def _hooks_fired(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """For a test marked `fires(...)`: the hooks it names were fired."""
    named = {hook for mark in request.node.iter_markers("fires") for hook in mark.args}
    if not named:
        yield
        return
    fired: FiredHooks = request.getfixturevalue("fired_hooks")
    fired.observe(monkeypatch)
    yield
    missing = fired.missing(named)
    if missing:
        pytest.fail(f"marked fires({', '.join(sorted(named))}) but never fired: {', '.join(missing)}")


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh, empty HERMES_HOME; project plugins off; the cwd an empty project folder."""
    path = tmp_path / "home"
    path.mkdir()
    project = tmp_path / "project"
    project.mkdir()
    monkeypatch.setenv("HERMES_HOME", str(path))
    unmanaged = tmp_path / "no-managed-scope"  # a machine's /etc/hermes stays out of the tests
    unmanaged.mkdir()
    monkeypatch.setenv("HERMES_MANAGED_DIR", str(unmanaged))
    monkeypatch.delenv("HERMES_ENABLE_PROJECT_PLUGINS", raising=False)
    monkeypatch.chdir(project)
    return path


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A directory on sys.path (and PYTHONPATH for subprocesses) to install distributions into."""
    path = tmp_path / "site"
    path.mkdir()
    monkeypatch.syspath_prepend(str(path))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(path), os.environ.get("PYTHONPATH")])))
    yield path
    for name, module in list(sys.modules.items()):
        if str(path) in str(getattr(module, "__file__", None) or ""):
            del sys.modules[name]
