"""Hermes' `VALID_HOOKS`: the names `ctx.register_hook` accepts, as Hermes' plugins read them
(`from hermes_cli.plugins import VALID_HOOKS`) to check a hook before registering it."""

from __future__ import annotations

from ..hookspecs import LIFECYCLE_HOOKS

__all__ = ["VALID_HOOKS"]

VALID_HOOKS: frozenset[str] = frozenset(LIFECYCLE_HOOKS)
