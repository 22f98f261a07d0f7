"""Credentials: read from the environment and `$HERMES_HOME/auth.json`, kept out of plugins' reach.

    {
      "providers": {
        "openrouter": {"api_key": "sk-or-..."},
        "openai": {"api_keys": ["sk-a...", "sk-b..."]}
      },
      "profiles": {
        "work": {"openai": {"api_key": "sk-w..."}}
      }
    }

A provider's pool is its environment variable (when set) followed by its `auth.json` keys;
a call that gets 401 or 429 moves to the next key, and the next call starts at the key that
last worked. With `profile=`, only that profile's keys are used.

No object a plugin can reach holds a key: keys live in this module's private state (the
parsed `auth.json`, the rotation offsets) and in the openai clients of `transport`; routes
and plans carry the *name* of a variable, never its value.
"""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path
from typing import Any

from .._errors import LlmConfigError
from .._files import RACY_SECONDS
from .routes import Route

__all__ = ["Pool", "pool_for", "scrub"]

_lock = threading.Lock()
_offsets: dict[tuple[str, str, str], int] = {}
_known: set[str] = set()
_auth_paths: dict[Path, str] = {}
_pools: dict[tuple[Any, ...], tuple[tuple[int, ...], str, list[str | None]]] = {}


def _auth(path: str) -> Any:
    """The parsed `auth.json` (`{}` when there is none); errors never quote its text."""
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise LlmConfigError(f"cannot read {path}: {exc.strerror}") from None
    except ValueError as exc:  # the message holds a position, never the file's text
        where = f"line {exc.lineno}, column {exc.colno}" if isinstance(exc, json.JSONDecodeError) else "somewhere"
        raise LlmConfigError(f"{path} is not valid JSON ({where}); fix the file") from None
    if not isinstance(data, dict):
        raise LlmConfigError(f"{path} must hold a JSON object with 'providers' and/or 'profiles'")
    return data


def _keys(entry: Any, where: str) -> list[str]:
    if entry is None:
        return []
    if not isinstance(entry, dict):
        raise LlmConfigError(f"{where} in auth.json must be an object with 'api_key' or 'api_keys'")
    keys = [entry["api_key"]] if "api_key" in entry else []
    keys += entry.get("api_keys") or []
    if not all(isinstance(key, str) and key.strip() for key in keys):
        raise LlmConfigError(f"{where} in auth.json: every api_key must be a non-empty string")
    return [key.strip() for key in keys]


class Pool:
    """The keys of one provider (and profile), starting at the one that last worked.

    `None` stands for "no key": a `custom` server that needs none.
    """

    __slots__ = ("_keys", "_slot", "_start")

    def __init__(self, slot: tuple[str, str, str], keys: list[str | None]) -> None:
        self._slot = slot
        self._keys = keys
        self._start = _offsets.get(slot, 0) % len(keys)

    def __len__(self) -> int:
        return len(self._keys)

    def __repr__(self) -> str:
        return f"<Pool of {len(self._keys)} credential(s)>"

    def key(self, attempt: int) -> str | None:
        return self._keys[(self._start + attempt) % len(self._keys)]

    def worked(self, attempt: int) -> None:
        """Start the next call at the key that just worked."""
        with _lock:
            _offsets[self._slot] = (self._start + attempt) % len(self._keys)


def pool_for(home: Path, route: Route, profile: str | None) -> Pool:
    """The credential pool for `route`; `LlmConfigError` when the provider needs a key and has none.

    The keys are recomputed only when `auth.json` or the provider's variable changed (and
    always while `auth.json` is less than two seconds old, as for config.yaml).
    """
    auth_path = _auth_paths.get(home)
    if auth_path is None:
        auth_path = _auth_paths[home] = os.path.join(home, "auth.json")
    try:
        stat = os.stat(auth_path)
        identity: tuple[int, ...] = (stat.st_mtime_ns, stat.st_ctime_ns, stat.st_size, stat.st_ino)
    except OSError:
        identity = ()
    racy = bool(identity) and time.time() - identity[0] / 1e9 < RACY_SECONDS
    env = os.environ.get(route.key_env, "").strip() if profile is None else ""
    slot = (auth_path, route.provider, profile or "")
    cache_key = (*slot, route.key_env, route.needs_key)
    cached = _pools.get(cache_key)
    if cached is not None and cached[0] == identity and cached[1] == env:
        return Pool(slot, cached[2])
    keys = _keys_for(auth_path, route, profile, env)
    with _lock:
        _known.update(key for key in keys if key)
        if not racy:
            _pools[cache_key] = (identity, env, keys)
    return Pool(slot, keys)


def _keys_for(auth_path: str, route: Route, profile: str | None, env: str) -> list[str | None]:
    auth = _auth(auth_path)
    if profile is not None:
        profiles = auth.get("profiles") or {}
        if not isinstance(profiles, dict) or profile not in profiles:
            known = ", ".join(sorted(profiles)) if isinstance(profiles, dict) and profiles else "none"
            raise LlmConfigError(f"auth profile {profile!r} is not in {auth_path} (profiles: {known})")
        entry = profiles[profile]
        keys = _keys(entry.get(route.provider) if isinstance(entry, dict) else None,
                     f"profiles.{profile}.{route.provider}")
        if not keys:
            raise LlmConfigError(f"auth profile {profile!r} has no key for provider {route.provider!r}; "
                                 f"add profiles.{profile}.{route.provider}.api_key to {auth_path}")
    else:
        providers = auth.get("providers") or {}
        keys = ([env] if env else []) + _keys(providers.get(route.provider) if isinstance(providers, dict) else None,
                                              f"providers.{route.provider}")
        keys = list(dict.fromkeys(keys))
    if not keys and route.needs_key:
        raise LlmConfigError(
            f"no credentials for provider {route.provider!r} ({route.where}): set {route.key_env} "
            f"or add providers.{route.provider}.api_key to {auth_path}"
        )
    return list(keys) or [None]


def scrub(text: str) -> str:
    """`text` with every credential this process has used replaced by `***`."""
    with _lock:
        known = sorted(_known, key=len, reverse=True)
    for key in known:
        if key in text:
            text = text.replace(key, "***")
    return text
