"""Hermes' dashboard auth provider interface (`hermes_cli.dashboard_auth`), for plugin authors.

A provider plugin subclasses `DashboardAuthProvider` and registers an instance from its
`register(ctx)`; `hermes dashboard` on any address but loopback lets only its sessions in:

>>> class Team(DashboardAuthProvider):
...     name, display_name, supports_password = "team", "Team login", True
...     def complete_password_login(self, *, username, password):
...         ...  # check them; InvalidCredentialsError when wrong
>>> ctx.register_dashboard_auth_provider(Team())

Beyond Hermes: `public_paths` names the paths of the plugin's own router
(`/api/plugins/<plugin id>/...`) that its login flow needs before anyone is logged in (an
identity-aware proxy's callback, say); every other path stays behind the login.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field

__all__ = ["DashboardAuthProvider", "InvalidCodeError", "InvalidCredentialsError", "LoginStart", "ProviderError",
           "RefreshExpiredError", "Session", "TokenPrincipal", "assert_protocol_compliance",
           "classify_jwks_lookup_error"]


@dataclass(frozen=True)
class Session:
    """A verified person: what `complete_login`, `verify_session` and `refresh_session` return.
    The tokens are the provider's own (the dashboard keeps them in HttpOnly cookies, never shows them)."""

    user_id: str
    email: str
    display_name: str
    org_id: str
    provider: str
    expires_at: int
    access_token: str
    refresh_token: str


@dataclass(frozen=True)
class TokenPrincipal:
    """A verified non-interactive caller (`verify_token`): its id, provider and scopes."""

    principal: str
    provider: str
    scopes: tuple[str, ...] = ()


@dataclass(frozen=True)
class LoginStart:
    """The first leg of a redirect login: where the browser goes, and the cookies (name: value) set
    on that redirect, read back at the callback (`hermes_session_pkce` is given to
    `complete_login` as `code_verifier`)."""

    redirect_url: str
    cookie_payload: dict[str, str] = field(default_factory=dict)


class ProviderError(Exception):
    """The identity provider cannot be reached: the dashboard answers 503 and keeps the cookies."""


class InvalidCodeError(Exception):
    """A login callback's code or state is not valid: 400."""


class InvalidCredentialsError(Exception):
    """A user name and password were refused: a generic 401 (which of the two is never said)."""


class RefreshExpiredError(Exception):
    """This provider does not take the refresh token: the next provider is asked, then the login."""


def classify_jwks_lookup_error(exc: BaseException) -> Exception:
    """A failed signing-key lookup as the protocol's error: the key server unreachable is a
    `ProviderError` (503), a token this provider cannot verify an `InvalidCodeError`."""
    name = type(exc).__name__
    if name in ("PyJWKClientConnectionError",) or isinstance(exc, (ConnectionError, TimeoutError)):
        return ProviderError(f"JWKS lookup failed: {exc}")
    if name in ("DecodeError", "PyJWKSetError", "InvalidTokenError", "ExpiredSignatureError", "InvalidSignatureError"):
        return InvalidCodeError(f"token not verifiable by this provider: {exc}")
    return ProviderError(f"JWKS lookup failed: {exc!r}")


class DashboardAuthProvider(ABC):
    """Who may use the dashboard: `start_login` → the identity provider → `complete_login` (a
    `Session`), then `verify_session` on every request (None for a token it does not own, so that
    providers stack), `refresh_session` when that fails, `revoke_session` at logout (must not raise).
    With `supports_password`, `complete_password_login` takes a login form instead; with
    `supports_token`, `verify_token` a bearer token."""

    name: str = ""
    display_name: str = ""
    supports_password: bool = False
    supports_token: bool = False
    supports_session: bool = True
    public_paths: tuple[str, ...] = ()  # hermes-core: paths of its plugin's router reachable before login

    @abstractmethod
    def start_login(self, *, redirect_uri: str) -> LoginStart: ...

    @abstractmethod
    def complete_login(self, *, code: str, state: str, code_verifier: str, redirect_uri: str) -> Session: ...

    @abstractmethod
    def verify_session(self, *, access_token: str) -> Session | None: ...

    @abstractmethod
    def refresh_session(self, *, refresh_token: str) -> Session: ...

    @abstractmethod
    def revoke_session(self, *, refresh_token: str) -> None: ...

    def complete_password_login(self, *, username: str, password: str) -> Session:
        """A `Session` for a user name and password (`supports_password`); `InvalidCredentialsError` when refused."""
        raise NotImplementedError(f"{type(self).__name__} does not support password login "
                                  "(set supports_password = True and override complete_password_login)")

    def verify_token(self, *, token: str) -> TokenPrincipal | None:
        """The caller of a bearer token (`supports_token`); None for a token it does not know."""
        raise NotImplementedError(f"{type(self).__name__} does not support token auth "
                                  "(set supports_token = True and override verify_token)")


def assert_protocol_compliance(cls: type) -> None:
    """`TypeError` unless `cls` sets `name` and `display_name` and implements every method (for a provider's tests)."""
    for attr in ("name", "display_name"):
        if not getattr(cls, attr, ""):
            raise TypeError(f"{cls.__name__} missing or empty attribute: {attr!r}")
    for method in ("start_login", "complete_login", "verify_session", "refresh_session", "revoke_session"):
        if not callable(getattr(cls, method, None)):
            raise TypeError(f"{cls.__name__} missing method: {method}")
    abstract = getattr(cls, "__abstractmethods__", None)
    if abstract:
        raise TypeError(f"{cls.__name__} has unimplemented abstract methods: {sorted(abstract)}")
