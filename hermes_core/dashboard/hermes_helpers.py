"""Hermes' cookie and prefix helpers for a provider's own routes (`hermes_cli.dashboard_auth.cookies`,
`hermes_cli.dashboard_auth.prefix`): a provider whose login ends at a callback of its own sets the
dashboard's session cookies with them, exactly as the dashboard's own login does.

>>> from hermes_cli.dashboard_auth.cookies import detect_https, set_session_cookies
>>> set_session_cookies(response, access_token=s.access_token, refresh_token=s.refresh_token,
...                     access_token_expires_in=900, use_https=detect_https(request))
"""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote

from .gate import ACCESS_COOKIE, PKCE_COOKIE, REFRESH_AGE, REFRESH_COOKIE

__all__ = ["SESSION_AT_COOKIE", "SESSION_RT_COOKIE", "PKCE_COOKIE", "clear_session_cookies", "detect_https",
           "prefix_from_request", "read_session_cookies", "set_session_cookies"]

SESSION_AT_COOKIE, SESSION_RT_COOKIE = ACCESS_COOKIE, REFRESH_COOKIE


def detect_https(request: Any) -> bool:
    """Whether the dashboard was reached over HTTPS (its cookies are then `Secure`)."""
    return str(request.url.scheme) == "https"


def prefix_from_request(request: Any) -> str:
    """The path prefix the dashboard is served under: always "" here (it is served at the root)."""
    return ""


def set_session_cookies(response: Any, *, access_token: str, refresh_token: str, access_token_expires_in: int,
                        use_https: bool, prefix: str = "", provider: str = "") -> None:
    """The session cookies of a login: HttpOnly, SameSite=Lax, Secure over HTTPS (no refresh cookie when empty)."""
    response.set_cookie(SESSION_AT_COOKIE, access_token, max_age=int(access_token_expires_in), path="/",
                        httponly=True, samesite="lax", secure=use_https)
    if refresh_token:
        response.set_cookie(SESSION_RT_COOKIE, refresh_token, max_age=REFRESH_AGE, path="/", httponly=True,
                            samesite="lax", secure=use_https)


def clear_session_cookies(response: Any, *, prefix: str = "") -> None:
    """Delete the session cookies (a logout)."""
    for name in (SESSION_AT_COOKIE, SESSION_RT_COOKIE, PKCE_COOKIE):
        response.set_cookie(name, "", max_age=0, path="/", httponly=True, samesite="lax")


def read_session_cookies(request: Any) -> tuple[str | None, str | None]:
    """(access token, refresh token) of a request's cookies, either None."""
    access, refresh = request.cookies.get(SESSION_AT_COOKIE), request.cookies.get(SESSION_RT_COOKIE)
    return (unquote(access) if access else None), (unquote(refresh) if refresh else None)
