"""`ctx.manifest`: what a plugin was discovered as, read-only."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["PluginManifest"]


class PluginManifest:
    """What a plugin was discovered as (its plugin.yaml, or its entry point), read-only:
    attributes (`ctx.manifest.name`, `.version`, `.kind`, ...) or keys (`ctx.manifest["name"]`)."""

    __slots__ = ("_fields",)

    def __init__(self, fields: Mapping[str, Any]) -> None:
        object.__setattr__(self, "_fields", dict(fields))

    def __getattr__(self, name: str) -> Any:
        try:
            return self._fields[name]
        except KeyError:
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
