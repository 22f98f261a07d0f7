"""The managed scope: settings an administrator pins for every user, over `config.yaml` key by key.

Hermes Agent reads a root-owned `/etc/hermes/config.yaml` (or `$HERMES_MANAGED_DIR/config.yaml`)
last: each leaf it sets wins over the user's value at that key, while the user keeps every
sibling key. hermes-core reads the same file the same way, in `load_config`, so every read
sees it (the plugin gates, `ctx.llm`'s trust entries, hook time limits, budgets). Unlike
Hermes, a managed file that cannot be read or parsed is an error on every read, never a
warning and the user's values: it is where the security settings live. Writes (`edit_config`)
refuse to change a managed key, naming the file.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, NamedTuple

from .._errors import ConfigError, ManagedKeyError

__all__ = [
    "DEFAULT_DIR", "VARIABLE", "Managed", "dotted", "identity", "load_managed", "managed_dir", "managed_refusal",
    "overlay", "refuse_if_managed", "value_at",
]

VARIABLE = "HERMES_MANAGED_DIR"
DEFAULT_DIR = Path("/etc/hermes")
_FIX = "it holds your administrator's managed settings: ask them to fix it (nothing was read from it)"
_cache: dict[str, tuple[tuple[int, ...], Managed | None]] = {}


class Managed(NamedTuple):
    """The managed settings (`data`, plain data) read from `path`, and the keys they pin (a tuple,
    not an attrs class: this module is on every command's start-up path, attrs is not)."""

    path: Path
    data: Mapping[str, Any]
    keys: frozenset[tuple[str, ...]]

    def pins(self, parts: tuple[str, ...]) -> bool:
        """Whether the leaf at `parts`, or a mapping above it taken whole, is pinned."""
        return any(parts[: len(key)] == key for key in self.keys)


def dotted(parts: tuple[str, ...]) -> str:
    """`parts` as `hermes config` writes a key: dots between, a dot inside a part escaped."""
    return ".".join(part.replace(".", "\\.") for part in parts)


def managed_dir() -> Path | None:
    """The managed scope's folder: `$HERMES_MANAGED_DIR` when set (a `ConfigError` when that is
    not a folder), else `/etc/hermes` when it exists, else None (no managed scope)."""
    override = os.environ.get(VARIABLE, "").strip()
    if override:
        path = Path(override)
        if not path.is_dir():
            raise ConfigError(
                f"{VARIABLE} names {path}, which is not a folder: create it (with the managed config.yaml) "
                "or unset the variable", path=path)
        return path
    return DEFAULT_DIR if DEFAULT_DIR.is_dir() else None


def _stat(path: Path) -> tuple[int, ...] | None:
    try:
        stat = path.stat()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc}; {_FIX}", path=path) from None
    return (stat.st_mtime_ns, stat.st_ctime_ns, stat.st_size, stat.st_ino)


def identity() -> tuple[str, tuple[int, ...] | None] | None:
    """What changes when the managed file does (for caches of the merged config); None without one."""
    folder = managed_dir()
    if folder is None:
        return None
    path = folder / "config.yaml"
    return (str(path), _stat(path))


def _leaves(data: Mapping[str, Any], prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    for key, value in data.items():
        parts = (*prefix, str(key))
        if isinstance(value, Mapping) and value:
            yield from _leaves(value, parts)
        else:
            yield parts


def load_managed() -> Managed | None:
    """The managed settings, or None when there is no managed file; a `ConfigError` naming the
    file when it cannot be read or is not a mapping of valid YAML. Re-read only when it changes."""
    found = identity()
    if found is None or found[1] is None:
        return None
    name, stamp = found
    assert stamp is not None
    cached = _cache.get(name)
    if cached is not None and cached[0] == stamp:
        return cached[1]
    from .parse import _plain, parse

    path = Path(name)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}; {_FIX}", path=path) from None
    data = parse(path, text, _FIX) if text.strip() else None
    plain = _plain(data) if data is not None else {}
    if not isinstance(plain, dict):
        raise ConfigError(f"{path} holds a value YAML cannot give as plain data; {_FIX}", path=path)
    if isinstance(plain.get("model"), str):
        plain["model"] = {"model": plain["model"]}
    managed = Managed(path, plain, frozenset(_leaves(plain))) if plain else None
    import time

    from .._files import RACY_SECONDS

    if time.time() - stamp[0] / 1e9 >= RACY_SECONDS:  # an edit in the same clock tick keeps the stamp
        _cache[name] = (stamp, managed)
    return managed


def overlay(base: Mapping[str, Any], managed: Mapping[str, Any]) -> dict[str, Any]:
    """`base` with `managed` over it leaf by leaf: mappings merge, anything else is replaced
    (a list whole); a managed `null` over a mapping leaves the mapping (as Hermes merges)."""
    result = dict(base)
    for key, value in managed.items():
        below = result.get(key)
        if isinstance(below, Mapping) and isinstance(value, Mapping):
            result[key] = overlay(below, value)
        elif not (isinstance(below, Mapping) and value is None):
            result[key] = value
    return result


def value_at(data: Any, parts: tuple[str, ...]) -> Any:
    """The plain value at `parts` in `data` (a round-trip document or plain data); `_ABSENT` when missing."""
    from .parse import _plain

    node = data
    for part in parts:
        if not isinstance(node, Mapping) or part not in node:
            return _ABSENT
        node = node[part]
    with contextlib.suppress(Exception):
        return _plain(node)
    return node


_ABSENT = object()


def refuse_if_managed(config: Any, parts: tuple[str, ...], what: str) -> None:
    """Raise the `ConfigError` a write of `parts` would meet when `config` (a `Config`) has that
    key pinned by the managed scope: for a command to say so before it asks anything."""
    managed = config.managed_file(*parts)
    if managed is not None:
        raise ManagedKeyError(f"cannot change {what}: {dotted(parts)} is managed by your administrator in {managed} "
                          "(config.yaml was not changed); ask your administrator to change it there", path=managed)


def managed_refusal(document: Any) -> Callable[[Any], None]:
    """A check for an edit of `document` (the user's config.yaml): called on the edited document,
    it raises a `ConfigError` naming the key and the managed file when the edit changed a key the
    managed scope pins (the managed value would win on the next read: the edit would do nothing)."""
    managed = load_managed()
    if managed is None:
        return lambda edited: None
    before = {key: value_at(document, key) for key in managed.keys}

    def refuse(edited: Any) -> None:
        changed = [key for key, value in before.items() if value_at(edited, key) != value]
        if changed:
            keys = ", ".join(dotted(key) for key in sorted(changed))
            raise ManagedKeyError(
                f"cannot change {keys}: managed by your administrator in {managed.path}, whose value wins "
                "over config.yaml (config.yaml was not changed); ask your administrator to change it there",
                path=managed.path)

    return refuse
