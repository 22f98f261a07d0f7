"""OAuth for the servers of `mcp_servers:` with `auth: oauth`, on the SDK's own client
(`mcp.client.auth.OAuthClientProvider`): discovery, dynamic registration, authorization code with
PKCE and refresh are the SDK's; this module keeps what it learns in a file and decides what
happens when a person is needed.

A login is one JSON file per server, `$HERMES_HOME/mcp/oauth/<server>.json` (mode 0600): the
server's url, the tokens and when they expire, the registered client and the authorization
server's metadata. A file written for another url counts as no login. A connection that is not
`hermes mcp login` never asks a person: where the SDK would, it fails with `LoginNeeded`.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import re
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from .._errors import McpError
from .._files import MAX_SMALL_JSON, locked, read_json, write_atomic
from .config import ServerConfig

__all__ = ["LoginNeeded", "TokenFile", "oauth_provider", "token_path"]

log = logging.getLogger("hermes_core.mcp")
REFRESH_MARGIN = 60.0  # seconds before expiry a token is refreshed (at most half its lifetime)


class LoginNeeded(McpError):
    """An OAuth server has no usable login, and no person is there to make one."""

    def __init__(self, server: str) -> None:
        super().__init__(f"MCP server {server!r} needs a login: run `hermes mcp login {server}`")


def token_path(home: Path, server: str) -> Path:
    """Where server `server`'s login is kept: its name made safe for a file name (with a short hash
    of the real name when that changed it, so two names never share a file)."""
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", server).lstrip(".") or "_"
    if safe != server:
        safe += "-" + hashlib.sha256(server.encode()).hexdigest()[:8]
    return home / "mcp" / "oauth" / f"{safe}.json"


class TokenFile:
    """Server `server`'s login at `url`, in its file: the SDK's `TokenStorage` protocol, plus the
    absolute expiry and the authorization server's metadata the SDK does not keep."""

    def __init__(self, home: Path, server: str, url: str) -> None:
        self.server, self.url = server, url
        self.path = token_path(home, server)
        self._warned = False
        self._login_uri = ""  # during a login: the stored tokens are not used, nor a client registered elsewhere
        self.preregistered: tuple[str, str] | None = None  # (client id, secret) the operator registered

    # -- the file ------------------------------------------------------------------------------

    def read(self) -> dict[str, Any]:
        """The login for this url, `{}` when there is none (no file, another url's, or unreadable:
        said once, as a warning)."""
        try:
            data = read_json(self.path, MAX_SMALL_JSON)  # too large, not UTF-8, not JSON, too deep: a ValueError
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            if not self._warned:
                self._warned = True
                log.warning("MCP server %r: its login %s cannot be read (%s); it counts as logged out: run "
                            "`hermes mcp login %s`", self.server, self.path, getattr(exc, "strerror", None) or exc,
                            self.server)
            return {}
        if not isinstance(data, dict) or data.get("url") != self.url:
            return {}
        if data.get("client_info") is not None:  # read by hand below (its redirect URI): checked first
            from mcp.shared.auth import OAuthClientInformationFull

            if self._model(OAuthClientInformationFull, data["client_info"]) is None:
                return {}  # said once: it counts as logged out
        return data

    def update(self, **fields: Any) -> None:
        """Write `fields` into the login (None removes one), the file whole or not at all, mode 0600;
        one process at a time (a gateway and a run may refresh at once)."""
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        with locked(self.path):
            data = self.read()
            data.update(server=self.server, url=self.url, **fields)
            data = {key: value for key, value in data.items() if value is not None}
            write_atomic(self.path, json.dumps(data, indent=2, sort_keys=True) + "\n", mode=0o600)

    def forget(self) -> bool:
        """Delete the login; whether there was one."""
        try:
            self.path.unlink()
        except FileNotFoundError:
            return False
        return True

    def has_tokens(self) -> bool:
        return bool(self.read().get("tokens"))

    def expires_at(self) -> float | None:
        value = self.read().get("expires_at")
        return float(value) if isinstance(value, (int, float)) else None

    def oauth_metadata(self) -> Any:
        from mcp.shared.auth import OAuthMetadata

        raw = self.read().get("oauth_metadata")
        return self._model(OAuthMetadata, raw)

    def set_oauth_metadata(self, metadata: Any) -> None:
        if metadata is not None:
            self.update(oauth_metadata=metadata.model_dump(mode="json", exclude_none=True))

    def _model(self, model: Any, raw: Any) -> Any:
        from pydantic import ValidationError

        if raw is None:
            return None
        try:
            return model.model_validate(raw)
        except ValidationError as exc:
            if not self._warned:
                self._warned = True
                log.warning("MCP server %r: its login %s holds a bad %s (%s); it counts as logged out",
                            self.server, self.path, model.__name__, exc.errors()[0].get("msg", exc))
            return None

    # -- the SDK's TokenStorage ----------------------------------------------------------------

    async def get_tokens(self) -> Any:
        from mcp.shared.auth import OAuthToken

        if self._login_uri:
            return None
        return self._model(OAuthToken, self.read().get("tokens"))

    async def set_tokens(self, tokens: Any) -> None:
        expires = time.time() + tokens.expires_in if tokens.expires_in is not None else None
        self.update(tokens=tokens.model_dump(mode="json", exclude_none=True), expires_at=expires)

    async def get_client_info(self) -> Any:
        from mcp.shared.auth import OAuthClientInformationFull
        from pydantic import AnyUrl

        if self.preregistered is not None:  # the operator's client: never registered here
            client_id, secret = self.preregistered
            return OAuthClientInformationFull(
                client_id=client_id, client_secret=secret or None,
                redirect_uris=[AnyUrl(self._login_uri or self.redirect_uri() or "http://127.0.0.1:1/callback")],
                token_endpoint_auth_method="client_secret_basic" if secret else "none")
        if self._login_uri and self.redirect_uri() != self._login_uri:
            return None  # registered with another redirect URI: registered again
        return self._model(OAuthClientInformationFull, self.read().get("client_info"))

    async def set_client_info(self, client_info: Any) -> None:
        self.update(client_info=client_info.model_dump(mode="json", exclude_none=True))

    def logging_in(self, redirect_uri: str) -> None:
        """A login with `redirect_uri` starts (`""`: it ended): until then the SDK gets no stored tokens,
        and the stored client only when it was registered with that redirect URI."""
        self._login_uri = redirect_uri

    def redirect_uri(self) -> str:
        """The redirect URI the stored client was registered with ('' when there is none)."""
        uris = (self.read().get("client_info") or {}).get("redirect_uris") or []
        return str(uris[0]) if uris else ""


def _margin(expires_in: float | None) -> float:
    return min(REFRESH_MARGIN, expires_in / 2) if expires_in else 0.0


@functools.cache
def _provider_class() -> Any:
    from mcp.client.auth import OAuthClientProvider

    class Provider(OAuthClientProvider):
        """The SDK's provider, which keeps expiry and AS metadata across processes and refreshes a
        margin before expiry, with the newest refresh token of the file (another process may have
        used and rotated the one it holds). Relies on these private names of mcp 2.3 (pinned by
        tests/mcp/test_mcp_oauth.py): `_initialize`, `_refresh_token`, `_handle_token_response`,
        `_handle_refresh_response`, `context.token_expiry_time`, `context.oauth_metadata`,
        `context.current_tokens`. Without them a stored token's expiry is unknown, so it is sent
        until refused, and a refusal always starts a new login (never a refresh)."""

        storage: TokenFile

        async def _initialize(self) -> None:
            await super()._initialize()
            tokens = self.context.current_tokens
            expires = self.storage.expires_at()
            if tokens is not None and expires is not None:
                self.context.token_expiry_time = expires - _margin(tokens.expires_in)
            if self.context.oauth_metadata is None:
                self.context.oauth_metadata = self.storage.oauth_metadata()

        async def _handle_token_response(self, response: Any) -> None:
            await super()._handle_token_response(response)
            self._early()
            self.storage.set_oauth_metadata(self.context.oauth_metadata)

        async def _refresh_token(self) -> Any:
            stored = await self.storage.get_tokens()
            if stored is not None and stored.refresh_token:
                self.context.current_tokens = stored
            return await super()._refresh_token()

        async def _handle_refresh_response(self, response: Any) -> bool:
            refreshed: bool = await super()._handle_refresh_response(response)
            if refreshed:
                self._early()
            return refreshed

        def _early(self) -> None:
            tokens, expiry = self.context.current_tokens, self.context.token_expiry_time
            if tokens is not None and expiry is not None:
                self.context.token_expiry_time = expiry - _margin(tokens.expires_in)

    return Provider


Redirect = Callable[[str], Awaitable[None]]
Callback = Callable[[], Awaitable[Any]]


def oauth_provider(server: ServerConfig, storage: TokenFile, redirect_uri: str = "",
                   redirect: Redirect | None = None, callback: Callback | None = None) -> Any:
    """The SDK's auth for `server` (an `httpx2.Auth`): with `redirect` and `callback` it can log in
    (`hermes mcp login`); without them a refused or missing login is `LoginNeeded` at once."""
    from mcp.shared.auth import OAuthClientMetadata
    from pydantic import AnyUrl

    async def refuse(_url: str) -> None:
        raise LoginNeeded(server.name)

    async def never() -> Any:  # pragma: no cover - refuse() has raised before
        raise LoginNeeded(server.name)

    if server.oauth_client_id:
        storage.preregistered = (server.oauth_client_id, server.oauth_client_secret)
    uri = redirect_uri or storage.redirect_uri() or "http://127.0.0.1:1/callback"
    metadata = OAuthClientMetadata(redirect_uris=[AnyUrl(uri)], client_name=server.oauth_client_name,
                                   scope=server.oauth_scope or None)
    provider = _provider_class()(server.url, metadata, storage, redirect or refuse, callback or never)
    provider.storage = storage
    _quiet_sdk_log()
    return provider


def _quiet_sdk_log() -> None:
    """The SDK logs every failed OAuth flow with a traceback; hermes-core says why in one line
    (a connection's warning, `hermes mcp login`'s error), so those tracebacks are left out."""
    sdk_log = logging.getLogger("mcp.client.auth.oauth2")
    if not any(isinstance(f, _SaidElsewhere) for f in sdk_log.filters):
        sdk_log.addFilter(_SaidElsewhere())


class _SaidElsewhere(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        from mcp.client.auth import OAuthFlowError

        return not (record.exc_info and isinstance(record.exc_info[1], (McpError, OAuthFlowError)))
