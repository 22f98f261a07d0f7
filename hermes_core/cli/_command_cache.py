"""The names of the commands plugins add to `hermes`, remembered from the last load.

`hermes --help` lists every command, plugins' included, but learning a plugin's commands
means importing it. The commands the enabled plugins added when they were last loaded are
kept in `$HERMES_HOME/.cache/cli-commands.json`, keyed by what discovery sees without
importing anything (each enabled plugin's id, version, origin and the modification time of
its files, and hermes-core's version). While that key holds, `--help` lists them from the
file; a plugin is loaded only when one of its commands runs. When anything installed or
enabled changes, the key no longer matches and the next `--help` loads the plugins once.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

__all__ = ["fingerprint", "read", "write"]

_FILE = "cli-commands.json"


def _path() -> Path:
    from .._paths import hermes_home

    return hermes_home() / ".cache" / _FILE


def _mtime(path: Path | None) -> int:
    if path is None:
        return 0
    files = [path / "__init__.py", path / "plugin.yaml"] if path.is_dir() else [path]
    try:  # not the folder's own time: a plugin writing files beside its code changes nothing here
        return max((f.stat().st_mtime_ns for f in files if f.exists()), default=0)
    except OSError:
        return 0


def fingerprint() -> str:
    """What discovery sees of the enabled plugins, as a key: it changes when one is enabled,
    disabled, installed, upgraded or edited (its folder's `__init__.py` or manifest)."""
    from .._config_file import load_config
    from .._discovery import discover
    from .._paths import hermes_home
    from .._version import __version__

    config = load_config()
    found = discover(home=hermes_home())
    enabled = [[s.id, s.version, s.source, str(s.path or s.entry_point or ""), _mtime(s.path)]
               for s in found.plugins if s.enablement(config)[0]]
    return hashlib.sha256(json.dumps([__version__, sorted(enabled)]).encode()).hexdigest()


def read(key: str) -> dict[str, str] | None:
    """The plugins' commands (name → short help) remembered under `key`, or None."""
    try:
        data = json.loads(_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("key") != key or not isinstance(data.get("commands"), dict):
        return None
    return {str(k): str(v) for k, v in data["commands"].items()}


def write(key: str, commands: dict[str, str]) -> None:
    """Remember `commands` under `key` (atomically; a cache that cannot be written is no error)."""
    path = _path()
    tmp = path.with_name(f".{_FILE}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(json.dumps({"key": key, "commands": commands}, ensure_ascii=False), encoding="utf-8")
        os.replace(tmp, path)
    except OSError:
        tmp.unlink(missing_ok=True)


def short_help(command: Any) -> str:
    """What `--help` shows for `command` (click's own short form)."""
    try:
        return str(command.get_short_help_str(limit=300))
    except Exception:  # noqa: BLE001 - a plugin's command object: its help is not worth a failure
        return ""
