"""Hermes' `hermes_cli.managed_scope`, read-only: the administrator's managed settings as plain data.

The same layer hermes-core reads under every config read (`_config.managed`): the folder
(`$HERMES_MANAGED_DIR`, else `/etc/hermes`), its `config.yaml`, the dotted keys it pins. Unlike
Hermes, a managed file that cannot be read or parsed raises `ConfigError` here too. The managed
`.env` is not served: `load_managed_env()` is `{}`.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from .._config.managed import dotted, load_managed, managed_dir, overlay
from .._config.parse import shaped

__all__ = [
    "apply_managed_overlay", "get_managed_dir", "invalidate_managed_cache", "is_env_managed", "is_key_managed",
    "load_managed_config", "load_managed_env", "managed_config_keys",
]


def get_managed_dir() -> Path | None:
    """The managed folder, or None when there is none."""
    return managed_dir()


def invalidate_managed_cache() -> None:
    """Nothing to drop: the managed file is re-read whenever it changes."""


def load_managed_config() -> dict[str, Any]:
    """The managed `config.yaml` as a fresh dict; `{}` when there is none."""
    managed = load_managed()
    return copy.deepcopy(dict(managed.data)) if managed is not None else {}


def load_managed_env() -> dict[str, str]:
    """`{}`: hermes-core serves no managed `.env`."""
    return {}


def apply_managed_overlay(config: dict[str, Any]) -> dict[str, Any]:
    """`config` with the managed settings over it, leaf by leaf (a new dict; a bare `model: <name>`
    read as `model.model`, as every reader does)."""
    managed = load_managed()
    return overlay(shaped(config), copy.deepcopy(dict(managed.data))) if managed is not None else dict(config)


def managed_config_keys() -> set[str]:
    """The dotted keys the managed `config.yaml` pins (`{"model.provider"}`)."""
    managed = load_managed()
    return {dotted(key) for key in managed.keys} if managed is not None else set()


def is_key_managed(dotted_key: str) -> bool:
    """Whether the exact dotted key is pinned by the managed `config.yaml`."""
    return dotted_key in managed_config_keys()


def is_env_managed(name: str) -> bool:
    """False: hermes-core serves no managed `.env`."""
    return False
