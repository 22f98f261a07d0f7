"""`ctx.register_platform`: messaging platforms plugins add, which `hermes gateway run` connects;
and `ctx.register_slack_action_handler`: handlers of the interactive actions an adapter reports.

A registration is data (what Hermes' `PlatformEntry` holds): registering imports nothing and
connects nothing, so it is served by every host; a host with a gateway (`hermes_core.gateway`)
reads `manager.platforms` and starts what the operator enabled.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping
from typing import Any

from .._errors import RegistrationError
from .._undo import Undo, put

__all__ = ["PlatformEntry", "Platforms", "SlackActions", "action_matches", "platform_entry", "slack_constraint"]

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
        self.slack_actions = SlackActions()

    def add(self, entry: PlatformEntry) -> Undo:
        return put(self._entries, entry.name, entry)

    def get(self, name: str) -> PlatformEntry | None:
        return self._entries.get(name)

    def all(self) -> list[PlatformEntry]:
        return sorted(self._entries.values(), key=lambda entry: entry.name)

    def names(self) -> list[str]:
        return sorted(self._entries)


class SlackActions:
    """The interactive-action handlers plugins registered (`ctx.register_slack_action_handler`),
    in registration order: for an action, the first whose constraint matches is called, as
    slack_bolt calls the first matching listener. A constraint is an `action_id` (exact), a
    compiled pattern (searched in the `action_id`), or a mapping of `action_id` / `block_id` /
    `type` constraints."""

    def __init__(self) -> None:
        self._handlers: list[tuple[Any, Callable[..., Any], str]] = []

    def add(self, constraint: Any, callback: Callable[..., Any], plugin_id: str) -> Undo:
        entry = (constraint, callback, plugin_id)
        self._handlers.append(entry)

        def undo() -> None:
            if any(e is entry for e in self._handlers):
                self._handlers[:] = [e for e in self._handlers if e is not entry]

        return undo

    def handlers(self) -> list[tuple[Any, Callable[..., Any], str]]:
        """`(action_id, callback, plugin id)` of each handler, in order (Hermes' shape)."""
        return list(self._handlers)

    async def dispatch(self, ack: Any, body: Mapping[str, Any], action: Mapping[str, Any]) -> bool:
        """Call the first matching handler with `(ack, body, action)`; False when none matches. A
        handler that raises is logged and the action acknowledged (so the platform does not retry it)."""
        import inspect
        import logging

        for constraint, callback, plugin_id in list(self._handlers):
            if not action_matches(constraint, body, action):
                continue
            try:
                result = callback(ack, body, action)
                if inspect.isawaitable(result):
                    await result
            except Exception as exc:  # noqa: BLE001 - a plugin's handler never takes the adapter down
                logging.getLogger("hermes.gateway").error(
                    "plugin %r: its Slack action handler for %r raised %s: %s", plugin_id, constraint,
                    type(exc).__name__, exc, exc_info=True)
                await _ack_quietly(ack)
            return True
        return False


def slack_constraint(constraint: Any) -> str | None:
    """Why `constraint` cannot select an action (None: it can)."""
    if isinstance(constraint, str):
        return None if constraint.strip() else "an empty action_id"
    if isinstance(constraint, re.Pattern):
        return None
    if isinstance(constraint, Mapping) and constraint and set(constraint) <= {"action_id", "block_id", "type"}:
        bad = [k for k, v in constraint.items() if not isinstance(v, (str, re.Pattern))]
        return f"a constraint whose {', '.join(bad)} is neither a string nor a pattern" if bad else None
    return f"an action_id of type {type(constraint).__name__} (a string, a compiled pattern or a mapping)"


def action_matches(constraint: Any, body: Mapping[str, Any], action: Mapping[str, Any]) -> bool:
    action_id = action.get("action_id") or action.get("callback_id")
    if not isinstance(constraint, Mapping):
        return _one(constraint, action_id)
    if "type" in constraint and not _one(constraint["type"], body.get("type")):
        return False
    return all(_one(constraint[key], action.get(key)) for key in ("action_id", "block_id") if key in constraint)


def _one(constraint: Any, value: Any) -> bool:
    if not isinstance(value, str):
        return False
    return constraint.search(value) is not None if isinstance(constraint, re.Pattern) else constraint == value


async def _ack_quietly(ack: Any) -> None:
    import inspect

    try:
        done = ack()
        if inspect.isawaitable(done):
            await done
    except Exception:  # noqa: BLE001 - best effort, as Hermes'
        pass
