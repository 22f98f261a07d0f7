"""What `hermes --help` shows, remembered so that asking for help imports no plugin and, most
of the time, not click either.

`hermes --help` lists every command, plugins' included, but learning a plugin's commands
means importing it. The commands the enabled plugins added when they were last loaded are
kept in `$HERMES_HOME/.cache/cli-commands.json`, keyed by what discovery sees without
importing anything (each enabled plugin's id, version, origin and the modification time of
its files, and hermes-core's version). While that key holds, `--help` lists them from the
file; a plugin is loaded only when one of its commands runs. When anything installed or
enabled changes, the key no longer matches and the next `--help` loads the plugins once.

The help text click renders from those commands is kept beside them, under the same key and
what else the rendering depends on (`rendering()`): the terminal's width, the language, and
the code that renders it (hermes-core's command-line modules and click, by path, size and
modification time). While both hold, the console script (`_start`) prints it without
importing click; any difference and click renders it again.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from .._files import read_json

__all__ = ["fingerprint", "read", "read_help", "rendering", "short_help", "write", "write_help"]

_FILE = "cli-commands.json"
_HELP_TEXTS = 8  # renderings kept per key (a few terminal widths or languages)
_LANGUAGE = ("LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG")  # what gettext reads (click's words)


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
    from .._config.file import load_config
    from .._discovery.discover import discover
    from .._paths import hermes_home
    from .._version import __version__

    config = load_config()
    found = discover(home=hermes_home())
    enabled = [[s.id, s.version, s.source, str(s.path or s.entry_point or ""), _mtime(s.path)]
               for s in found.plugins if s.enablement(config)[0]]
    return json.dumps([__version__, sorted(enabled)])  # kept whole: hashlib's import costs more than the compare


def _files(folder: Path) -> list[Any]:
    """A folder's Python files by name, size and modification time."""
    try:
        entries = sorted(os.scandir(folder), key=lambda entry: entry.name)
        return [str(folder), [[entry.name, entry.stat().st_size, entry.stat().st_mtime_ns]
                              for entry in entries if entry.name.endswith(".py")]]
    except OSError:
        return [str(folder), None]


def rendering() -> str | None:
    """What click's rendering of `hermes --help` depends on besides the commands, as a key: the
    terminal's width (click reads `shutil.get_terminal_size`), the language variables gettext
    reads, and the files of hermes-core's command line and of click. None without click."""
    import importlib.util
    import shutil

    spec = importlib.util.find_spec("click")
    if spec is None or not spec.origin:
        return None
    return json.dumps([shutil.get_terminal_size().columns, [os.environ.get(name) for name in _LANGUAGE],
                       _files(Path(__file__).parent), _files(Path(spec.origin).parent)])


def _load() -> dict[str, Any] | None:
    try:
        data = read_json(_path())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and isinstance(data.get("commands"), dict) else None


def _store(data: dict[str, Any]) -> None:
    """Write the cache file atomically (not durably: it is a cache); failing to is no error."""
    from .._files import write_atomic

    path = _path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, json.dumps(data, ensure_ascii=False), durable=False)
    except OSError:
        pass


def read(key: str) -> dict[str, str] | None:
    """The plugins' commands (name → short help) remembered under `key`, or None."""
    data = _load()
    if data is None or data.get("key") != key:
        return None
    return {str(k): str(v) for k, v in data["commands"].items()}


def write(key: str, commands: dict[str, str]) -> None:
    """Remember `commands` under `key`; the help texts kept go unless they list these same commands."""
    data = _load()
    same = data is not None and data.get("key") == key and data["commands"] == commands
    kept = data.get("help") if same and data is not None else None
    _store({"key": key, "commands": commands, "help": kept if isinstance(kept, dict) else {}})


def read_help(key: str, rendering: str) -> str | None:
    """`hermes --help` as click rendered it under `key` and `rendering`, or None."""
    data = _load()
    if data is None or data.get("key") != key or not isinstance(data.get("help"), dict):
        return None
    text = data["help"].get(rendering)
    return text if isinstance(text, str) else None


def write_help(key: str, rendering: str, text: str) -> None:
    """Remember `text`, click's rendering of `hermes --help`, while the commands under `key` are
    the ones it lists (the last few renderings are kept)."""
    data = _load()
    if data is None or data.get("key") != key:
        return
    kept = data.get("help")
    texts: dict[str, Any] = kept if isinstance(kept, dict) else {}
    if texts.get(rendering) == text:
        return
    texts.pop(rendering, None)
    texts[rendering] = text
    data["help"] = dict(list(texts.items())[-_HELP_TEXTS:])
    _store(data)


def short_help(command: Any) -> str:
    """What `--help` shows for `command` (click's own short form)."""
    try:
        return str(command.get_short_help_str(limit=300))
    except Exception:  # noqa: BLE001 - a plugin's command object: its help is not worth a failure
        return ""
