"""`hermes mcp serve --http`: Streamable HTTP at `/mcp`, on `hosting.serve_asgi` (loopback unless a
bearer token guards it; until SIGINT/SIGTERM)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from hermes_core.hosting import serve_asgi

__all__ = ["serve_http"]


async def serve_http(server: Any, host: str, port: int, token: str | None,
                     ready: Callable[[str], Awaitable[None] | None]) -> None:
    """Serve `server` over Streamable HTTP at `http://host:port/mcp` until SIGINT/SIGTERM; `ready(url)`
    is called once the socket listens (port 0: a free port). Off loopback a `token` is required
    (`ServingError`), and with one every request needs it as a bearer token."""
    await serve_asgi(server.streamable_http_app(host=host), host, port, token=token,
                     ready=lambda base: ready(f"{base}/mcp"), what="hermes mcp serve")
