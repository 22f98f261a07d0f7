"""Shared fixtures: an isolated HERMES_HOME and a site directory for installed distributions."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]


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
