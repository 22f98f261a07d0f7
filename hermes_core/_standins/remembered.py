"""What each plugin registered at its last import, remembered so that a host loading lazily can
offer a plugin's tools and commands without importing it (`lazy`).

After a plugin loads, what it registered is kept in `$HERMES_HOME/.cache/registrations.json`
under a key of what discovery sees without importing it: its id, version, origin and kind, the
size and modification time of its files (a folder plugin's Python files and manifest; an entry
point's module), its settings in config.yaml, which of its `requires_env` variables are set, and
hermes-core's version: everything it registered by kind and name, and why it must be imported
at every start, if it must. Stand-ins can be a plugin only when everything it registered is of a
kind lazy activation can stand in for (`kinds.LAZY`: tools without a `check_fn`, which only its
code can answer, slash commands and CLI commands): for those, the tools' schemas and the commands'
help are kept too. Anything else (hooks, providers, `ctx.spawn_task`, platforms, ...) needs the
plugin imported at start. A key that does not match is no memory: the plugin is imported at
start, as without one.

One writer at a time (a lock beside the file), each replacing the file whole; a damaged file is
no memory at all and is written again. Files modified in the last `RACY_SECONDS` are not trusted to
show the next edit in their times, so a plugin whose files are that fresh is not remembered.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._discovery.spec import PluginSpec
from .._files import RACY_SECONDS, locked, read_json, write_atomic
from .._messages import storable_json
from .._version import __version__
from .fields import command_fields, tool_fields
from .kinds import LAZY

if TYPE_CHECKING:
    from .._commands.registry import CommandRegistry
    from .._loading.record import PluginRecord
    from .._tools.registry import ToolRegistry

__all__ = ["RegistrationMemory", "plugin_key", "registrations"]

_FILE = "registrations.json"
_FORMAT = 1
_SOURCES = (".py", ".pyi")
_MANIFESTS = ("plugin.yaml", "plugin.yml")


def _stat(path: Path | str, files: list[list[Any]], fresh: float) -> bool:
    """Note `path`'s size and modification time in `files`; False when it changed too recently to trust."""
    try:
        stat = os.stat(path)
    except OSError:
        files.append([str(path), None])
        return True
    files.append([str(path), stat.st_size, stat.st_mtime_ns])
    return stat.st_mtime < fresh


def _folder_files(folder: Path, files: list[list[Any]], fresh: float) -> bool:
    trusted = True
    for root, dirs, names in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith((".", "__pycache__")))
        for name in sorted(names):
            if name.endswith(_SOURCES) or name in _MANIFESTS:
                trusted &= _stat(os.path.join(root, name), files, fresh)
    return trusted


def _module_files(entry_point: str, files: list[list[Any]], fresh: float) -> bool:
    """The files of an entry point's module, found without importing anything (the top-level
    package's `__init__.py` and the module the entry point names)."""
    import importlib.util

    parts = entry_point.partition(":")[0].strip().split(".")
    try:
        spec = importlib.util.find_spec(parts[0])
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.origin:
        files.append([parts[0], None])
        return True
    trusted = _stat(spec.origin, files, fresh)
    where = Path(spec.origin).parent
    for part in parts[1:]:
        module = where / f"{part}.py"
        package = where / part / "__init__.py"
        found = module if module.exists() else package
        trusted &= _stat(found, files, fresh)
        where = where / part
    return trusted


def plugin_key(spec: PluginSpec, settings: Mapping[str, Any]) -> str | None:
    """The key `spec`'s registrations are remembered under (see the module's doc), or None when
    its files changed too recently to be told from the next edit by their times."""
    files: list[list[Any]] = []
    fresh = time.time() - RACY_SECONDS
    if spec.path is not None:
        trusted = _folder_files(spec.path, files, fresh) if spec.path.is_dir() else _stat(spec.path, files, fresh)
    elif spec.entry_point:
        trusted = _module_files(spec.entry_point, files, fresh)
    else:
        return None
    if not trusted:
        return None
    try:
        shown = json.dumps(settings, sort_keys=True, default=repr)
    except (TypeError, ValueError):
        return None
    present = [name for name in spec.requires_env if os.environ.get(name, "").strip()]
    return json.dumps([__version__, spec.id, spec.version, spec.source, spec.kind, spec.entry_point, files, shown,
                       present])


def _at_start(record: PluginRecord, tools: ToolRegistry, commands: CommandRegistry) -> list[str]:
    """Why `record`'s plugin must be imported at every start (nothing: stand-ins can be it)."""
    why = [f"{kind}: {', '.join(names)}" for kind, names in record.registered.items() if kind not in LAZY]
    why += list(dict.fromkeys(record.eager)) + [f"a problem: {problem}" for problem in record.problems]
    for name in record.registered.get("tools", []):
        entry = tools.entry(name)
        if tools.gave_way(name, record.id):  # a built-in's tool an enabled plugin's took over
            why.append(f"tool {name!r} gave its name to a plugin's")
        elif entry is None or entry.tool.plugin_id != record.id or entry.source is not None:
            why.append(f"tool {name!r} is not its own now")
        elif entry.tool.check_fn is not None:
            why.append(f"tool {name!r} has a check_fn")
    for name in record.registered.get("commands", []):
        command = commands.get(name)
        if command is None or command.plugin_id != record.id:
            why.append(f"command /{name} is not its own now")
    return why


def registrations(
    record: PluginRecord, tools: ToolRegistry, commands: CommandRegistry, cli_hooks: bool
) -> dict[str, Any] | None:
    """What `record`'s plugin registered, as it is remembered: everything by kind and name, why it must
    be imported at start (`at_start`; empty when it need not), and when it need not, the tools'
    schemas and the commands' help the stand-ins offer. None when it did not load (or a schema is not JSON)."""
    if record.status != "ok":
        return None
    at_start = _at_start(record, tools, commands) if record.registered or cli_hooks else ["it registered nothing"]
    offered, slash = [], []
    for name in record.registered.get("tools", []) if not at_start else []:
        entry = tools.entry(name)
        assert entry is not None
        offered.append(tool_fields(entry))
    for name in record.registered.get("commands", []) if not at_start else []:
        command = commands.get(name)
        assert command is not None
        slash.append(command_fields(command))
    remembered = {"registered": record.registered, "at_start": at_start, "tools": offered, "commands": slash,
                  "cli_commands": list(record.registered.get("cli_commands", [])), "cli_hooks": cli_hooks,
                  "warnings": list(record.warnings), "hermes_names": list(record.hermes_names)}
    try:  # as it reads back: a schema that is not JSON is not remembered
        readback: dict[str, Any] = json.loads(json.dumps(remembered))
    except (TypeError, ValueError):
        return None
    return readback


_TOOL: dict[str, type] = {"name": str, "toolset": str, "schema": dict, "requires_env": list, "is_async": bool,
                          "description": str, "emoji": str, "override": bool}
_COMMAND: dict[str, type] = {"name": str, "description": str, "args_hint": str, "argument_mode": str}


def _well_formed(remembered: Any) -> bool:
    """Whether `remembered` has the shape `registrations` gives (a file edited by hand may not)."""
    def fits(item: Any, fields: dict[str, type]) -> bool:
        return isinstance(item, dict) and all(isinstance(item.get(k), t) for k, t in fields.items())

    return isinstance(remembered, dict) and isinstance(remembered.get("cli_hooks"), bool) and all(
        isinstance(remembered.get(k), list)
        for k in ("at_start", "tools", "commands", "cli_commands", "warnings", "hermes_names")
    ) and isinstance(remembered.get("registered"), dict) and all(fits(t, _TOOL) for t in remembered["tools"]) and all(fits(c, _COMMAND) for c in remembered["commands"])


class RegistrationMemory:
    """The registrations remembered under one home's cache: `get`, then `keep` / `forget`, then `save`."""

    def __init__(self, home: Path | None) -> None:
        self._path = home / ".cache" / _FILE if home is not None else None
        self._lock = threading.Lock()
        self._plugins: dict[str, Any] | None = None
        self._changes: dict[str, Any] = {}  # plugin id -> its new entry (None: forgotten)

    def _read(self) -> dict[str, Any]:
        if self._path is None:
            return {}
        try:
            data = read_json(self._path)
        except (OSError, ValueError):  # unreadable, not UTF-8 JSON, nested past the parser: remembered again
            return {}
        plugins = data.get("plugins") if isinstance(data, dict) and data.get("format") == _FORMAT else None
        if not isinstance(plugins, dict):
            return {}
        return {k: v for k, v in plugins.items()
                if isinstance(v, dict) and isinstance(v.get("key"), str) and isinstance(v.get("registrations"), dict)}

    def _known(self) -> dict[str, Any]:
        if self._plugins is None:
            self._plugins = self._read()
        return self._plugins

    def get(self, plugin_id: str, key: str | None) -> dict[str, Any] | None:
        """What plugin `plugin_id` registered when last imported under `key`, or None."""
        if key is None:
            return None
        with self._lock:
            entry = self._known().get(plugin_id)
        if entry is None or entry["key"] != key or not _well_formed(entry["registrations"]):
            return None
        return entry["registrations"]  # type: ignore[no-any-return]

    def keep(self, plugin_id: str, key: str | None, remembered: dict[str, Any] | None) -> None:
        """Remember `remembered` for `plugin_id` under `key` (None: forget it); written by `save()`."""
        entry = {"key": key, "registrations": remembered} if key is not None and remembered is not None else None
        with self._lock:
            if self._known().get(plugin_id) != entry:
                self._changes[plugin_id] = entry
                self._known()[plugin_id] = entry

    def forget(self, plugin_id: str) -> None:
        self.keep(plugin_id, None, None)

    def save(self) -> None:
        """Write the changes since the last `save()` into the file as it is now (other processes'
        entries kept), one writer at a time, the file replaced whole. A cache: failing is no error."""
        with self._lock:
            changes, self._changes = self._changes, {}
        if not changes or self._path is None:
            return
        try:
            self._path.parent.mkdir(parents=True, exist_ok=True)
            with locked(self._path):
                plugins = self._read()
                for plugin_id, entry in changes.items():
                    if entry is None:
                        plugins.pop(plugin_id, None)
                    else:
                        plugins[plugin_id] = entry
                write_atomic(self._path, storable_json({"format": _FORMAT, "plugins": plugins}),
                             durable=False)
        except OSError:
            pass
