"""`ctx.register_platform`: messaging platforms plugins add, which `hermes gateway run` connects.

A registration is data (what Hermes' `PlatformEntry` holds): registering imports nothing and
connects nothing, so it is served by every host; a host with a gateway (`hermes_core.gateway`)
reads `manager.platforms` and starts what the operator enabled.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from typing import Any

from .._errors import RegistrationError
from .._undo import Undo, put

__all__ = ["PlatformEntry", "Platforms", "platform_entry"]

_NAME = re.compile(r"[a-z0-9][a-z0-9_\-]*")


@dataclasses.dataclass
class PlatformEntry:
    """One platform a plugin registered, with Hermes' fields (a dataclass, as Hermes' is, so that
    a plugin can ask `dataclasses.fields(PlatformEntry)` what this host takes):
    `adapter_factory(config)` makes its adapter; `check_fn()` says its dependencies are there;
    `validate_config(config)` / `is_connected(config)` that its config is usable; `required_env`
    the variables it needs; `allowed_users_env` / `allow_all_env` its authorisation variables."""

    name: str
    label: str
    adapter_factory: Callable[..., Any]
    check_fn: Callable[[], Any]
    validate_config: Callable[..., Any] | None = None
    ensure_deps_fn: Callable[[], Any] | None = None
    is_connected: Callable[..., Any] | None = None
    required_env: list[str] = dataclasses.field(default_factory=list)
    install_hint: str = ""
    setup_fn: Callable[[], Any] | None = None
    source: str = "plugin"
    plugin_name: str = ""
    allowed_users_env: str = ""
    allow_all_env: str = ""
    max_message_length: int = 0
    pii_safe: bool = False
    emoji: str = "🔌"
    allow_update_command: bool = True
    platform_hint: str = ""
    env_enablement_fn: Callable[[], Any] | None = None
    apply_yaml_config_fn: Callable[..., Any] | None = None
    cron_deliver_env_var: str = ""
    parse_target_ref_fn: Callable[..., Any] | None = None
    validate_target_ref_fn: Callable[..., Any] | None = None
    send_message_handler: Callable[..., Any] | None = None
    standalone_sender_fn: Callable[..., Any] | None = None
    target_parse_fn: Callable[..., Any] | None = None  # an older name of parse_target_ref_fn, still passed
    plugin_id: str = ""  # hermes-core's: the plugin that registered it


# What a plugin may pass: Hermes sets `source` itself (passing it is a TypeError there too).
_FIELDS = frozenset(field.name for field in dataclasses.fields(PlatformEntry)) - {"source", "plugin_id"}


def platform_entry(plugin_id: str, name: Any, label: Any, adapter_factory: Any, check_fn: Any,
                   **fields: Any) -> PlatformEntry:
    """The entry `ctx.register_platform(...)` describes. An argument Hermes' `PlatformEntry` does not
    have is a `TypeError`, as in Hermes (a plugin may catch it to retry with fewer arguments)."""
    where = f"ctx.register_platform({name!r})"
    unknown = sorted(set(fields) - _FIELDS)
    if unknown:
        raise TypeError(f"{where} of plugin {plugin_id!r}: unknown argument{'s' if len(unknown) > 1 else ''} "
                        f"{', '.join(unknown)} (PlatformEntry takes {', '.join(sorted(_FIELDS - {'plugin_id'}))})")
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise RegistrationError(f"{where}: a platform name is lower-case letters, digits, '_' or '-', as its "
                                "config.yaml key (platforms.<name>) is", plugin_id=plugin_id)
    for what, value in (("adapter_factory", adapter_factory), ("check_fn", check_fn)):
        if not callable(value):
            raise RegistrationError(f"{where}: {what} must be callable, not {type(value).__name__}",
                                    plugin_id=plugin_id)
    fields["required_env"] = list(fields.get("required_env") or [])
    fields.setdefault("plugin_name", plugin_id)
    return PlatformEntry(name=name, label=str(label or name), adapter_factory=adapter_factory, check_fn=check_fn,
                         plugin_id=plugin_id, **fields)


class Platforms:
    """The platforms plugins registered, by name (a later registration of a name replaces the
    earlier one until it is unloaded, as in Hermes)."""

    def __init__(self) -> None:
        self._entries: dict[str, PlatformEntry] = {}

    def add(self, entry: PlatformEntry) -> Undo:
        return put(self._entries, entry.name, entry)

    def get(self, name: str) -> PlatformEntry | None:
        return self._entries.get(name)

    def all(self) -> list[PlatformEntry]:
        return sorted(self._entries.values(), key=lambda entry: entry.name)

    def names(self) -> list[str]:
        return sorted(self._entries)
