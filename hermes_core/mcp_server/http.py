"""`hermes mcp serve --http`: Streamable HTTP at `/mcp`, on `hosting.serve_asgi` (loopback unless a
bearer token guards it; browsers kept out; until SIGINT/SIGTERM)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from hermes_core.hosting import BrowserPolicy, serve_asgi

__all__ = ["serve_http"]


async def serve_http(server: Any, host: str, port: int, token: str | None,
                     ready: Callable[[str], Awaitable[None] | None], *, browsers: BrowserPolicy | None = None) -> None:
    """Serve `server` over Streamable HTTP at `http://host:port/mcp` until SIGINT/SIGTERM; `ready(url)`
    is called once the socket listens (port 0: a free port). Off loopback a `token` is required
    (`ServingError`), and with one every request needs it as a bearer token. Browsers are kept out
    by `hosting.GuardBrowsers` with `browsers` (`BrowserPolicy.from_config(config)`), in place of
    the SDK's own DNS-rebinding check, which knows no allowed host of config.yaml."""
    from mcp.server.transport_security import TransportSecuritySettings

    unchecked = TransportSecuritySettings(enable_dns_rebinding_protection=False)  # GuardBrowsers checks
    await serve_asgi(server.streamable_http_app(host=host, transport_security=unchecked), host, port, token=token,
                     ready=lambda base: ready(f"{base}/mcp"), what="hermes mcp serve", browsers=browsers)
