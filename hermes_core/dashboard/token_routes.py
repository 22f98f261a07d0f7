"""Hermes' token routes (`hermes_cli.dashboard_auth.token_auth`): exact paths a service caller
reaches with `Authorization: Bearer <token>` instead of a login, the token checked by each auth
provider with `supports_token` in turn (`verify_token`), as in Hermes.

A plugin registers a path of its own router when it is imported or registers:

>>> from hermes_cli.dashboard_auth.token_auth import register_token_route
>>> register_token_route("/api/plugins/drain/ingest", methods=["POST"], required_scope="drain")

Registering does not make a path public: a request without a token any provider accepts is
refused (401), one whose principal lacks `required_scope` too (403), and a provider that cannot
be reached, when no other accepted the token, is a 503. `allow_session_fallback`: without a bearer
token the request goes through the dashboard's gate instead (a logged-in page may call it; the
CSRF token is then checked as for any page). `loopback_only`: only from this machine. The route's
handler finds the principal in `request.state.token_principal`. A token request needs no CSRF token
(it carries no cookie a browser would send by itself).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable

import attrs

__all__ = ["TokenCheck", "TokenRoute", "check_token", "clear_token_routes", "extract_bearer_token", "is_token_route",
           "register_token_route", "token_route"]

_lock = threading.Lock()
_routes: dict[str, TokenRoute] = {}


@attrs.frozen
class TokenRoute:
    path: str
    methods: frozenset[str] | None  # None: every method
    required_scope: str | None
    loopback_only: bool
    allow_session_fallback: bool


def register_token_route(path: str, *, methods: Iterable[str] | None = None, required_scope: str | None = None,
                         loopback_only: bool = False, allow_session_fallback: bool = False,
                         scope: str | None = None) -> None:
    """Mark `path` (an exact path, no pattern) as reached by bearer token; `scope` is an older
    Hermes' name of `required_scope`. Registering it again replaces what was registered."""
    if not isinstance(path, str) or not path.startswith("/") or "*" in path or "{" in path:
        raise ValueError(f"register_token_route: {path!r} is not an exact path (like /api/plugins/<name>/ingest)")
    with _lock:
        _routes[path] = TokenRoute(path, frozenset(m.upper() for m in methods) if methods is not None else None,
                                   required_scope or scope, bool(loopback_only), bool(allow_session_fallback))


def token_route(path: str, method: str) -> TokenRoute | None:
    """The token route a request of `method` to `path` is, or None."""
    with _lock:
        found = _routes.get(path)
    if found is None or (found.methods is not None and method.upper() not in found.methods):
        return None
    return found


def is_token_route(path: str) -> bool:
    """Whether `path` was registered (exact match), as Hermes' `is_token_route`."""
    with _lock:
        return path in _routes


def clear_token_routes() -> None:
    """Forget every token route (Hermes' test helper)."""
    with _lock:
        _routes.clear()


def extract_bearer_token(request: object) -> str:
    """The token of a request's `Authorization: Bearer <token>` header, or "" (none, or another scheme)."""
    headers = getattr(request, "headers", {}) or {}
    scheme, _, token = str(headers.get("authorization") or "").strip().partition(" ")
    return token.strip() if scheme.lower() == "bearer" else ""


_LOOPBACK = frozenset({"127.0.0.1", "::1", "localhost"})


@attrs.frozen
class TokenCheck:
    """What the gate does with a request to a token route: let it in as `principal`, refuse it
    (`status`, `message`), or (`principal` and `status` None) take it through the usual gate."""

    principal: object | None = None
    status: int | None = None
    message: str = ""


def check_token(route: TokenRoute, request: object, providers: Iterable[object]) -> TokenCheck:
    """Ask each token provider in turn about the request's bearer token (see the module)."""
    import logging

    from .provider import ProviderError

    client = getattr(getattr(request, "client", None), "host", "") or ""
    if route.loopback_only and client not in _LOOPBACK:
        return TokenCheck(status=403, message=f"{route.path} is served to this machine only")
    token = extract_bearer_token(request)
    if not token:
        if route.allow_session_fallback:
            return TokenCheck()
        return TokenCheck(status=401, message=f"{route.path} needs a bearer token (Authorization: Bearer ...)")
    unreachable: Exception | None = None
    for provider in providers:
        if not getattr(provider, "supports_token", False):
            continue
        try:
            principal = provider.verify_token(token=token)  # type: ignore[attr-defined]
        except ProviderError as exc:
            unreachable = exc
            continue
        except Exception as exc:  # noqa: BLE001 - a plugin's provider never takes the dashboard down
            logging.getLogger("hermes.dashboard").warning(
                "auth provider %r failed to check a token: %s", getattr(provider, "name", "?"), _said(exc, token))
            unreachable = exc
            continue
        if principal is None:
            continue
        scopes = tuple(getattr(principal, "scopes", ()) or ())
        if route.required_scope and route.required_scope not in scopes:
            return TokenCheck(status=403, message=f"the token lacks the scope {route.required_scope!r} "
                                                  f"{route.path} needs")
        return TokenCheck(principal=principal)
    if unreachable is not None:
        return TokenCheck(status=503, message=f"an auth provider is unreachable: {_said(unreachable, token)}; try again")
    if route.allow_session_fallback:
        return TokenCheck()  # perhaps the dashboard's own session token, on loopback
    return TokenCheck(status=401, message="no auth provider accepts that token")


def _said(exc: BaseException, token: str) -> str:
    """A provider's error as the log and the caller may see it: never the token it was handed, nor
    any other secret its text carries (a URL's password, a key)."""
    from hermes_core import redact_secrets

    text = str(exc)
    return redact_secrets(text.replace(token, "***") if token else text)
