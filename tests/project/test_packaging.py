"""Real distributions: hermes-core and the example plugin pip-installed into a fresh venv."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.helpers import ROOT, make_venv, pip_install


@pytest.fixture(scope="module")
def venv_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    python = make_venv(tmp_path_factory.mktemp("venv") / "env")
    pip_install(python, ROOT, ROOT / "examples" / "hermes-textstats")
    return python


def run(python: Path, home: Path, *args: str, check: int = 0) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"HERMES_HOME": str(home)}
    result = subprocess.run([str(python.parent / "hermes"), *args], capture_output=True, text=True, env=env, timeout=120,
                            cwd=home.parent)
    assert result.returncode == check, (result.stdout, result.stderr)
    return result


def test_the_installed_packages_come_from_the_venv(venv_python: Path, tmp_path: Path) -> None:
    out = subprocess.run(
        [str(venv_python), "-c", "import hermes_core, hermes_plugins_builtin, hermes_textstats as t;"
         "print(hermes_core.__file__); print(t.__file__)"],
        capture_output=True, text=True, check=True, cwd=tmp_path,
    ).stdout.split()
    assert all(path.startswith(str(venv_python.parent.parent)) for path in out), out


def test_example_plugin_installs_enables_and_runs_through_the_cli(venv_python: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    rows = {r["id"]: r for r in json.loads(run(venv_python, home, "plugins", "list", "--json").stdout)}
    assert rows["textstats"]["source"] == "entrypoint" and rows["textstats"]["enabled"] is False
    assert rows["clock"]["source"] == "builtin" and rows["clock"]["enabled"] is True
    assert "text_stats" not in run(venv_python, home, "tools", "list").stdout  # opt-in
    run(venv_python, home, "plugins", "enable", "--yes", "textstats")
    result = run(venv_python, home, "tools", "call", "text_stats", '{"text": "a b a\\nc", "top": 1}')
    assert json.loads(result.stdout) == {"words": 4, "lines": 2, "characters": 7, "top_words": [["a", 2]]}
    assert run(venv_python, home, "command", "wc", "one two three").stdout.strip() == "3 words, 1 lines, 13 characters"
    doctor = json.loads(run(venv_python, home, "plugins", "doctor", "--json").stdout)
    textstats = next(p for p in doctor["plugins"] if p["id"] == "textstats")
    assert textstats["registered"] == {"tools": ["text_stats"], "hooks": ["post_tool_call"], "commands": ["toolstats", "wc"]}
    assert run(venv_python, home, "command", "toolstats").stdout.strip() == "text_stats 1"  # its hook counted the call


def test_example_plugin_settings_reach_ctx_config(venv_python: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.yaml").write_text("plugins:\n  enabled: [textstats]\n  entries:\n    textstats:\n      settings: {top: 0}\n")
    result = run(venv_python, home, "tools", "call", "text_stats", '{"text": "x y"}')
    assert json.loads(result.stdout)["top_words"] == []


def test_help_kept_for_start_up_is_rendered_again_when_hermes_core_changes(venv_python: Path, tmp_path: Path) -> None:
    """`hermes --help` prints the text click last rendered while nothing it shows has changed:
    an edit to the installed hermes-core's command line is such a change."""
    home = tmp_path / "home"
    hermes = str(venv_python.parent / "hermes")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"HERMES_HOME": str(home)}

    def through_click() -> bool:
        probe = subprocess.run([str(venv_python), "-X", "importtime", hermes, "--help"], capture_output=True,
                               text=True, env=env, timeout=120, cwd=tmp_path, check=True)
        return " click\n" in probe.stderr or probe.stderr.endswith(" click")

    assert through_click() and through_click() and not through_click()  # rendered, kept, printed at start-up
    assert "Discover, inspect, enable and check plugins." in run(venv_python, home, "--help").stdout
    source = Path(subprocess.run([str(venv_python), "-c", "import hermes_core.cli._plugins as m; print(m.__file__)"],
                                 capture_output=True, text=True, check=True, cwd=tmp_path).stdout.strip())
    original = source.read_text()
    try:  # (a different length: Python's bytecode cache trusts a source of the same size and second)
        source.write_text(original.replace("Discover, inspect, enable and check plugins.", "Find and check every plugin."))
        assert through_click()
        assert "Find and check every plugin." in run(venv_python, home, "--help").stdout
    finally:
        source.write_text(original)


INSTALLER = """
import sys

def main() -> None:
    try:  # the check a published plugin's installer makes: is this Hermes' environment?
        from gateway.config import Platform
        from hermes_cli.config import get_hermes_home
    except ImportError:
        sys.exit("Hermes Agent is not installed in this environment")
    print(f"installing into {get_hermes_home()} beside {Platform.TELEGRAM.value}")

if __name__ == "__main__":
    main()
"""


def test_hermes_names_answer_a_plain_interpreter_of_the_environment(venv_python: Path, tmp_path: Path) -> None:
    """An installer run as `python -m <pkg> install` imports Hermes' names with no host loaded."""
    project = tmp_path / "installer"
    (project / "hermes_fixture_installer").mkdir(parents=True)
    (project / "hermes_fixture_installer" / "__init__.py").write_text("")
    (project / "hermes_fixture_installer" / "__main__.py").write_text(INSTALLER)
    (project / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n'
        '[project]\nname = "hermes-fixture-installer"\nversion = "1.0"\n')
    pip_install(venv_python, project)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"HERMES_HOME": str(tmp_path / "home")}

    def python(*args: str, cwd: Path = tmp_path) -> str:
        result = subprocess.run([str(venv_python), *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=60)
        assert result.returncode == 0, result.stderr
        return result.stdout.strip()

    assert python("-m", "hermes_fixture_installer", "install") == f"installing into {tmp_path / 'home'} beside telegram"
    # Starting an interpreter imports no hermes-core code: only the one small finder.
    assert python("-c", "import sys; print(sorted(m for m in sys.modules if 'hermes' in m))") == \
        "['_hermes_core_names']"
    # A real module of that name always wins.
    (tmp_path / "own" / "gateway").mkdir(parents=True)
    (tmp_path / "own" / "gateway" / "__init__.py").write_text("")
    (tmp_path / "own" / "gateway" / "config.py").write_text("OWN = True\n")
    assert python("-c", "import gateway.config as c; print(c.OWN)", cwd=tmp_path / "own") == "True"
    assert python("-c", "import importlib.util as u; print(u.find_spec('hermes_cli.nothing'))") == "None"
