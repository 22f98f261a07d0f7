"""`ctx.state`: a plugin's durable JSON key-value store, one file per plugin."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from .._errors import PluginStateError
from .._files import write_atomic

__all__ = ["PluginState", "STATE_QUOTA_BYTES"]


STATE_QUOTA_BYTES = 10 * 1024 * 1024


class PluginState:
    """A plugin's durable key-value store: JSON values, kept in
    `$HERMES_HOME/plugin-data/<plugin id>/state.json`, written atomically on every change, at
    most 10 MB. Works like a dict: `state["k"] = v`, `state.get("k", d)`, `del state["k"]`,
    `"k" in state`, `state.keys()`, plus `set`, `delete`, `update`, `clear`."""

    def __init__(self, path: Path, plugin_id: str) -> None:
        self.path = path
        self._plugin_id = plugin_id
        self._lock = threading.RLock()
        self._data: dict[str, Any] | None = None

    def __repr__(self) -> str:
        return f"<PluginState of {self._plugin_id!r} at {self.path}>"

    def _load(self) -> dict[str, Any]:
        if self._data is None:
            try:
                text = self.path.read_text(encoding="utf-8")
            except FileNotFoundError:
                text = "{}"
            except OSError as exc:
                raise PluginStateError(f"cannot read the state of plugin {self._plugin_id!r} ({self.path}): {exc}") from None
            try:
                data = json.loads(text)
            except ValueError as exc:
                raise PluginStateError(
                    f"the state of plugin {self._plugin_id!r} ({self.path}) is not JSON ({exc}); "
                    "fix or remove the file") from None
            self._data = data if isinstance(data, dict) else {}
        return self._data

    def _write(self, data: dict[str, Any]) -> None:
        try:
            text = json.dumps(data, ensure_ascii=False, sort_keys=True)
        except (TypeError, ValueError) as exc:
            raise PluginStateError(f"ctx.state of plugin {self._plugin_id!r} takes JSON values only: {exc}") from None
        if len(text.encode("utf-8")) > STATE_QUOTA_BYTES:
            raise PluginStateError(
                f"ctx.state of plugin {self._plugin_id!r} would exceed its {STATE_QUOTA_BYTES // 2**20} MB quota; "
                "keep large data in files under the plugin's own folder")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(self.path, text)
        except OSError as exc:
            raise PluginStateError(f"cannot write the state of plugin {self._plugin_id!r} ({self.path}): {exc}; "
                                   "the previous state was kept") from None
        self._data = data

    def _change(self, change: Callable[[dict[str, Any]], None]) -> None:
        with self._lock:
            data = dict(self._load())
            change(data)
            self._write(data)

    def get(self, key: str, default: Any = None) -> Any:
        with self._lock:
            return self._load().get(key, default)

    def set(self, key: str, value: Any) -> None:
        self._change(lambda data: data.__setitem__(_state_key(key), value))

    def delete(self, key: str) -> bool:
        """Remove `key`; whether it was there."""
        with self._lock:
            if key not in self._load():
                return False
            self._change(lambda data: data.pop(key, None))
            return True

    def update(self, values: Mapping[str, Any]) -> None:
        self._change(lambda data: data.update({_state_key(k): v for k, v in values.items()}))

    def clear(self) -> None:
        self._change(lambda data: data.clear())

    def keys(self) -> list[str]:
        with self._lock:
            return list(self._load())

    def items(self) -> list[tuple[str, Any]]:
        with self._lock:
            return list(self._load().items())

    def __getitem__(self, key: str) -> Any:
        with self._lock:
            return self._load()[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self.set(key, value)

    def __delitem__(self, key: str) -> None:
        if not self.delete(key):
            raise KeyError(key)

    def __contains__(self, key: object) -> bool:
        with self._lock:
            return key in self._load()

    def __len__(self) -> int:
        with self._lock:
            return len(self._load())


def _state_key(key: Any) -> str:
    if not isinstance(key, str) or not key:
        raise PluginStateError(f"ctx.state keys are non-empty strings, not {key!r}")
    return key
