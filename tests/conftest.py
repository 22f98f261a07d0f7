"""Shared fixtures: an isolated HERMES_HOME and a site directory for installed distributions;
the `slow` marker and the `quick` hypothesis profile of `python3 dev.py test --quick`; the
`fires` marker, which a test that fires lifecycle hooks carries and which is checked.

`@pytest.mark.fires("pre_tool_call", ...)`: the test fires these hooks in this process, to a
callback a plugin registered. While it runs, every hook call the host makes is observed (at
`HookRunner.call`, the one way every hook call goes); a named hook that was not fired to a
callback fails the test. `tests/core/test_hookspecs.py` checks that every lifecycle hook is
named by some test's marker."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

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


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "fires(*hooks): the test fires these lifecycle hooks in-process (checked)")


@pytest.fixture(autouse=True)
def _hooks_fired(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """For a test marked `fires(...)`: the hooks it names were fired, each to at least one callback."""
    named = {hook for mark in request.node.iter_markers("fires") for hook in mark.args}
    if not named:
        yield
        return
    from hermes_core import HookRunner

    fired: set[str] = set()
    call = HookRunner.call

    def observed(self: HookRunner, hook: str, chain: Any) -> Any:
        if self.has(hook):
            fired.add(hook)
        return call(self, hook, chain)

    monkeypatch.setattr(HookRunner, "call", observed)
    yield
    missing = sorted(named - fired)
    if missing:
        pytest.fail(f"marked fires({', '.join(sorted(named))}) but never fired to a callback: {', '.join(missing)}")


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
