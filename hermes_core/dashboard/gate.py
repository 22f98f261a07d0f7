"""Who is asking: the dashboard's gate, in front of every path but the login's.

Two modes. On loopback (`token` set) a per-process session token lets a request in: Hermes'
`X-Hermes-Session-Token` header, `Authorization: Bearer`, or the HttpOnly cookie that opening the
URL `hermes dashboard` prints (`?token=`) sets. Otherwise (any other address, or `--login`) the
auth providers plugins registered decide: the access cookie is checked by each provider in turn
(`verify_session`), then the refresh cookie (`refresh_session`), else the login page.

A state-changing request also needs the CSRF token of its session (`X-CSRF-Token`), which every
page carries; only the login's own paths, and the paths a provider declared public, go without.
"""

from __future__ import annotations

import secrets
import time
from typing import Any
from urllib.parse import quote, unquote

import attrs

from hermes_core.hosting import secret_matches

from .provider import ProviderError, RefreshExpiredError, Session
from .registry import AuthProviders
from .security import cookie, csrf_token, expired_cookie

__all__ = ["Gate", "Who", "TOKEN_COOKIE", "ACCESS_COOKIE", "REFRESH_COOKIE", "PKCE_COOKIE", "PUBLIC_PATHS"]

TOKEN_COOKIE = "hermes_dashboard_token"
ACCESS_COOKIE, REFRESH_COOKIE, PKCE_COOKIE = "hermes_session_at", "hermes_session_rt", "hermes_session_pkce"
LOGIN_PROVIDER_COOKIE = "hermes_login_provider"
PUBLIC_PATHS = frozenset({"/login", "/auth/login", "/auth/callback", "/auth/password-login", "/api/auth/providers",
                          "/api/status", "/favicon.ico"})
PUBLIC_PREFIXES = ("/static/",)
REFRESH_AGE = 7 * 24 * 3600


@attrs.frozen
class Who:
    """Who a request is from: `identity` (provider:user id, or `operator` on loopback), a name to show."""

    identity: str
    name: str
    provider: str = ""


class Gate:
    """The checks of every request (see the module)."""

    def __init__(self, providers: AuthProviders, *, token: str | None, secure: bool) -> None:
        self.providers, self.token, self.secure = providers, token, secure
        self.secret = secrets.token_bytes(32)

    @property
    def login_required(self) -> bool:
        return self.token is None

    def public(self, path: str) -> bool:
        return path in PUBLIC_PATHS or path.startswith(PUBLIC_PREFIXES) or (
            self.login_required and path in self.providers.public_paths())

    def csrf(self, who: Who) -> str:
        return csrf_token(self.secret, who.identity)

    def csrf_ok(self, who: Who, given: str | None, headers: Any = None) -> bool:
        """Whether a state-changing request is the page's own: its CSRF token, or (on loopback) the
        session token itself in a header, which no other site's page can know or send."""
        if self.token is not None and headers is not None:
            sent = headers.get("x-hermes-session-token") or _bearer(headers.get("authorization"))
            if sent and secret_matches(sent, self.token):
                return True
        return secret_matches(given or "", self.csrf(who))

    # -- identifying ---------------------------------------------------------------------------

    def identify(self, headers: Any, cookies: dict[str, str]) -> tuple[Who | None, list[str]]:
        """Who sent a request with `headers` and `cookies`, and the cookies to set on its answer (a
        refreshed session's); `ProviderError` when a provider that must be asked cannot be reached."""
        if self.token is not None:
            # any of them (a plugin page written for Hermes may send a header it could not fill in)
            given = (headers.get("x-hermes-session-token"), _bearer(headers.get("authorization")),
                     cookies.get(TOKEN_COOKIE))
            known = any(secret_matches(value, self.token) for value in given if value)
            return (Who("operator", "operator (loopback)") if known else None), []
        access = unquote(cookies.get(ACCESS_COOKIE, ""))
        if access:
            for provider in self.providers.providers():
                if not provider.supports_session:
                    continue
                found = provider.verify_session(access_token=access)
                if found is not None:
                    return _who(found), []
        refresh = unquote(cookies.get(REFRESH_COOKIE, ""))
        if refresh:
            unreachable: ProviderError | None = None
            for provider in self.providers.providers():
                if not provider.supports_session:
                    continue
                try:
                    renewed = provider.refresh_session(refresh_token=refresh)
                except RefreshExpiredError:
                    continue
                except ProviderError as exc:
                    unreachable = exc
                    continue
                except NotImplementedError:
                    continue
                return _who(renewed), self.session_cookies(renewed)
            if unreachable is not None:
                raise unreachable
        return None, []

    # -- cookies -------------------------------------------------------------------------------

    def token_cookie(self) -> str:
        return cookie(TOKEN_COOKIE, self.token or "", secure=self.secure)

    def session_cookies(self, session: Session) -> list[str]:
        age = max(int(session.expires_at - time.time()), 60) if session.expires_at else 3600
        made = [cookie(ACCESS_COOKIE, quote(session.access_token, safe=""), secure=self.secure, max_age=age)]
        if session.refresh_token:
            made.append(cookie(REFRESH_COOKIE, quote(session.refresh_token, safe=""), secure=self.secure,
                               max_age=REFRESH_AGE))
        return [*made, expired_cookie(PKCE_COOKIE, secure=self.secure),
                expired_cookie(LOGIN_PROVIDER_COOKIE, secure=self.secure)]

    def logout_cookies(self) -> list[str]:
        return [expired_cookie(name, secure=self.secure) for name in (ACCESS_COOKIE, REFRESH_COOKIE, TOKEN_COOKIE)]

    def login_start_cookies(self, provider: str, payload: dict[str, str]) -> list[str]:
        made = [cookie(name, quote(str(value), safe=""), secure=self.secure, max_age=600)
                for name, value in payload.items() if _cookie_name(name)]
        return [*made, cookie(LOGIN_PROVIDER_COOKIE, provider, secure=self.secure, max_age=600)]


def _who(session: Session) -> Who:
    return Who(f"{session.provider}:{session.user_id}", session.display_name or session.email or session.user_id,
               session.provider)


def _bearer(value: str | None) -> str:
    scheme, _, token = (value or "").strip().partition(" ")
    return token.strip() if scheme.lower() == "bearer" else ""


def _cookie_name(name: str) -> bool:
    return bool(name) and all(ch.isalnum() or ch in "_-" for ch in name)
