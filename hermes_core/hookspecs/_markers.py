"""Declaring hook specs: pluggy's markers for the project `hermes`, and each spec's family.

`hookspecs` (the public catalogue) and `hookspecs.host` declare their specs with `declare`; the
catalogue then lists every hook, in its own order, from what was declared.
"""

from __future__ import annotations

from collections.abc import Callable
from types import FunctionType
from typing import Any, NamedTuple, TypeVar

import pluggy

__all__ = [
    "PROJECT_NAME", "TELEMETRY_SCHEMA_VERSION", "UNVERSIONED_HOOKS", "HookFamily", "declare", "declared", "hookimpl",
    "hookspec",
]

PROJECT_NAME = "hermes"

# What Hermes passes as `telemetry_schema_version` on every lifecycle hook call...
TELEMETRY_SCHEMA_VERSION = "hermes.observer.v1"
# ...but these, which carry event-local payload versions instead.
UNVERSIONED_HOOKS = frozenset({"gateway_platform_event"})

hookspec = pluggy.HookspecMarker(PROJECT_NAME)
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)

F = TypeVar("F", bound=Callable[..., Any])


class HookFamily(NamedTuple):
    """What a hook is: its family (`registration`, `cli`, `lifecycle`) and, for a registration
    hook, what its return value registers: `tools`, `commands`, or a slot's name."""

    family: str
    returns: str | None = None
    spec: Callable[..., Any] | None = None


_declared: dict[Callable[..., Any], HookFamily] = {}


def declare(family: str, returns: str | None = None) -> Callable[[F], F]:
    """Mark a function as the spec of a hook of `family` (see `HookFamily`)."""

    def mark(spec: F) -> F:
        _declared[spec] = HookFamily(family, returns, spec)
        return hookspec(spec)

    return mark


def declared(value: Any) -> HookFamily | None:
    """The family `value` was declared with, or None when it is no hook spec."""
    return _declared.get(value) if isinstance(value, FunctionType) else None
