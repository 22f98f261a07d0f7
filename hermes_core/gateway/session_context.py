"""`gateway.session_context`, as Hermes defines it: the conversation a turn belongs to, in
context variables (`HERMES_SESSION_PLATFORM`, `HERMES_SESSION_CHAT_ID`, ...), so that tools and
hooks running for it read their own conversation's values, never another's.

`get_session_env(name)` is `os.getenv` for those names: the turn's value when the gateway set
one (even ""), else the environment's, else `default`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from contextvars import ContextVar, Token
from typing import Any

__all__ = ["SESSION_VARIABLES", "get_session_env", "set_session_vars", "clear_session_vars", "reset_session_vars"]

_UNSET: Any = object()
SESSION_VARIABLES = (
    "HERMES_SESSION_PLATFORM", "HERMES_SESSION_SOURCE", "HERMES_SESSION_CHAT_ID", "HERMES_SESSION_CHAT_TYPE",
    "HERMES_SESSION_CHAT_NAME", "HERMES_SESSION_THREAD_ID", "HERMES_SESSION_USER_ID", "HERMES_SESSION_USER_ID_ALT",
    "HERMES_SESSION_USER_NAME", "HERMES_SESSION_SCOPE_ID", "HERMES_SESSION_KEY", "HERMES_SESSION_ID",
    "HERMES_SESSION_MESSAGE_ID", "HERMES_SESSION_PROFILE", "HERMES_SESSION_PARENT_CHAT_ID",
)
_VARS: dict[str, ContextVar[Any]] = {name: ContextVar(name.lower(), default=_UNSET) for name in SESSION_VARIABLES}
# set_session_vars' keyword → variable
_KEYWORDS = {name.removeprefix("HERMES_SESSION_").lower(): name for name in SESSION_VARIABLES
             if name not in ("HERMES_SESSION_KEY", "HERMES_SESSION_ID")}
_KEYWORDS.update(session_key="HERMES_SESSION_KEY", session_id="HERMES_SESSION_ID")


def get_session_env(name: str, default: str = "") -> str:
    """The current conversation's value of `name`, else the environment's, else `default`."""
    var = _VARS.get(name)
    if var is not None:
        value = var.get()
        if value is not _UNSET:
            return str(value)
    return os.getenv(name, default)


def set_session_vars(**values: Any) -> list[Token[Any]]:
    """Set the conversation's variables by keyword (`platform=`, `chat_id=`, `session_key=`, ...;
    every one not given becomes ""); returns the tokens `clear_session_vars` takes. Hermes' other
    keywords (`cwd`, `async_delivery`, ...) are accepted and carry nothing hermes-core reads."""
    return [_VARS[name].set(str(values.get(keyword) or "")) for keyword, name in _KEYWORDS.items()]


def clear_session_vars(tokens: Iterable[Token[Any]] = ()) -> None:
    """Set every variable to "" (a turn is over; the environment no longer shows through)."""
    del tokens
    for var in _VARS.values():
        var.set("")


def reset_session_vars() -> None:
    """Forget every value: `get_session_env` reads the environment again."""
    for var in _VARS.values():
        var.set(_UNSET)
