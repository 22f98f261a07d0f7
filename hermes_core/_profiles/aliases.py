"""A profile's command alias, as Hermes makes it: a small shell script `~/.local/bin/<alias>` that
runs `hermes -p <profile> "$@"`, so that `coder chat` is `hermes -p coder chat`. hermes-core
writes one only when asked (`hermes profile create NAME --alias`, `hermes profile alias NAME`):
nothing outside the home is touched otherwise. A file there that is not such a script is never
overwritten or removed.

>>> make("coder", "coder", commands={"chat", "run"})     # doctest: +SKIP
PosixPath('/home/ada/.local/bin/coder')
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from collections.abc import Collection
from pathlib import Path

from .._errors import ProfileError
from .._files import write_atomic
from .names import RESERVED, check_name

__all__ = ["alias_dir", "aliases", "make", "remove", "remove_for", "retarget"]

_MARK = "# hermes profile alias\n"
_HEAD = 4096  # what is read of a file in the folder to know whether it is an alias (binaries live there too)


def alias_dir() -> Path:
    """`~/.local/bin`, where the aliases are."""
    return Path.home() / ".local" / "bin"


def _hermes() -> str:
    """The `hermes` this command runs as (the script's own path), else the one on PATH."""
    own = os.path.abspath(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    if os.path.basename(own).startswith("hermes") and os.path.isfile(own):
        return own
    return shutil.which("hermes") or "hermes"


def _target(path: Path) -> str | None:
    """The profile the alias at `path` runs (None: not an alias hermes wrote)."""
    try:
        with open(path, "rb") as file:
            head = file.read(_HEAD).decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    if _MARK not in head:
        return None
    words = head.rpartition(" -p ")[2].split()
    return words[0] if words else None


def aliases() -> dict[str, str]:
    """Every alias hermes wrote: its name, and the profile it runs."""
    folder = alias_dir()
    if not folder.is_dir():
        return {}
    found = {}
    for entry in sorted(folder.iterdir()):
        target = _target(entry) if entry.is_file() else None
        if target is not None:
            found[entry.name] = target
    return found


def make(alias: str, profile: str, *, commands: Collection[str]) -> Path:
    """Write alias `alias` running profile `profile` (`commands`: hermes' own, which it may not be
    named after); refused when another command of that name is on PATH or in the folder."""
    try:
        check_name(alias, new=True)
    except ProfileError as exc:
        raise ProfileError(f"cannot name an alias {alias!r}: {str(exc).partition(': ')[2]}") from None
    if alias in commands or alias in RESERVED:
        raise ProfileError(f"cannot name an alias {alias!r}: it is a hermes command; choose another with --name")
    path = alias_dir() / alias
    on_path = shutil.which(alias)
    if (path.exists() and _target(path) is None) or (on_path and Path(on_path) != path):
        raise ProfileError(f"cannot make alias {alias!r}: {on_path or path} is another command of that name; "
                           "choose another with --name")
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, f"#!/bin/sh\n{_MARK}exec {shlex.quote(_hermes())} -p {profile} \"$@\"\n", mode=0o755)
    return path


def remove(alias: str) -> str:
    """Remove alias `alias`; the profile it ran. Refused for a file hermes did not write."""
    path = alias_dir() / check_name(alias)
    target = _target(path) if path.is_file() else None
    if target is None:
        raise ProfileError(f"there is no alias {alias!r} in {alias_dir()} (`hermes profile list` shows each "
                           "profile's)")
    path.unlink()
    return target


def remove_for(profile: str) -> list[str]:
    """Remove every alias that runs `profile` (it was deleted); their names."""
    gone = [alias for alias, target in aliases().items() if target == profile]
    for alias in gone:
        (alias_dir() / alias).unlink(missing_ok=True)
    return gone


def retarget(old: str, new: str) -> list[str]:
    """Point every alias of profile `old` at `new` (it was renamed); their names."""
    moved = [alias for alias, target in aliases().items() if target == old]
    for alias in moved:
        write_atomic(alias_dir() / alias, f"#!/bin/sh\n{_MARK}exec {shlex.quote(_hermes())} -p {new} \"$@\"\n",
                     mode=0o755)
    return moved
