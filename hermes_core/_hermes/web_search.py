"""Hermes' `agent.web_search_provider` helpers (the base class is `hermes_core.providers`)."""

from __future__ import annotations

from .config import get_env_value

__all__ = ["get_provider_env"]


def get_provider_env(name: str) -> str:
    """The environment variable `name` (else its `$HERMES_HOME/.env` value), stripped; "" when unset."""
    return (get_env_value(name) or "").strip()
