"""`$HERMES_HOME/config.yaml` on disk: read it (cached), and edit it without losing the operator's work.

Reads and writes go through ruamel.yaml's round-trip mode, so an edit made by the CLI keeps
the operator's comments, key order and formatting. Writes are atomic (temporary file, fsync,
rename) and serialised by a lock file; a malformed file is reported with its line and column
and is never overwritten.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from .._errors import ConfigError
from .._files import RACY_SECONDS, locked, read_json, write_atomic
from .._paths import hermes_home
from .config import Config
from .managed import Managed, load_managed, managed_refusal, overlay
from .parse import _MISSING, _plain, _yaml, parse, read_text, shaped

__all__ = ["ConfigWatcher", "config_path", "edit_config", "load_config", "mapping_at", "parse", "read_text"]



def config_path(home: Path | None = None) -> Path:
    """The path of `config.yaml` under `home` (default: `$HERMES_HOME`)."""
    return (home if home is not None else hermes_home()) / "config.yaml"


def _cache_path(home: Path) -> Path:
    return home / ".cache" / "config.yaml.json"


def _identity(stat: os.stat_result) -> list[int]:
    return [stat.st_mtime_ns, stat.st_ctime_ns, stat.st_size, stat.st_ino]


def _read_cache(home: Path, identity: list[int]) -> Any:
    try:
        cached = read_json(_cache_path(home))
    except (OSError, ValueError):
        return _MISSING
    if not isinstance(cached, dict) or cached.get("identity") != identity:
        return _MISSING
    return cached.get("data", _MISSING)


def _write_cache(home: Path, identity: list[int], data: Any) -> None:
    import json
    import time

    # File times are coarse (a kernel tick): an edit made in the same tick as this read could
    # keep the identity. Caching only files older than a few seconds makes any later edit
    # land on a later time (git's "racy git" rule).
    if time.time() - identity[0] / 1e9 < RACY_SECONDS:
        return
    plain = _plain(data)
    if plain is _MISSING:
        return
    with contextlib.suppress(OSError):
        path = _cache_path(home)
        path.parent.mkdir(exist_ok=True)
        write_atomic(path, json.dumps({"identity": identity, "data": plain}), durable=False)


def load_config(home: Path | None = None) -> Config:
    """Read `config.yaml` with the managed scope over it (see `managed`); a missing file is an
    empty config, a malformed one (or a malformed managed file) a `ConfigError`.

    Parsing YAML is the slowest step of a short command, so the parsed settings are cached
    as JSON under `$HERMES_HOME/.cache/`, keyed by the file's identity (modification and
    change times, size, inode): any edit, by the CLI or by hand, misses the cache. A file
    modified in the last two seconds is never cached, so an edit cannot share its identity.
    The managed file is never cached there (the user can write that folder). A bare `model: <name>`
    is `model: {model: <name>}` in either file (`parse.shaped`).
    """
    return _merged(home if home is not None else hermes_home(), load_managed())


def _merged(home: Path, managed: Managed | None) -> Config:
    path = config_path(home)
    data = _read_user(home, path)
    if managed is None:
        return Config(data, path)
    return Config(overlay(data, managed.data), path, managed)


def _read_user(home: Path, path: Path) -> Mapping[str, Any]:
    try:
        identity = _identity(path.stat())
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc}", path=path) from None
    cached = _read_cache(home, identity)
    if isinstance(cached, dict):
        return shaped(cached)
    text = read_text(path)
    if text is None or not text.strip():
        return {}
    data = parse(path, text) or {}
    _write_cache(home, identity, data)
    return shaped(data)


class ConfigWatcher:
    """The current `config.yaml` of `home`, re-read only when the file changes.

    For code that must see an operator's edit on its next call without a restart (the
    `ctx.llm` trust gate): a call costs one `stat` of config.yaml and one of the managed file
    while both are unchanged. A config.yaml modified in the last two seconds is re-read every
    time (see `load_config`; the managed file, see `load_managed`).
    """

    __slots__ = ("_home", "_path", "_identity", "_config", "_managed")

    def __init__(self, home: Path) -> None:
        self._home = home
        self._path = config_path(home)
        self._identity: list[int] | None = None
        self._config: Config | None = None
        self._managed: object = None

    def current(self) -> Config:
        """The config as it is on disk now; `ConfigError` when it cannot be read or parsed."""
        path = self._path
        try:
            identity: list[int] | None = _identity(os.stat(path))
        except FileNotFoundError:
            identity = None
        except OSError as exc:
            raise ConfigError(f"cannot read {path}: {exc}", path=path) from None
        managed = load_managed()  # the same object while the managed file is unchanged
        if self._config is not None and identity is not None and identity == self._identity \
                and managed is self._managed:
            return self._config
        config = _merged(self._home, managed)
        import time

        racy = identity is not None and time.time() - identity[0] / 1e9 < RACY_SECONDS
        self._identity, self._config = (None, None) if racy or identity is None else (identity, config)
        self._managed = managed
        return config


def _sweep_stale(path: Path) -> None:
    """Remove the temporary files writers of `path` left when they were killed mid-write
    (`.config.yaml.<random>.tmp`). Called with the lock held: no writer is half-way now."""
    with contextlib.suppress(OSError):
        for stale in path.parent.glob(f".{path.name}.*.tmp"):
            with contextlib.suppress(OSError):
                stale.unlink()


def mapping_at(document: Any, parts: Sequence[str], not_mapping: Callable[[int], ConfigError]) -> Any:
    """The mapping at `parts` in the round-trip `document` (an `edit_config` mutation's), made
    where missing; `not_mapping(depth)` is the error when `parts[depth]` holds something else."""
    from ruamel.yaml.comments import CommentedMap

    node = document
    for depth, part in enumerate(parts):
        child = node.get(part)
        if child is None:
            child = node[part] = CommentedMap()
        elif not isinstance(child, dict):
            raise not_mapping(depth)
        node = child
    return node


def edit_config(mutate: Callable[[Any], bool | None], home: Path | None = None) -> bool:
    """Apply `mutate` to the round-trip document of `config.yaml` and write it back atomically.

    `mutate` receives the document (a ruamel `CommentedMap`) and may return False to say it
    changed nothing, in which case nothing is written. Returns whether the file was written.
    """
    from ruamel.yaml.comments import CommentedMap

    path = config_path(home)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"cannot create {path.parent}: {exc}", path=path) from None
    managed = load_managed()  # not under the lock: an administrator's edit does not take it anyway
    with locked(path):
        _sweep_stale(path)
        text = read_text(path)
        data = parse(path, text) if text and text.strip() else None
        if data is None:
            data = CommentedMap()
        refuse = managed_refusal(data, managed)
        if mutate(data) is False:
            return False
        refuse(data)
        import io

        buffer = io.StringIO()
        _yaml().dump(data, buffer)
        try:
            write_atomic(path, buffer.getvalue())
        except OSError as exc:
            raise ConfigError(f"cannot write {path}: {exc} (the old file was kept)", path=path) from None
    return True
