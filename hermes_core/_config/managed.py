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

import os
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, NamedTuple

from .._errors import ConfigError, ManagedKeyError
from .._files import RACY_SECONDS

__all__ = [
    "DEFAULT_DIR", "VARIABLE", "Managed", "dotted", "load_managed", "managed_dir", "managed_refusal", "overlay",
    "refuse_list_change",
]

VARIABLE = "HERMES_MANAGED_DIR"
DEFAULT_DIR = Path("/etc/hermes")
_FIX = "it holds your administrator's managed settings: ask them to fix it (nothing was read from it)"


class Managed(NamedTuple):
    """The managed settings (`data`, plain data) read from `path`, and the keys they pin (a tuple,
    not an attrs class: this module is on every command's start-up path, attrs is not)."""

    path: Path
    data: Mapping[str, Any]
    keys: frozenset[tuple[str, ...]]

    def pins(self, parts: tuple[str, ...]) -> bool:
        """Whether the leaf at `parts`, or a mapping above it taken whole, is pinned."""
        return any(parts[: len(key)] == key for key in self.keys)


class _Read(NamedTuple):
    """What one process knows of the managed file: its identity when read, its text, what that
    parsed to, and whether the identity alone vouches for the text (it was not racy when read)."""

    stamp: tuple[int, ...]
    text: str
    managed: Managed | None
    trusted: bool


_cache: dict[str, _Read] = {}


def dotted(parts: tuple[str, ...]) -> str:
    """`parts` as `hermes config` writes a key: dots between, a dot inside a part escaped."""
    return ".".join(part.replace(".", "\\.") for part in parts)


def _override() -> Path | None:
    value = os.environ.get(VARIABLE, "").strip()
    return Path(value) if value else None


def _not_a_folder(path: Path) -> ConfigError:
    return ConfigError(f"{VARIABLE} names {path}, which is not a folder: create it (with the managed config.yaml) "
                       "or unset the variable", path=path)


def managed_dir() -> Path | None:
    """The managed scope's folder: `$HERMES_MANAGED_DIR` when set (a `ConfigError` when that is
    not a folder), else `/etc/hermes` when it exists, else None (no managed scope)."""
    override = _override()
    if override is not None:
        if not override.is_dir():
            raise _not_a_folder(override)
        return override
    return DEFAULT_DIR if DEFAULT_DIR.is_dir() else None


def _stat(path: Path, override: Path | None) -> tuple[int, ...] | None:
    """The managed file's identity, from one `stat` (the folder is looked at only when the file is missing)."""
    try:
        stat = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        if override is not None and not override.is_dir():
            raise _not_a_folder(override) from None
        return None
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc}; {_FIX}", path=path) from None
    return (stat.st_mtime_ns, stat.st_ctime_ns, stat.st_size, stat.st_ino)


def _leaves(data: Mapping[str, Any], prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    for key, value in data.items():
        parts = (*prefix, str(key))
        if isinstance(value, Mapping) and value:
            yield from _leaves(value, parts)
        else:
            yield parts


def load_managed() -> Managed | None:
    """The managed settings, or None when there is no managed file; a `ConfigError` naming the
    file when it cannot be read or is not a mapping of valid YAML.

    One `stat` while the file is unchanged: a process parses it once (with the safe loader) and
    keeps what it read, keyed by the file's identity (modification and change times, size, inode),
    and returns that same `Managed` while the file stays as it was. A file modified in the last two
    seconds could be edited again within the same clock tick and keep its identity, so it is read
    again (not parsed again) until it is older: its text, compared, says whether it changed.
    """
    override = _override()
    path = (override if override is not None else DEFAULT_DIR) / "config.yaml"
    now = time.time()
    stamp = _stat(path, override)
    if stamp is None:
        return None
    name = str(path)
    cached = _cache.get(name)
    if cached is not None and cached.stamp == stamp and cached.trusted:
        return cached.managed
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}; {_FIX}", path=path) from None
    managed = cached.managed if cached is not None and cached.text == text else _parse(path, text)
    _cache[name] = _Read(stamp, text, managed, now - stamp[0] / 1e9 >= RACY_SECONDS)
    return managed


def _parse(path: Path, text: str) -> Managed | None:
    from .parse import parse_plain, plain_data, shaped

    data = parse_plain(path, text, _FIX) if text.strip() else None
    plain = plain_data(data) if data is not None else {}
    if not isinstance(plain, dict):
        raise ConfigError(f"{path} holds a value YAML cannot give as plain data; {_FIX}", path=path)
    plain = dict(shaped(plain))
    return Managed(path, plain, frozenset(_leaves(plain))) if plain else None


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


def refuse_list_change(config: Any, parts: tuple[str, ...], names: set[str], present: bool, what: str) -> None:
    """Raise the `ManagedKeyError` a command meets when it needs one of `names` in the list at `parts`
    (`present`), or none of them there, and the managed scope pins that list saying otherwise (its
    value wins: config.yaml could not change it). `config` is a `Config`; for a command to say so
    before it asks anything. A list the managed file does not pin, or pins agreeing, passes."""
    managed = config.managed
    if managed is None or not managed.pins(parts):
        return
    listed = bool(names.intersection(config.string_list(".".join(parts))))
    if listed != present:
        raise ManagedKeyError(
            f"cannot {what}: {dotted(parts)} is managed by your administrator in {managed.path}, which "
            f"{'does not list' if present else 'lists'} it and wins over config.yaml (config.yaml was not changed); "
            "ask your administrator to change it there", path=managed.path)


def managed_refusal(document: Any, managed: Managed | None) -> Callable[[Any], None]:
    """A check for an edit of `document` (the user's config.yaml) under `managed` (`load_managed()`):
    called on the edited document, it raises a `ConfigError` naming the key and the managed file
    when the edit changed a key the managed scope pins (the managed value would win on the next
    read: the edit would do nothing). Both documents are compared in the shape readers see them."""
    if managed is None:
        return lambda edited: None
    from .parse import _MISSING, ABSENT, plain_data, shaped, value_at

    def snapshot(value: Any) -> Any:  # a copy: the edit changes the document in place
        plain = plain_data(value) if value is not ABSENT else ABSENT
        if plain is _MISSING:
            import copy

            return copy.deepcopy(value)
        return plain

    shape = shaped(document)
    before = {key: snapshot(value_at(shape, key)) for key in managed.keys}

    def refuse(edited: Any) -> None:
        shape = shaped(edited)
        changed = [key for key, value in before.items() if value_at(shape, key) != value]
        if changed:
            keys = ", ".join(dotted(key) for key in sorted(changed))
            raise ManagedKeyError(
                f"cannot change {keys}: managed by your administrator in {managed.path}, whose value wins "
                "over config.yaml (config.yaml was not changed); ask your administrator to change it there",
                path=managed.path)

    return refuse
