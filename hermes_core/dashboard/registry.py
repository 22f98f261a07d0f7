"""The dashboard's auth providers: what plugins registered (`ctx.register_dashboard_auth_provider`),
in order, each with the plugin that registered it and the public paths it declared.

The dashboard serves the "dashboard" capability with an `AuthProviders` before its plugins load;
a registration that is not a `DashboardAuthProvider`, or declares a public path outside its own
plugin's router, is a warning and ignored (as in Hermes, it never raises into the plugin).
"""

from __future__ import annotations

import logging
import re
import threading
from typing import Any

import attrs

from .provider import DashboardAuthProvider

__all__ = ["AuthProviders", "Registered", "list_providers", "list_token_providers", "current"]

log = logging.getLogger("hermes.dashboard")
_NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")
_current: AuthProviders | None = None


@attrs.frozen
class Registered:
    """A provider and the plugin that registered it."""

    provider: DashboardAuthProvider
    plugin_id: str
    public_paths: tuple[str, ...]


class AuthProviders:
    """The stack of providers (by name: a later registration of a name replaces the earlier one)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: dict[str, Registered] = {}
        self.problems: list[str] = []

    def register_dashboard_auth_provider(self, plugin_id: str, provider: Any) -> None:
        """`ctx.register_dashboard_auth_provider(provider)` of plugin `plugin_id`."""
        problem = _problem(plugin_id, provider)
        if problem is not None:
            line = f"plugin {plugin_id!r}: its dashboard auth provider is ignored: {problem}"
            self.problems.append(line)
            log.warning("%s", line)
            return
        paths = tuple(str(path) for path in getattr(provider, "public_paths", ()) or ())
        with self._lock:
            self._entries[provider.name] = Registered(provider, plugin_id, paths)

    def all(self) -> list[Registered]:
        with self._lock:
            return list(self._entries.values())

    def providers(self) -> list[DashboardAuthProvider]:
        return [entry.provider for entry in self.all()]

    def get(self, name: str) -> DashboardAuthProvider | None:
        with self._lock:
            entry = self._entries.get(name)
        return entry.provider if entry is not None else None

    def public_paths(self) -> frozenset[str]:
        return frozenset(path for entry in self.all() for path in entry.public_paths)

    def make_current(self) -> None:
        """Answer Hermes' `list_providers()` from these (the running dashboard's)."""
        global _current
        _current = self


def _problem(plugin_id: str, provider: Any) -> str | None:
    if not isinstance(provider, DashboardAuthProvider):
        return (f"{type(provider).__name__} is not a DashboardAuthProvider (subclass "
                "hermes_cli.dashboard_auth.DashboardAuthProvider)")
    name = getattr(provider, "name", "")
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        return f"its name {name!r} is not a lowercase id (letters, digits, - and _)"
    if not getattr(provider, "display_name", ""):
        return "it has no display_name"
    own = f"/api/plugins/{plugin_id}/"
    for path in getattr(provider, "public_paths", ()) or ():
        if not isinstance(path, str) or not path.startswith(own) or ".." in path or "*" in path:
            return (f"its public path {path!r} is not an exact path under its own plugin's router ({own}...); "
                    "only those may be reached before login")
    return None


def current() -> AuthProviders | None:
    return _current


def list_providers() -> list[DashboardAuthProvider]:
    """Hermes' `list_providers()`: the running dashboard's providers, in the order they registered."""
    return _current.providers() if _current is not None else []


def list_token_providers() -> list[DashboardAuthProvider]:
    """Hermes' `list_token_providers()`: the running dashboard's providers that check bearer tokens."""
    return [provider for provider in list_providers() if provider.supports_token]
