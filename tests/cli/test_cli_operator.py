"""Operator commands through the `hermes` CLI as a subprocess: tables that fit the terminal
(under a pseudo-terminal), the active engines in `plugins list`, shell completion, and
`plugins install` / `plugins remove` pip-installing a real distribution into a real venv."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import shutil
import struct
import subprocess
import sys
import tempfile
import termios
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import HERMES, ROOT, hermes, hermes_json, make_folder_plugin, make_venv, write_config

LONG = "A description far longer than any terminal is wide, " * 4


def under_pty(*args: str, columns: int = 80, env: dict[str, str] | None = None) -> str:
    """What `hermes ARGS` shows on a terminal `columns` wide (window size set, no COLUMNS)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    environ = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")} | (env or {})
    proc = subprocess.Popen([str(HERMES), *args], stdin=slave, stdout=slave, stderr=slave, env=environ)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    assert proc.wait(timeout=120) == 0
    return b"".join(chunks).decode().replace("\r\n", "\n")


def long_plugins(home: Path) -> None:
    for name in ("a-plugin-with-a-rather-long-id", "short"):
        make_folder_plugin(home / "plugins", name, "def register(ctx):\n    pass\n",
                           f"version: '1.0'\ndescription: {LONG}\n")
    write_config(home, "plugins:\n  enabled: [short]\n")


def test_plugins_list_fits_an_80_column_terminal_with_descriptions_cut(home: Path) -> None:
    long_plugins(home)
    lines = under_pty("plugins", "list", columns=80).splitlines()
    assert lines[0].split() == ["ID", "VERSION", "SOURCE", "KIND", "ENABLED", "DESCRIPTION"]
    assert max(len(line) for line in lines) <= 80, lines
    row = next(line for line in lines if line.startswith("a-plugin-with-a-rather-long-id "))
    assert row.endswith("A descript\u2026")  # the id whole, the description cut to its header


def test_tables_follow_the_terminal_width(home: Path) -> None:
    long_plugins(home)
    wide = under_pty("plugins", "list", columns=160).splitlines()
    assert max(len(line) for line in wide) <= 160 and max(len(line) for line in wide) > 100


def test_columns_sets_the_width_on_a_terminal_and_a_pipe_gets_whole_rows(home: Path) -> None:
    long_plugins(home)
    lines = under_pty("plugins", "list", columns=160, env={"COLUMNS": "70"}).splitlines()
    assert max(len(line) for line in lines) <= 70 and "\u2026" in lines[-1]
    env = os.environ | {"COLUMNS": "70"}
    piped = subprocess.run([str(HERMES), "plugins", "list"], capture_output=True, text=True, env=env, check=True)
    assert LONG.strip() in piped.stdout and "\u2026" not in piped.stdout


def test_tools_list_fits_the_terminal(home: Path) -> None:
    lines = under_pty("tools", "list", columns=60).splitlines()
    assert lines[0].split()[:2] == ["NAME", "TOOLSET"] and max(len(line) for line in lines) <= 60, lines


def test_plugins_list_marks_the_active_context_engine_and_memory_provider(home: Path) -> None:
    rows = {row["id"]: row for row in hermes_json("plugins", "list")}
    assert rows["context_engine/compressor"]["active"] == "context_engine"
    assert rows["context_engine/lcm"]["enabled"] is True and rows["context_engine/lcm"]["active"] is None
    assert rows["memory/builtin"]["active"] == "memory" and rows["clock"]["active"] is None

    write_config(home, "context:\n  engine: lcm\n")
    rows = {row["id"]: row for row in hermes_json("plugins", "list")}
    assert rows["context_engine/lcm"]["active"] == "context_engine"
    assert rows["context_engine/compressor"]["active"] is None
    table = {line.split()[0]: line.split() for line in hermes("plugins", "list").stdout.splitlines()}
    assert table["context_engine/lcm"][4] == "active" and table["context_engine/compressor"][4] == "yes"
    assert hermes_json("plugins", "info", "context_engine/lcm")["active"] == "context_engine"


def test_a_disabled_engine_is_not_marked_active(home: Path) -> None:
    write_config(home, "context:\n  engine: lcm\nplugins:\n  disabled: [context_engine/lcm]\n")
    rows = {row["id"]: row for row in hermes_json("plugins", "list")}
    assert rows["context_engine/lcm"]["active"] is None and rows["context_engine/lcm"]["enabled"] is False


# --- plugins install / remove: pip into the environment hermes runs in --------------------

DICE_CODE = """
import json

def register(ctx):
    ctx.register_tool("roll_die", "dice", {"name": "roll_die", "description": "Roll a die",
        "parameters": {"type": "object", "properties": {}}}, lambda args, **kw: json.dumps({"value": 4}))
"""


@pytest.fixture(scope="module")
def dice_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A wheel of `hermes-dice` 1.2, built here: one plugin `dice` (entry point) with the tool roll_die."""
    project = tmp_path_factory.mktemp("dice-project")
    (project / "hermes_dice").mkdir()
    (project / "hermes_dice" / "__init__.py").write_text(DICE_CODE, encoding="utf-8")
    (project / "setup.py").write_text(
        'from setuptools import setup\n'
        'setup(name="hermes-dice", version="1.2", description="Dice", packages=["hermes_dice"],\n'
        '      entry_points={"hermes_agent.plugins": ["dice = hermes_dice"]})\n', encoding="utf-8")
    out = tmp_path_factory.mktemp("wheels")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
                    "--disable-pip-version-check", "-w", str(out), str(project)], check=True, capture_output=True)
    return next(out.glob("hermes_dice-1.2-*.whl"))


def hermes_in(python: Path, *args: str, check: int | None = 0, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    """`hermes ARGS` run by `python` (another environment), hermes-core taken from this checkout."""
    env = os.environ | {"PYTHONPATH": str(ROOT)}
    result = subprocess.run([str(python), "-c", "from hermes_core.cli import main; main()", *args],
                            capture_output=True, text=True, env=env, timeout=300, **kwargs)
    if check is not None:
        assert result.returncode == check, (result.returncode, result.stdout, result.stderr)
    return result


def site_packages(python: Path) -> Path:
    return Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())


@pytest.mark.slow
def test_install_then_remove_a_plugin_distribution(home: Path, tmp_path: Path, dice_wheel: Path) -> None:
    python = make_venv(tmp_path / "env")
    result = hermes_in(python, "plugins", "install", "--yes", str(dice_wheel))
    assert result.stdout.splitlines() == ["installed hermes-dice 1.2", "enabled dice"], result
    assert list(site_packages(python).glob("hermes_dice-1.2.dist-info"))  # into the venv hermes runs in
    rows = {row["id"]: row for row in json.loads(hermes_in(python, "plugins", "list", "--json").stdout)}
    assert rows["dice"]["enabled"] is True and rows["dice"]["source"] == "entrypoint"
    assert json.loads(hermes_in(python, "tools", "call", "roll_die").stdout) == {"value": 4}

    again = hermes_in(python, "plugins", "install", "--yes", str(dice_wheel))
    assert again.stdout.splitlines() == ["installed hermes-dice 1.2", "dice was already enabled"]

    removed = hermes_in(python, "plugins", "remove", "hermes-dice")
    assert removed.stdout.splitlines() == ["removed hermes-dice 1.2", "disabled dice"], removed
    assert not list(site_packages(python).glob("hermes_dice*"))
    assert "dice" not in {row["id"] for row in json.loads(hermes_in(python, "plugins", "list", "--json").stdout)}
    assert "dice" not in (home / "config.yaml").read_text()


@pytest.mark.slow
def test_install_isolated_makes_an_environment_of_its_own_and_runs_the_plugin_there(home: Path,
                                                                                     dice_wheel: Path) -> None:
    result = hermes("plugins", "install", "--yes", "--isolated", str(dice_wheel))
    env = home / "venvs" / "hermes-dice"
    assert result.stdout.splitlines() == [f"installed hermes-dice in {env}", "enabled dice",
                                          f"dice runs in a process of its own on {env / 'bin' / 'python'}"], result
    assert list(site_packages(env / "bin" / "python").glob("hermes_dice-1.2.dist-info"))
    assert subprocess.run([sys.executable, "-c", "import hermes_dice"], capture_output=True).returncode == 1
    (row,) = [row for row in hermes_json("plugins", "list") if row["id"] == "dice"]
    assert row["enabled"] is True and row["isolated"] is True
    assert json.loads(hermes("tools", "call", "roll_die").stdout) == {"value": 4}  # in its own process
    assert "in a process of their own: dice" in hermes("plugins", "doctor").stdout
    removed = hermes("plugins", "remove", "hermes-dice")
    assert removed.stdout.splitlines() == [f"removed hermes-dice 1.2 and its environment {env}", "disabled dice"]
    assert not env.exists() and "dice" not in {row["id"] for row in hermes_json("plugins", "list")}
    assert "python:" not in (home / "config.yaml").read_text()


@pytest.mark.slow
def test_remove_takes_a_plugin_id_too(home: Path, tmp_path: Path, dice_wheel: Path) -> None:
    python = make_venv(tmp_path / "env")
    hermes_in(python, "plugins", "install", "--yes", str(dice_wheel))
    assert hermes_in(python, "plugins", "remove", "dice").stdout.splitlines() == ["removed hermes-dice 1.2",
                                                                                  "disabled dice"]


@pytest.mark.slow
def test_a_pip_failure_is_one_line_after_pips_own_output(home: Path, tmp_path: Path) -> None:
    python = make_venv(tmp_path / "env")
    result = hermes_in(python, "plugins", "install", "--yes", str(tmp_path / "no-such-plugin.whl"), check=1)
    lines = result.stderr.splitlines()
    assert result.stdout == "" and any(line.startswith("ERROR:") for line in lines[:-1]), result.stderr
    assert lines[-1].startswith("hermes: error: pip could not resolve") and "pip's output is above" in lines[-1]


def test_remove_refuses_what_is_not_installed_and_hermes_core_itself(home: Path) -> None:
    result = hermes("plugins", "remove", "hermes-no-such-dist", check=1)
    assert result.stderr.startswith("hermes: error: nothing named 'hermes-no-such-dist' is installed")
    assert result.stderr.count("\n") == 1
    assert "hermes-core is hermes itself" in hermes("plugins", "remove", "hermes-core", check=1).stderr


def test_install_refuses_user_inside_a_virtual_environment(home: Path) -> None:
    result = hermes("plugins", "install", "--user", "hermes-anything", check=1)
    assert result.stderr == ("hermes: error: --user does not apply inside a virtual environment "
                             f"({sys.prefix}): run the command without --user\n")


@pytest.mark.skipif(not Path(f"/usr/lib/python3.{sys.version_info[1]}/EXTERNALLY-MANAGED").exists()
                    or not Path(f"/usr/bin/python3.{sys.version_info[1]}").exists(),
                    reason="needs a system Python of this version marked EXTERNALLY-MANAGED")
def test_install_refuses_a_system_managed_python_before_running_pip(home: Path, tmp_path: Path) -> None:
    python = Path(f"/usr/bin/python3.{sys.version_info[1]}")
    env = os.environ | {"PYTHONPATH": os.pathsep.join([str(ROOT), str(site_packages(Path(sys.executable)))]),
                        "PIP_NO_INDEX": "1"}
    result = subprocess.run([str(python), "-c", "from hermes_core.cli import main; main()",
                             "plugins", "install", "hermes-anything"], capture_output=True, text=True, env=env)
    assert result.returncode == 1 and result.stderr.count("\n") == 1, result.stderr
    assert "is managed by the system (EXTERNALLY-MANAGED)" in result.stderr and "python3 -m venv" in result.stderr
    assert "ERROR:" not in result.stderr  # refused before pip ran


@pytest.mark.slow
def test_install_refuses_an_environment_it_cannot_write(home: Path, dice_wheel: Path) -> None:
    """A venv owned by someone else: run as `nobody` when the tests run as root, else a read-only venv."""
    base = Path(tempfile.mkdtemp(prefix="hermes-ro-"))
    try:
        base.chmod(0o755)
        python = make_venv(base / "env")
        purelib = site_packages(python)
        kwargs: dict[str, Any] = {}
        if os.geteuid() == 0:
            kwargs = {"user": 65534, "group": 65534}
            wheel = base / dice_wheel.name
            shutil.copy(dice_wheel, wheel)
            wheel.chmod(0o644)
        else:
            purelib.chmod(0o555)
            wheel = dice_wheel
        result = hermes_in(python, "plugins", "install", "--yes", str(wheel), check=1, cwd=base, **kwargs)
        assert result.stderr.startswith(f"hermes: error: cannot install into {purelib}: the environment hermes "
                                        "runs in") and "python3 -m venv" in result.stderr, result.stderr
        assert result.stderr.count("\n") == 1 and not list(purelib.glob("hermes_dice*"))
    finally:
        purelib.chmod(0o755)
        shutil.rmtree(base)


# --- shell completion (click's, through `_HERMES_COMPLETE`) --------------------------------

def complete(*words: str) -> list[str]:
    """What bash completion offers for the last of `words` (`hermes` first), as bash asks for it."""
    env = os.environ | {"_HERMES_COMPLETE": "bash_complete", "COMP_WORDS": " ".join(words),
                        "COMP_CWORD": str(len(words) - 1)}
    result = subprocess.run([str(HERMES)], capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 0 and result.stderr == "", result
    return [line.partition(",")[2] for line in result.stdout.splitlines()]


def test_completion_offers_plugin_ids(home: Path) -> None:
    long_plugins(home)
    assert complete("hermes", "plugins", "enable", "context") == ["context_engine/compressor", "context_engine/lcm"]
    assert "a-plugin-with-a-rather-long-id" in complete("hermes", "plugins", "info", "")
    assert complete("hermes", "plugins", "disable", "sho") == ["short"]
    assert complete("hermes", "plugins", "remove", "sho") == ["short"]


def test_completion_offers_tool_names_of_enabled_plugins_quietly(home: Path) -> None:
    make_folder_plugin(home / "plugins", "noisy", """
        import json
        print("noisy plugin loading")
        def register(ctx):
            ctx.register_tool("noisy_tool", "noisy", {"name": "noisy_tool", "description": "x",
                "parameters": {"type": "object", "properties": {}}}, lambda args, **kw: json.dumps({}))
    """, "version: '1.0'\n")
    make_folder_plugin(home / "plugins", "broken", "raise ImportError('missing native lib')\n", "version: '1.0'\n")
    write_config(home, "plugins:\n  enabled: [noisy, broken]\n")
    assert complete("hermes", "tools", "call", "noisy") == ["noisy_tool"]  # stderr empty: checked in complete()
    assert {"current_time", "memory_save", "noisy_tool"} <= set(complete("hermes", "tools", "call", ""))


def test_completion_scripts_for_bash_zsh_and_fish(home: Path) -> None:
    for shell in ("bash", "zsh", "fish"):
        env = os.environ | {"_HERMES_COMPLETE": f"{shell}_source"}
        script = subprocess.run([str(HERMES)], capture_output=True, text=True, env=env, check=True).stdout
        assert "_HERMES_COMPLETE" in script and f"{shell}_complete" in script
