"""`ctx.manifest`: what a plugin was discovered as, read-only."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["DEFAULTS", "PluginManifest"]


# Hermes' `PluginManifest` fields and their defaults: a field the plugin's manifest does not set
# reads as Hermes' default (a list or dict default is a new one each time).
DEFAULTS: Mapping[str, Any] = {
    "name": "", "version": "", "description": "", "author": "", "source": "", "path": None, "kind": "standalone",
    "key": "", "requires_env": [], "provides_tools": [], "provides_hooks": [], "requires_hermes": "",
    "capabilities": [], "portable": False, "skill_namespace": "", "manifest_version": 1, "api_version": None,
    "requires_plugins": [], "python_dependencies": [], "config_schema": {}, "license": "", "homepage": "",
    "update_url": "", "tags": [], "emits": [], "listens": [],
}


class PluginManifest:
    """What a plugin was discovered as (its plugin.yaml, or its entry point), read-only:
    attributes (`ctx.manifest.name`, `.version`, `.kind`, ...) or keys (`ctx.manifest["name"]`).
    A field of Hermes' manifest that this one does not set reads as Hermes' default. Made from a
    mapping, or as Hermes makes it: `PluginManifest(name, version=..., ...)`."""

    __slots__ = ("_fields",)

    def __init__(self, fields: Mapping[str, Any] | str | None = None, /, **named: Any) -> None:
        given = dict(fields) if isinstance(fields, Mapping) else {} if fields is None else {"name": fields}
        object.__setattr__(self, "_fields", {**given, **named})

    def __getattr__(self, name: str) -> Any:
        try:
            return self._fields[name]
        except KeyError:
            pass
        if name in DEFAULTS:
            default = DEFAULTS[name]
            return type(default)() if isinstance(default, (list, dict)) else default
        raise AttributeError(f"the manifest has no field {name!r} (fields: {', '.join(self._fields)})") from None

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("ctx.manifest is read-only")

    def __getitem__(self, key: str) -> Any:
        return self._fields[key]

    def __contains__(self, key: object) -> bool:
        return key in self._fields

    def __iter__(self) -> Any:
        return iter(self._fields)

    def get(self, key: str, default: Any = None) -> Any:
        return self._fields.get(key, default)

    def keys(self) -> list[str]:
        return list(self._fields)

    def __repr__(self) -> str:
        return f"PluginManifest({self._fields!r})"
