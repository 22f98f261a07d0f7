"""`Config`: a read-only snapshot of `$HERMES_HOME/config.yaml`, read through the key table.

Every key hermes-core reads is in `config_keys`, with its type and default; `Config.read`
checks a value against it, so a wrong one is a clear error naming the key. Reading the file,
caching it and editing it atomically are in `file`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from .. import config_keys
from .._errors import ConfigError
from ..config_keys import Key
from .managed import Managed
from .parse import ABSENT, value_at

__all__ = ["Config"]

T = TypeVar("T")


class Config:
    """A read-only snapshot of `config.yaml`, with dotted-key look-ups.

    >>> Config({"context": {"engine": "lcm"}}).get("context.engine")
    'lcm'
    """

    __slots__ = ("_data", "path", "managed", "_lists", "_read")

    def __init__(
        self, data: Mapping[str, Any] | None = None, path: Path | None = None, managed: Managed | None = None
    ) -> None:
        self._data: Mapping[str, Any] = data or {}
        self.path = path
        self.managed = managed
        self._lists: dict[str, list[str]] = {}
        self._read: dict[tuple[str, ...], Any] = {}

    def read(self, key: Key[T], *ids: str) -> T:
        """The value of `key` (`ids` fill its `*` parts, in order), checked against the key's
        type; the table's default when it is absent. A value of the wrong type is a
        `ConfigError` naming the key, the file and what it should be.

        >>> Config({"plugins": {"hook_callback_timeout": 5}}).read(config_keys.HOOK_CALLBACK_TIMEOUT)
        5.0
        """
        parts = key.path(*ids)
        if parts in self._read:
            value = self._read[parts]
        else:
            node: Any = self._data
            for depth, part in enumerate(parts):
                if not isinstance(node, Mapping):
                    raise self._error(".".join(parts[:depth]), "a mapping", node)
                node = node.get(part)
                if node is None:
                    break
            if node is None:
                value = key.default
            else:
                try:
                    value = key.convert(node)
                except ValueError:
                    raise self._error(".".join(parts), key.expected, node) from None
            self._read[parts] = value
        return list(value) if isinstance(value, list) else value  # type: ignore[return-value]

    def get(self, key: str, default: Any = None) -> Any:
        """The value at the dotted `key` (`"plugins.enabled"`), or `default` when absent."""
        value = value_at(self._data, key.split("."))
        return default if value is ABSENT else value

    def section(self, *parts: str) -> Mapping[str, Any]:
        """The mapping at `parts`; an empty mapping when absent, an error when not a mapping.

        Plugin ids may contain dots or slashes, so the parts are given one by one:
        `config.section("plugins", "entries", "context_engine/lcm")`.
        """
        node: Any = self._data
        for depth, part in enumerate(parts):
            if not isinstance(node, Mapping):
                raise self._error(".".join(parts[:depth]), "a mapping", node)
            node = node.get(part, {})
            if node is None:
                node = {}
        if not isinstance(node, Mapping):
            raise self._error(".".join(parts), "a mapping", node)
        return node

    def unknown_keys(self, slot_keys: Iterable[str] = ()) -> list[str]:
        """One warning per key in this config that hermes-core does not read, with the nearest
        known key (see `config_keys.unknown_keys`); `slot_keys` are the declared slots' keys."""
        return config_keys.unknown_keys(self._data, slot_keys)

    def string_list(self, key: str) -> list[str]:
        """The list of strings at `key`; `[]` when absent; `ConfigError` when it is not one."""
        if key in self._lists:
            return list(self._lists[key])
        *parents, last = key.split(".")
        value = self.section(*parents).get(last)
        if value is None:
            return []
        if isinstance(value, str) or not isinstance(value, list):
            raise self._error(key, "a list of strings", value)
        items = []
        for item in value:
            if not isinstance(item, (str, int, float)) or isinstance(item, bool):
                raise self._error(key, "a list of strings", value)
            items.append(str(item).strip())
        self._lists[key] = items
        return list(items)

    def number(self, key: str, default: float) -> float:
        """The non-negative number at `key`, or `default` when absent."""
        value = self.get(key, None)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            raise self._error(key, "a number of seconds, 0 or more", value)
        return float(value)

    def managed_file(self, *parts: str) -> Path | None:
        """The managed file that pins the key `parts` (one part per level, as `section` takes
        them), or None when the key is the user's: `config.managed_file("plugins", "enabled")`."""
        return self.managed.path if self.managed is not None and self.managed.pins(parts) else None

    def _error(self, key: str, expected: str, value: Any) -> ConfigError:
        managed = self.managed_file(*key.split("."))
        if managed is not None:
            return ConfigError(f"{key} in {managed} (managed by your administrator) must be {expected}, "
                               f"not {value!r}; ask your administrator to fix it", path=managed)
        where = f" in {self.path}" if self.path else ""
        return ConfigError(f"{key}{where} must be {expected}, not {value!r}; fix it in config.yaml", path=self.path)
