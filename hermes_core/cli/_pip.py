"""pip, run for `hermes plugins install|remove` in the environment hermes itself runs in.

Whether that environment can be changed is checked before pip runs, so that the refusal says
what to do (a virtual environment, or `--user`) rather than ending in pip's permission error.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import click

from .._errors import HermesError

__all__ = ["PipError", "target_problem", "pip_install", "pip_uninstall", "canonical", "installed"]

_VENV_HINT = ("run hermes from a virtual environment you own "
              "(python3 -m venv ~/.hermes-venv && ~/.hermes-venv/bin/pip install hermes-core)")


class PipError(HermesError):
    """pip failed; its own output has been written to stderr."""


def canonical(name: str) -> str:
    """A distribution name as pip compares them (`Hermes_Foo` == `hermes-foo`)."""
    import re

    return re.sub(r"[-_.]+", "-", name).lower()


def _writable(path: Path) -> bool:
    while not path.exists() and path.parent != path:
        path = path.parent
    return os.access(path, os.W_OK)


def target_problem(user: bool) -> str | None:
    """Why pip cannot install into the environment of `sys.executable`, and what to do; None when it can."""
    import site
    import sysconfig

    in_venv = sys.prefix != sys.base_prefix
    if user:
        if in_venv:
            return f"--user does not apply inside a virtual environment ({sys.prefix}): run the command without --user"
        if not site.ENABLE_USER_SITE:
            return f"user site-packages are turned off for {sys.executable}: {_VENV_HINT}"
        return None if _writable(Path(site.getusersitepackages())) else (
            f"cannot install into {site.getusersitepackages()}: it is not writable by you; {_VENV_HINT}")
    if not in_venv and Path(sysconfig.get_path("stdlib"), "EXTERNALLY-MANAGED").exists():
        return (f"the Python hermes runs in ({sys.executable}) is managed by the system (EXTERNALLY-MANAGED), "
                f"so pip will not install into it: {_VENV_HINT}, or install hermes-core with pipx")
    for key in ("purelib", "scripts"):
        path = Path(sysconfig.get_paths()[key])
        if not _writable(path):
            return (f"cannot install into {path}: the environment hermes runs in ({sys.prefix}) is not writable "
                    f"by you; {_VENV_HINT}" + ("" if in_venv else ", or add --user"))
    return None


def _check_pip() -> None:
    import importlib.util

    if importlib.util.find_spec("pip") is None:
        raise PipError(f"pip is not available to {sys.executable}; install it with "
                       f"`{sys.executable} -m ensurepip` and try again")


def _run(args: list[str], what: str) -> None:
    _check_pip()
    command = [sys.executable, "-m", "pip", *args, "--disable-pip-version-check"]
    result = subprocess.run(command, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    if result.returncode != 0:
        click.echo((result.stdout + result.stderr).rstrip(), err=True)
        errors = [line for line in result.stderr.splitlines() if line.startswith("ERROR:")]
        why = f": {errors[0].removeprefix('ERROR:').strip()}" if errors else ""
        raise PipError(f"pip could not {what} (exit {result.returncode}){why}; pip's output is above")


def isolated_environment(home: Path, name: str) -> Path:
    """The environment of `hermes plugins install --isolated` for `name`: `$HERMES_HOME/venvs/<name>`,
    created when missing; its interpreter. What is installed there comes first on its path; hermes-core
    and hermes' own packages come after, so a plugin's dependencies in other versions shadow them there
    and nowhere else."""
    import sysconfig
    import venv

    folder = home / "venvs" / canonical(name)
    python = folder / "bin" / "python"
    if not python.exists():
        venv.create(folder, with_pip=False, symlinks=True)
        site = next((folder / "lib").glob("python3*/site-packages"))
        paths = dict.fromkeys([str(Path(__file__).resolve().parents[2]),  # where hermes_core is
                               sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]])
        (site / "_hermes_host.pth").write_text("".join(f"{path}\n" for path in paths), encoding="utf-8")
    return python


def pip_install(targets: tuple[str, ...], *, user: bool = False, upgrade: bool = False,
                python: Path | None = None) -> list[str]:
    """Install `targets` (anything pip accepts; into the environment of `python` when given) and
    return the names of the distributions asked for: from pip's report, or from the requirement
    itself when it was already installed."""
    import json
    import tempfile

    with tempfile.TemporaryDirectory(prefix="hermes-pip-") as folder:
        report = Path(folder, "report.json")
        args = [*(["--python", str(python)] if python is not None else []), "install", "--quiet", "--report",
                str(report), *(["--user"] if user else []),
                *(["--upgrade"] if upgrade else []), *targets]
        _run(args, f"install {' '.join(targets)}")
        data = json.loads(report.read_text(encoding="utf-8")) if report.exists() else {}
    import importlib

    importlib.invalidate_caches()  # discovery, next, must see what pip just wrote
    names = [item["metadata"]["name"] for item in data.get("install", []) if item.get("requested")]
    for target in targets:
        name = _requirement_name(target)
        if name is not None and canonical(name) not in map(canonical, names):
            names.append(name)
    return names


def _requirement_name(target: str) -> str | None:
    """The distribution name of a requirement such as `hermes-foo>=1.0` or of a wheel file;
    None for other paths and URLs."""
    from packaging.requirements import InvalidRequirement, Requirement

    if target.endswith(".whl"):
        return Path(target).name.split("-")[0]
    if os.sep in target or target.startswith(".") or Path(target).exists():
        return None
    try:
        return Requirement(target).name
    except InvalidRequirement:
        return None


def pip_uninstall(names: list[str]) -> None:
    _run(["uninstall", "--yes", "--quiet", *names], f"remove {' '.join(names)}")


def installed(name: str) -> tuple[str, str] | None:
    """The installed distribution `name` as (its own spelling of its name, version), or None."""
    import importlib
    from importlib import metadata

    importlib.invalidate_caches()
    try:
        dist = metadata.distribution(name)
    except metadata.PackageNotFoundError:
        return None
    return dist.metadata["Name"] or name, dist.version
