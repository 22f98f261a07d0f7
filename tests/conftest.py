"""Shared fixtures: an isolated HERMES_HOME and a site directory for installed distributions;
the `slow` marker and the `quick` hypothesis profile of `python3 dev.py test --quick`."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

pytest_plugins = ["pytester"]

# What `python3 dev.py test --quick` leaves out (`-m "not slow"`); the full run and CI keep them.
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


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark `slow` the tests of SLOW_MODULES, and those that run a pytest of their own (`pytester`:
    the contract suites' failure reports, each a hypothesis search in a subprocess)."""
    for item in items:
        if item.path.name in SLOW_MODULES or "pytester" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.slow)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh, empty HERMES_HOME; project plugins off; the cwd an empty project folder."""
    path = tmp_path / "home"
    path.mkdir()
    project = tmp_path / "project"
    project.mkdir()
    monkeypatch.setenv("HERMES_HOME", str(path))
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
