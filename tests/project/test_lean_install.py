"""A lean install: hermes-core needs no template renderer to run, says in one line how to get
it for `plugins new`, ships its licence, and builds without setuptools warnings of its own."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

import dev
from tests.helpers import ROOT, make_venv, one_build_at_a_time, pip_install


def _outer_site_without(names: tuple[str, ...], where: Path) -> Path:
    """The running environment's site-packages as a folder of links, less the distributions
    (and their import packages) whose names start with one of `names`."""
    where.mkdir()
    for entry in Path(sysconfig.get_paths()["purelib"]).iterdir():
        if not entry.name.lower().replace("-", "_").startswith(names) and entry.suffix != ".pth":
            (where / entry.name).symlink_to(entry)
    return where


@pytest.fixture(scope="module")
def lean_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A venv holding hermes-core built from this checkout, whose other packages are the running
    environment's, less cookiecutter (and less hermes-core's own editable install)."""
    root = tmp_path_factory.mktemp("lean")
    python = make_venv(root / "env")
    outer = _outer_site_without(("cookiecutter", "hermes", "__editable__"), root / "outer")
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    Path(purelib, "_outer_site.pth").write_text(f"{outer}\n")
    pip_install(python, ROOT)
    return python


def in_venv(python: Path, *args: str, cwd: Path, check: int = 0) -> subprocess.CompletedProcess[str]:
    """Run `args` (the venv's python when the first is a flag or `-c`, else its console script)."""
    command = [str(python), *args] if args[0].startswith("-") else [str(python.parent / args[0]), *args[1:]]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"HERMES_HOME": str(cwd / "home")}
    result = subprocess.run(command, capture_output=True, text=True, env=env, timeout=120, cwd=cwd)
    assert result.returncode == check, (result.stdout, result.stderr)
    return result


def test_cookiecutter_is_needed_only_by_the_new_extra(lean_python: Path, tmp_path: Path) -> None:
    code = "import json, importlib.metadata as m; print(json.dumps(m.requires('hermes-core')))"
    requires = json.loads(in_venv(lean_python, "-c", code, cwd=tmp_path).stdout)
    plain = [r for r in requires if "extra ==" not in r]
    assert plain and not [r for r in plain if r.startswith("cookiecutter")], plain
    assert [r for r in requires if r.startswith("cookiecutter") and 'extra == "new"' in r], requires
    assert [r for r in requires if r.startswith("cookiecutter") and 'extra == "test"' in r], requires
    in_venv(lean_python, "-c", "import cookiecutter", cwd=tmp_path, check=1)  # really not there


def test_plugins_new_without_cookiecutter_says_how_to_install_it(lean_python: Path, tmp_path: Path) -> None:
    result = in_venv(lean_python, "hermes", "plugins", "new", "Word Tools", "--kind", "tool",
                     "--output-dir", str(tmp_path), cwd=tmp_path, check=1)
    assert result.stdout == "" and result.stderr.count("\n") == 1, result.stderr
    assert "pip install 'hermes-core[new]'" in result.stderr and "cookiecutter" in result.stderr
    assert not (tmp_path / "word-tools").exists()


def test_everything_else_runs_without_cookiecutter(lean_python: Path, tmp_path: Path) -> None:
    rows = json.loads(in_venv(lean_python, "hermes", "plugins", "list", "--json", cwd=tmp_path).stdout)
    assert "clock" in {row["id"] for row in rows}
    assert "current_time" in in_venv(lean_python, "hermes", "tools", "list", cwd=tmp_path).stdout


def test_the_distribution_ships_its_mit_licence_and_the_template_hooks(lean_python: Path, tmp_path: Path) -> None:
    code = ("import json, importlib.metadata as m; d = m.distribution('hermes-core');"
            "print(json.dumps({'license': d.metadata['License-Expression'],"
            " 'files': [str(f) for f in d.files], 'text': [f.read_text() for f in d.files"
            " if f.name == 'LICENSE'][0]}))")
    found = json.loads(in_venv(lean_python, "-c", code, cwd=tmp_path).stdout)
    assert found["license"] == "MIT"
    assert found["text"].startswith("MIT License") and found["text"] == (ROOT / "LICENSE").read_text()
    assert "hermes_core_template/hooks/pre_gen_project.py" in found["files"]


def test_installing_the_checkout_as_dev_py_does_prints_no_setuptools_warning(tmp_path: Path) -> None:
    python = make_venv(tmp_path / "env")
    with one_build_at_a_time():
        result = subprocess.run(
            [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--no-build-isolation",
             "--disable-pip-version-check", "--quiet", *dev.INSTALL],
            capture_output=True, text=True, env=dev.PIP_ENV,
            timeout=600, cwd=tmp_path,
        )
    assert result.returncode == 0, result.stderr
    output = result.stdout + result.stderr
    assert "warning" not in output.lower(), output
