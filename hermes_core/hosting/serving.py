"""Serving a host over HTTP: on loopback unless a bearer token guards it, the token compared in
constant time, browsers kept out (`browsers`), an ASGI app run on uvicorn until SIGINT or SIGTERM.

>>> await serve_asgi(app, "127.0.0.1", 0, ready=lambda url: print(url, file=sys.stderr))

uvicorn comes with the extras that serve over HTTP (`hermes-core[mcp]`); it is imported by
`serve_asgi` alone, when it runs.
"""

from __future__ import annotations

import contextlib
import hmac
import logging
import socket
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from .._errors import ServingError
from .._net import is_loopback
from .signals import until_signal

if TYPE_CHECKING:
    from .browsers import BrowserPolicy

__all__ = ["BoundedRequests", "RequireBearer", "bearer_token", "listening_socket", "secret_matches", "serve_asgi"]

def secret_matches(given: str | bytes | None, expected: str | bytes) -> bool:
    """Whether `given` is the shared secret `expected`, compared in constant time; an empty
    `expected` matches nothing (a host without a secret lets no one in by it)."""
    want = expected.encode("utf-8", "surrogatepass") if isinstance(expected, str) else expected
    if not want:
        return False
    got = given.encode("utf-8", "surrogatepass") if isinstance(given, str) else (given or b"")
    return hmac.compare_digest(got, want)


def bearer_token(authorization: str | bytes | None) -> str:
    """The token of an `Authorization: Bearer <token>` header's value (`""` when it holds none)."""
    value = authorization.decode("latin-1") if isinstance(authorization, bytes) else (authorization or "")
    scheme, _, token = value.strip().partition(" ")
    return token.strip() if scheme.lower() == "bearer" else ""


class RequireBearer:
    """ASGI middleware: an HTTP or WebSocket request without `Authorization: Bearer <token>` gets
    401 and never reaches `app` (lifespan events pass)."""

    def __init__(self, app: Any, token: str) -> None:
        if not token:
            raise ValueError("RequireBearer needs a token")
        self.app, self.token = app, token

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] in ("http", "websocket"):
            headers = dict(scope.get("headers") or [])
            if not secret_matches(bearer_token(headers.get(b"authorization")), self.token):
                if scope["type"] == "websocket":
                    await send({"type": "websocket.close", "code": 1008})
                    return
                await send({"type": "http.response.start", "status": 401,
                            "headers": [(b"content-type", b"application/json"), (b"www-authenticate", b"Bearer")]})
                await send({"type": "http.response.body", "body": b'{"error": "a bearer token is required"}'})
                return
        await self.app(scope, receive, send)


class BoundedRequests:
    """ASGI middleware: a request body over `max_body` bytes gets 413 (a declared one before it is
    read), and a body that stops arriving for `read_timeout` seconds gets 408, so no sender pins a
    connection. Once the body is in, nothing more is timed (a streamed answer may take its time).

    A body refused while the app reads it (sent in chunks, with no length declared) is answered
    here, at once; the app's read then ends as if its client had gone away (`http.disconnect`,
    which Starlette raises as `ClientDisconnect`), and what it sends after is dropped: whatever
    the app does with a failed read, the client gets the 413 or 408."""

    def __init__(self, app: Any, *, max_body: int | None = None, read_timeout: float | None = 30.0) -> None:
        self.app, self.max_body, self.read_timeout = app, max_body, read_timeout

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        import asyncio

        declared = dict(scope.get("headers") or []).get(b"content-length", b"").strip()
        if self.max_body is not None and declared.isdigit() and int(declared) > self.max_body:
            await _answer(send, 413, f"the request body is larger than {self.max_body:,} bytes")
            return
        state = {"received": 0, "done": False, "started": False, "refused": False}

        async def refuse(status: int, message: str) -> Any:
            if not state["started"] and not state["refused"]:
                state["refused"] = True
                await _answer(send, status, message)
            return {"type": "http.disconnect"}

        async def bounded() -> Any:
            if state["refused"]:
                return {"type": "http.disconnect"}
            if state["done"]:
                return await receive()
            try:
                message = await _within(receive(), self.read_timeout)
            except asyncio.TimeoutError:
                return await refuse(408, f"the request body did not arrive within {self.read_timeout:g} s")
            if message.get("type") == "http.request":
                state["received"] += len(message.get("body", b""))
                state["done"] = not message.get("more_body", False)
                if self.max_body is not None and state["received"] > self.max_body:
                    return await refuse(413, f"the request body is larger than {self.max_body:,} bytes")
            return message

        async def tracked(message: Any) -> None:
            if state["refused"]:
                return  # answered already: the app's own answer to its failed read goes nowhere
            state["started"] = state["started"] or message.get("type") == "http.response.start"
            await send(message)

        await self.app(scope, bounded, tracked)


async def _within(waiting: Awaitable[Any], seconds: float | None) -> Any:
    """`asyncio.wait_for`, without its task for each wait where Python has `asyncio.timeout` (3.11):
    a body that has arrived is then read at once, not one trip around the event loop later."""
    import asyncio

    timeout = getattr(asyncio, "timeout", None)
    if timeout is None or seconds is None:
        return await asyncio.wait_for(waiting, seconds)
    async with timeout(seconds):
        return await waiting


async def _answer(send: Any, status: int, message: str) -> None:
    import json

    code = "body_too_large" if status == 413 else "request_timeout"
    body = json.dumps({"error": {"message": message, "type": "invalid_request_error", "param": None,
                                 "code": code}}).encode()  # OpenAI's error object: what an API client reads
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                            (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": body})


def listening_socket(host: str, port: int, *, what: str = "hermes") -> socket.socket:
    """A TCP socket bound to `host:port` (port 0: a free one) and listening; `ServingError` saying
    why it cannot be (the address in use, a name that is not this machine's, ...)."""
    bare = host.strip("[]")
    family = socket.AF_INET6 if ":" in bare else socket.AF_INET
    # IPPROTO_TCP named, not 0: asyncio sets TCP_NODELAY only on accepted sockets whose protocol
    # says TCP. Without it a response's headers and body (two writes) wait on Nagle's algorithm for
    # the client's delayed ACK: about 40 ms per request on every kept-alive connection (the openai
    # SDK's), where a new connection per request (urllib) never saw it.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        sock.bind((bare, port))
    except OSError as exc:
        sock.close()
        raise ServingError(f"{what}: cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    sock.listen(128)
    return sock


def quick_ack_protocol() -> type[Any]:
    """uvicorn's HTTP/1.1 protocol, acknowledging each segment it receives at once (TCP_QUICKACK).

    Most HTTP clients (httpx under the openai SDK, requests) write a request's headers and its body
    in two sends without TCP_NODELAY: the body waits, by Nagle's algorithm, for the headers' ACK,
    which the receiving side delays (Linux: tens of milliseconds) while it waits for more. Quick ACKs
    on the server's side let the body go at once, for every client. Linux only; elsewhere a no-op."""
    from uvicorn.protocols.http.h11_impl import H11Protocol

    option = getattr(socket, "TCP_QUICKACK", None)
    if option is None:
        return H11Protocol

    class QuickAckH11Protocol(H11Protocol):
        def connection_made(self, transport: Any) -> None:
            super().connection_made(_HeadWithBody(transport))  # type: ignore[arg-type]

        def data_received(self, data: bytes) -> None:
            sock = self.transport.get_extra_info("socket")
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.setsockopt(socket.IPPROTO_TCP, option, 1)
            super().data_received(data)

    return QuickAckH11Protocol


class _HeadWithBody:
    """A connection's transport whose response head (status line and headers, one write of
    uvicorn's) goes out with the body's first bytes (its next write) in one send, so that the
    client reads one segment where it read two. A head whose body is not written in the same step
    of the event loop (a stream's first event is still to come) goes out alone at the loop's next
    step, as before."""

    __slots__ = ("_inner", "_head")

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self._head: bytes | None = None

    def write(self, data: bytes) -> None:
        if self._head is not None:
            data, self._head = self._head + data, None
        elif data[:7] == b"HTTP/1." and data[-4:] == b"\r\n\r\n":
            self._head = data
            import asyncio

            asyncio.get_running_loop().call_soon(self._flush)
            return
        self._inner.write(data)

    def _flush(self) -> None:
        head, self._head = self._head, None
        if head is not None and not self._inner.is_closing():
            self._inner.write(head)

    def close(self) -> None:
        self._flush()
        self._inner.close()

    def writelines(self, pieces: Any) -> None:
        self.write(b"".join(pieces))

    def write_eof(self) -> None:
        self._flush()
        self._inner.write_eof()

    def abort(self) -> None:
        self._head = None
        self._inner.abort()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


async def serve_asgi(app: Any, host: str, port: int, *, token: str | None = None,
                     ready: Callable[[str], Awaitable[None] | None] | None = None, what: str = "hermes",
                     grace: int | None = None, app_checks_keys: bool = False, max_body: int | None = 4 * 1024 * 1024,
                     read_timeout: float | None = 30.0, browsers: BrowserPolicy | None = None) -> None:
    """Serve the ASGI `app` at `http://host:port` on uvicorn until SIGINT or SIGTERM: the first
    lets the requests that run finish (at most `grace` seconds, None: as long as they take), a
    second stops at once. `ready(base_url)` is called once the socket listens (port 0: the port
    chosen). With `token`, every request needs it as a bearer token (`RequireBearer`); a host that
    is not loopback needs one (`ServingError`, as for an address that cannot be bound; `what` names
    the command in those errors), unless `app_checks_keys`: the app refuses every request without
    one of its own keys. Every request's body is bounded (`max_body`, 413) and must arrive within
    `read_timeout` seconds of silence (408): `BoundedRequests`. Before any of that, a request a
    browser was made to send (another site's, or a rebound name's) is refused: `GuardBrowsers`, with
    `browsers` (default: no other host name or origin allowed; `BrowserPolicy.from_config`)."""
    import uvicorn

    from .browsers import BrowserPolicy, GuardBrowsers
    from .telemetry import TraceRequests

    if not is_loopback(host) and not token and not app_checks_keys:
        raise ServingError(f"{what}: {host} is not a loopback address; serving it needs a bearer token")
    sock = listening_socket(host, port, what=what)
    guarded = GuardBrowsers(
        BoundedRequests(RequireBearer(TraceRequests(app), token) if token else TraceRequests(app), max_body=max_body,
                        read_timeout=read_timeout),
        browsers or BrowserPolicy(), host, sock.getsockname()[1])
    web = uvicorn.Server(uvicorn.Config(guarded, log_level="warning", lifespan="on", timeout_graceful_shutdown=grace,
                                        http=quick_ack_protocol()))
    web.capture_signals = contextlib.nullcontext  # type: ignore[method-assign,assignment]  # until_signal's
    bound = sock.getsockname()[1]
    shown = f"[{host.strip('[]')}]" if sock.family == socket.AF_INET6 else host
    with until_signal(lambda: setattr(web, "should_exit", True), lambda: setattr(web, "force_exit", True)):
        if ready is not None:
            result = ready(f"http://{shown}:{bound}")
            if result is not None:
                await result
        await web.serve(sockets=[sock])
    if web.force_exit:
        await _forced_stop(web)


class _CancelledIsNoError(logging.Filter):
    """Leaves out uvicorn's report of a task it was asked to cancel (a second signal)."""

    def filter(self, record: logging.LogRecord) -> bool:
        import asyncio

        return not (record.exc_info and isinstance(record.exc_info[1], asyncio.CancelledError))


async def _forced_stop(web: Any) -> None:
    """The end of a stop a second signal hurried: uvicorn returns with the requests still running
    (a stream, say) and without the app's shutdown. The requests are cancelled and the app's
    lifespan ends here (its shutdown runs: a server stores what it must), so that nothing is left
    for the event loop's teardown to cancel with a traceback; uvicorn's reports of the
    cancellations it was asked for are left out."""
    import asyncio

    logger = logging.getLogger("uvicorn.error")
    quiet = _CancelledIsNoError()
    logger.addFilter(quiet)
    try:
        running = list(web.server_state.tasks)
        for task in running:
            task.cancel()
        await asyncio.gather(*running, return_exceptions=True)
        with contextlib.suppress(Exception):
            await asyncio.wait_for(web.lifespan.shutdown(), 5)
    finally:
        logger.removeFilter(quiet)
