"""Hermes' `agent.secret_scope`: credentials by environment-variable name.

hermes-core runs one profile per process, so there is no multiplexing: `get_secret` reads a
scope set in this context, else the environment, else `$HERMES_HOME/.env` (which Hermes loads
into the environment at start-up).
"""

from __future__ import annotations

import contextvars
import os
from collections.abc import Mapping

from .config import load_env

__all__ = [
    "UnscopedSecretError",
    "current_secret_scope",
    "get_secret",
    "is_multiplex_active",
    "reset_secret_scope",
    "set_secret_scope",
]

_SCOPE: contextvars.ContextVar[Mapping[str, str] | None] = contextvars.ContextVar("hermes_secret_scope", default=None)


class UnscopedSecretError(RuntimeError):
    """Hermes raises it for an unscoped read while it multiplexes profiles; hermes-core never does."""


def is_multiplex_active() -> bool:
    return False


def set_secret_scope(secrets: Mapping[str, str] | None) -> contextvars.Token[Mapping[str, str] | None]:
    """Read secrets from `secrets` (before the environment) in this context; returns the reset token."""
    return _SCOPE.set(secrets)


def reset_secret_scope(token: contextvars.Token[Mapping[str, str] | None]) -> None:
    _SCOPE.reset(token)


def current_secret_scope() -> Mapping[str, str] | None:
    return _SCOPE.get()


def get_secret(name: str, default: str | None = None) -> str | None:
    """The credential `name`: from this context's scope, the environment, or `$HERMES_HOME/.env`."""
    scope = _SCOPE.get()
    for source in (scope or {}, os.environ):
        value = source.get(name)
        if value is not None:
            return value
    return load_env().get(name, default)
