"""`gateway.platform_registry.platform_registry` (also `plugin_runtime.platform_registry`):
Hermes' registry of messaging platforms, answered by the manager's (`manager.platforms`).

`register(entry)` while a plugin loads is that plugin's `ctx.register_platform(...)` with the
entry's fields (taken back when it unloads); `get`, `is_registered`, `all_entries`,
`plugin_entries`, `registered_names` and `create_adapter` read the platforms of the manager
loading plugins in this thread, else of the one that loaded plugins last in this process.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from typing import Any

from .._errors import RegistrationError
from . import names as hermes_names

__all__ = ["ServedPlatformRegistry", "platform_registry"]

log = logging.getLogger("hermes_core.hermes_names")


def _fields(entry: Any) -> dict[str, Any]:
    if dataclasses.is_dataclass(entry) and not isinstance(entry, type):
        return {field.name: getattr(entry, field.name) for field in dataclasses.fields(entry)}
    return dict(vars(entry))


class ServedPlatformRegistry:
    """Hermes' platform registry singleton (see the module)."""

    def register(self, entry: Any, *, scope: str | None = None) -> None:
        plugin = hermes_names.loading()
        if plugin is None:
            raise RegistrationError(
                "gateway.platform_registry.register was called outside a plugin's load: hermes-core registers a "
                "plugin's platforms while it loads; call it from register(ctx), or use ctx.register_platform(...)")
        fields = {k: v for k, v in _fields(entry).items() if k not in ("source", "plugin_id")}
        if fields.get("plugin_name") == plugin.plugin_id:
            fields.pop("plugin_name")
        plugin.ctx().register_platform(fields.pop("name"), fields.pop("label"), fields.pop("adapter_factory"),
                                       fields.pop("check_fn"), **fields)

    def register_deferred(self, name: str, loader: Callable[[], Any], *, scope: str | None = None) -> None:
        """Register what `loader()` returns now (hermes-core has no deferred registrations)."""
        self.register(loader(), scope=scope)

    def unregister(self, name: str, *, scope: str | None = None) -> bool:
        log.warning("gateway.platform_registry.unregister(%r) is not served: a platform goes when its plugin "
                    "unloads", name)
        return False

    def _entries(self) -> list[Any]:
        platforms = hermes_names.current_platforms()
        return list(platforms.all()) if platforms is not None else []

    def get(self, name: str) -> Any | None:
        return next((e for e in self._entries() if e.name == name), None)

    def is_registered(self, name: str) -> bool:
        return self.get(name) is not None

    def all_entries(self) -> list[Any]:
        return self._entries()

    def plugin_entries(self) -> list[Any]:
        return [e for e in self._entries() if e.source == "plugin"]

    def registered_names(self) -> list[str]:
        return [e.name for e in self._entries()]

    def current_scope_key(self) -> str | None:
        return None  # one home: no profile scopes

    def create_adapter(self, name: str, config: Any) -> Any | None:
        """The platform's adapter for `config`, or None when it is unknown or its checks fail."""
        entry = self.get(name)
        if entry is None:
            return None
        try:
            if not entry.check_fn() or (entry.validate_config is not None and not entry.validate_config(config)):
                return None
            return entry.adapter_factory(config)
        except Exception as exc:  # noqa: BLE001 - as Hermes: a failing factory gives no adapter
            log.warning("platform %r: creating its adapter failed: %s: %s", name, type(exc).__name__, exc)
            return None


platform_registry = ServedPlatformRegistry()
