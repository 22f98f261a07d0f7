"""`hermes mcp serve --http`: Streamable HTTP at `/mcp`, on `hosting.serve_asgi` (loopback unless a
bearer token guards it; browsers kept out; until SIGINT/SIGTERM)."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from hermes_core.hosting import BrowserPolicy, loads_sent, serve_asgi

from .ids import refusal

__all__ = ["serve_http"]


class _Mended:
    """ASGI: a POST whose request id the SDK does not take is answered 400 with JSON-RPC error
    -32600 (`ids.refusal`) before the SDK sees it. A POST whose JSON holds an escaped lone surrogate ("\\ud800", which JSON allows) reaches
    the SDK with U+FFFD in its place (`hosting.loads_sent`), as on stdio: the SDK answered it -32700
    "Parse error", though it is JSON. The body is read whole (`serve_asgi` bounds it)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope.get("method") != "POST":
            await self.app(scope, receive, send)
            return
        chunks, more = [], True
        while more:
            message = await receive()
            if message["type"] != "http.request":
                await self.app(scope, _replay([message]), send)
                return
            chunks.append(message.get("body", b""))
            more = message.get("more_body", False)
        body = b"".join(chunks)
        refused = refusal(body)
        if refused is not None:  # the SDK would take it for a notification: answered here, in words
            await _answer(send, refused)
            return
        if b"\\u" in body:
            try:
                body = json.dumps(loads_sent(body), ensure_ascii=False).encode()
            except (ValueError, RecursionError):  # not JSON: the SDK answers it as it does
                pass
        headers = [(name, value) for name, value in scope.get("headers", []) if name.lower() != b"content-length"]
        scope = {**scope, "headers": [*headers, (b"content-length", str(len(body)).encode())]}
        await self.app(scope, _replay([{"type": "http.request", "body": body, "more_body": False}], receive), send)


async def _answer(send: Any, message: dict[str, Any]) -> None:
    body = json.dumps(message).encode()
    await send({"type": "http.response.start", "status": 400, "headers": [
        (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


def _replay(messages: list[Any], then: Any = None) -> Callable[[], Awaitable[Any]]:
    async def receive() -> Any:
        if messages:
            return messages.pop(0)
        return await then() if then is not None else {"type": "http.disconnect"}

    return receive


async def serve_http(server: Any, host: str, port: int, token: str | None,
                     ready: Callable[[str], Awaitable[None] | None], *, browsers: BrowserPolicy | None = None) -> None:
    """Serve `server` over Streamable HTTP at `http://host:port/mcp` until SIGINT/SIGTERM; `ready(url)`
    is called once the socket listens (port 0: a free port). Off loopback a `token` is required
    (`ServingError`), and with one every request needs it as a bearer token. Browsers are kept out
    by `hosting.GuardBrowsers` with `browsers` (`BrowserPolicy.from_config(config)`), in place of
    the SDK's own DNS-rebinding check, which knows no allowed host of config.yaml."""
    from mcp.server.transport_security import TransportSecuritySettings

    unchecked = TransportSecuritySettings(enable_dns_rebinding_protection=False)  # GuardBrowsers checks
    await serve_asgi(_Mended(server.streamable_http_app(host=host, transport_security=unchecked)), host, port, token=token,
                     ready=lambda base: ready(f"{base}/mcp"), what="hermes mcp serve", browsers=browsers)
