"""Who may talk to the agent through the gateway, by Hermes' rules.

In order: the webhook platform (it checks its shared secret itself) and adapters that say their
platform authorised the sender; the platform's allow-all variable (`allow_all_env` of its
registration); a sender paired with `hermes pairing approve`; then the allowlists (the
platform's `allowed_users_env` and `GATEWAY_ALLOWED_USERS`, comma-separated, `*` for anyone).
With no allowlist set at all, the adapter's `allow_from` setting, else `GATEWAY_ALLOW_ALL_USERS`.
Everyone else is refused: in a direct message they get a pairing code (or nothing, with
`gateway.unauthorized_dm_behavior: ignore`), in a group nothing.
"""

from __future__ import annotations

import os
from typing import Any

from .config import Platform
from .pairing import PairingStore
from .session import SessionSource

__all__ = ["authorised", "PAIRING_REPLY", "PAIRING_BUSY_REPLY", "GLOBAL_ALLOWED", "GLOBAL_ALLOW_ALL"]

GLOBAL_ALLOWED = "GATEWAY_ALLOWED_USERS"
GLOBAL_ALLOW_ALL = "GATEWAY_ALLOW_ALL_USERS"
PAIRING_REPLY = ("Hi~ I don't recognize you yet!\n\nHere's your pairing code: `{code}`\n\n"
                 "Ask the bot owner to run:\n`hermes pairing approve {platform} {code}`")
PAIRING_BUSY_REPLY = "Too many pairing requests right now~ Please try again later!"


def _yes(name: str) -> bool:
    return bool(name) and os.getenv(name, "").strip().lower() in ("true", "1", "yes")


def _listed(name: str) -> set[str]:
    return {part.strip() for part in os.getenv(name, "").split(",") if part.strip()} if name else set()


def authorised(source: SessionSource, entry: Any, adapter: Any, pairing: PairingStore) -> bool:
    """Whether the sender of a message from `source` may talk to the agent (see the module)."""
    if source.platform in (Platform.WEBHOOK, Platform.HOMEASSISTANT) or source.delivered_via_upstream_relay:
        return True
    if getattr(adapter, "authorization_is_upstream", False) is True:
        return True
    if _yes(getattr(entry, "allow_all_env", "")) or source.role_authorized:
        return True
    user = source.user_id_alt or source.user_id
    if user and pairing.is_approved(source.platform.value, user):
        return True
    allowed = _listed(getattr(entry, "allowed_users_env", "")) | _listed(GLOBAL_ALLOWED)
    if not allowed:
        extra = getattr(getattr(adapter, "config", None), "extra", None) or {}
        allow_from = extra.get("group_allow_from" if source.chat_type != "dm" else "allow_from") or []
        if isinstance(allow_from, str):
            allow_from = [part.strip() for part in allow_from.split(",")]
        if "*" in allow_from or (user is not None and str(user) in map(str, allow_from)):
            return True
        return _yes(GLOBAL_ALLOW_ALL)
    if "*" in allowed or not user:
        return "*" in allowed
    return user in allowed or user.split("@", 1)[0] in allowed
