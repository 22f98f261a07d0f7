"""Hermes' `hermes_constants`: where Hermes keeps its files, answered with hermes-core's home.

`get_hermes_home()` is `hermes_core.hermes_home()` (`$HERMES_HOME`, else `~/.hermes`) unless a
context-local override is set, as in Hermes; the paths under it follow Hermes' layout.
"""

from __future__ import annotations

import contextvars
import os
import sys
from pathlib import Path

from .._paths import hermes_home

__all__ = [
    "AI_GATEWAY_BASE_URL",
    "FINISH_REASON_LENGTH",
    "OPENROUTER_BASE_URL",
    "OPENROUTER_MODELS_URL",
    "PARTIAL_STREAM_STUB_ID",
    "VALID_REASONING_EFFORTS",
    "display_hermes_home",
    "get_bundled_skills_dir",
    "get_config_path",
    "get_default_hermes_root",
    "get_env_path",
    "get_hermes_dir",
    "get_hermes_home",
    "get_hermes_home_override",
    "get_optional_mcps_dir",
    "get_optional_skills_dir",
    "get_process_hermes_home",
    "get_real_home",
    "get_skills_dir",
    "hermes_home_key",
    "is_container",
    "is_termux",
    "is_wsl",
    "mkdir_under_hermes_home",
    "normalize_scope",
    "parse_reasoning_effort",
    "profile_name_for_home",
    "reset_hermes_home_override",
    "set_hermes_home_override",
]

OPENROUTER_BASE_URL = "https://openrouter.ai/api/v1"
OPENROUTER_MODELS_URL = f"{OPENROUTER_BASE_URL}/models"
AI_GATEWAY_BASE_URL = "https://ai-gateway.vercel.sh/v1"
PARTIAL_STREAM_STUB_ID = "partial-stream-stub"
FINISH_REASON_LENGTH = "length"
VALID_REASONING_EFFORTS = ("minimal", "low", "medium", "high", "xhigh", "max", "ultra")

_OVERRIDE: contextvars.ContextVar[str | None] = contextvars.ContextVar("hermes_home_override", default=None)


def set_hermes_home_override(path: str | Path | None) -> contextvars.Token[str | None]:
    """Use `path` as the home in this context (not the process); returns the reset token."""
    return _OVERRIDE.set(None if path is None else str(path))


def reset_hermes_home_override(token: contextvars.Token[str | None]) -> None:
    _OVERRIDE.reset(token)


def get_hermes_home_override() -> str | None:
    return _OVERRIDE.get() or None


def get_hermes_home() -> Path:
    """The home in this context: an override, else `$HERMES_HOME`, else `~/.hermes`."""
    override = get_hermes_home_override()
    return Path(override) if override else hermes_home()


def get_process_hermes_home() -> Path:
    """The process's home, ignoring any context override."""
    return hermes_home()


def hermes_home_key(path: str | Path | None = None) -> str:
    """A stable key for a home: its resolved, case-normalised path."""
    candidate = Path(path) if path is not None else get_hermes_home()
    return os.path.normcase(str(candidate.expanduser().resolve(strict=False)))


def normalize_scope(scope: str | Path | None) -> str | None:
    return hermes_home_key(scope) if scope is not None else None


def get_default_hermes_root(*, home: str | Path | None = None) -> Path:
    """The folder above `profiles/` when the home is a profile, else the home itself."""
    current = Path(home) if home is not None else get_hermes_home()
    return current.parent.parent if current.parent.name == "profiles" else current


def profile_name_for_home(path: str | Path | None) -> str | None:
    """`"default"` for a root home, the profile's name for `<root>/profiles/<name>`, else None."""
    if path is None or not str(path).strip():
        return None
    current = Path(path).expanduser()
    if current.parent.name == "profiles" and not current.name.startswith("."):
        return current.name
    return "default" if current == get_default_hermes_root() else None


def display_hermes_home() -> str:
    """The home as people read it: `~/.hermes` when under the user's home."""
    home = get_hermes_home()
    try:
        return "~/" + home.relative_to(Path.home()).as_posix()
    except ValueError:
        return str(home)


def get_config_path() -> Path:
    return get_hermes_home() / "config.yaml"


def get_env_path() -> Path:
    return get_hermes_home() / ".env"


def get_skills_dir() -> Path:
    return get_hermes_home() / "skills"


def get_hermes_dir(new_subpath: str, old_name: str, *, home: Path | None = None) -> Path:
    """`<home>/<old_name>` when that legacy folder holds anything, else `<home>/<new_subpath>`."""
    base = home or get_hermes_home()
    old = base / old_name
    try:
        if old.is_file() or (old.is_dir() and any(old.iterdir())):
            return old
    except OSError:
        return old
    return base / new_subpath


def _packaged(variable: str, default: Path | None, subdir: str) -> Path:
    override = os.environ.get(variable, "").strip()
    return Path(override) if override else default if default is not None else get_hermes_home() / subdir


def get_optional_skills_dir(default: Path | None = None) -> Path:
    return _packaged("HERMES_OPTIONAL_SKILLS", default, "optional-skills")


def get_optional_mcps_dir(default: Path | None = None) -> Path:
    return _packaged("HERMES_OPTIONAL_MCPS", default, "optional-mcps")


def get_bundled_skills_dir(default: Path | None = None) -> Path:
    return _packaged("HERMES_BUNDLED_SKILLS", default, "skills")


def mkdir_under_hermes_home(path: str | Path) -> Path:
    target = Path(path)
    target.mkdir(parents=True, exist_ok=True)
    return target


def get_real_home(env: dict[str, str] | None = None) -> str:
    """The operating-system user's home folder."""
    env = env or {}
    for value in (env.get("HERMES_REAL_HOME"), os.environ.get("HERMES_REAL_HOME"), env.get("HOME")):
        if value and value.strip():
            return value.strip()
    return str(Path.home())


def parse_reasoning_effort(effort: object) -> dict[str, object] | None:
    """`{"enabled": True, "effort": ...}` for a known level, `{"enabled": False}` for none/false,
    None for anything else (the caller's default applies)."""
    if effort is None or effort is True:
        return None
    value = str(effort).strip().lower()
    if value in {"none", "false", "disabled"}:
        return {"enabled": False}
    return {"enabled": True, "effort": value} if value in VALID_REASONING_EFFORTS else None


def is_termux() -> bool:
    return bool(os.environ.get("TERMUX_VERSION") or "com.termux/files/usr" in os.environ.get("PREFIX", ""))


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except OSError:
        return ""


def is_wsl() -> bool:
    return sys.platform.startswith("linux") and "microsoft" in _read("/proc/version").lower()


def is_container() -> bool:
    if os.path.exists("/.dockerenv") or os.path.exists("/run/.containerenv") or os.environ.get("KUBERNETES_SERVICE_HOST"):
        return True
    cgroup = _read("/proc/1/cgroup")
    return any(marker in cgroup for marker in ("docker", "podman", "/lxc/", "kubepods", "containerd", "crio"))
