"""Profile names and where each profile lives: Hermes' rule, `[a-z0-9][a-z0-9_-]{0,63}`, with
`hermes default test tmp root sudo` reserved for new profiles (`default` always means the root)."""

from __future__ import annotations

import re
from pathlib import Path

from .._errors import ProfileError

__all__ = ["DEFAULT", "RESERVED", "active_file", "check_name", "native_root", "profile_home", "profile_of",
           "profiles_dir", "root_of"]

DEFAULT = "default"
RESERVED = frozenset({"hermes", DEFAULT, "test", "tmp", "root", "sudo"})
_NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")
_RULE = "lowercase letters, digits, '-' and '_', starting with a letter or digit, at most 64"


def check_name(name: str, *, new: bool = False) -> str:
    """`name` when it is a profile's name (`new`: one that may be created, so not a reserved one)."""
    if not _NAME.fullmatch(name):
        raise ProfileError(f"{name!r} is not a profile name: use {_RULE}")
    if new and name in RESERVED:
        raise ProfileError(f"{name!r} is a reserved name ({', '.join(sorted(RESERVED))}); choose another")
    return name


def native_root() -> Path:
    """`~/.hermes`: the root when `HERMES_HOME` is unset."""
    return Path.home() / ".hermes"


def root_of(home: Path) -> Path:
    """The root of the profiles `home` belongs to, as Hermes finds it: `~/.hermes` for a home
    under it, `<root>` for `<root>/profiles/<name>`, else the home itself (a deployment's root)."""
    try:
        home.resolve().relative_to(native_root().resolve())
        return native_root()
    except (ValueError, OSError):
        pass
    return home.parent.parent if home.parent.name == "profiles" else home


def profile_of(home: Path) -> str:
    """Which profile `home` is: "default" for the root, the name for `<root>/profiles/<name>`, and
    "custom" for anything else (a folder under `~/.hermes` that is neither), as `ctx.profile_name`."""
    try:
        root = root_of(home).resolve()
        resolved = home.resolve()
        if resolved == root:
            return DEFAULT
        parts = resolved.relative_to(root / "profiles").parts
    except (ValueError, OSError, RuntimeError):
        return "custom"
    return parts[0] if len(parts) == 1 and parts[0] else "custom"


def profiles_dir(root: Path) -> Path:
    return root / "profiles"


def profile_home(root: Path, name: str) -> Path:
    """The home of profile `name` under `root` (the root itself for "default"); not checked to exist."""
    return root if name == DEFAULT else profiles_dir(root) / check_name(name)


def active_file(root: Path) -> Path:
    """`<root>/active_profile`: the sticky profile `hermes profile use` chooses."""
    return root / "active_profile"
