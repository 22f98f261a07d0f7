"""One long-lived connection to an MCP server, on the background loop hermes-core already runs.

A connection starts the server (or reaches its URL), lists its tools, and stays open; calls from
any thread or loop share it. When it cannot start within `connect_timeout`, or breaks later (the
server died, the stream closed), it says why and tries again with backoff (1 s, 2 s, 4 s ... 60 s)
for as long as the host runs. Nothing here blocks a caller but a call that waits for its answer.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import math
import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from .. import _telemetry
from .._errors import McpError
from .._paths import hermes_home
from .._quote import clip
from .._runtime import workers
from .._runtime.backoff import Backoff
from .._standins.fields import Unavailable
from .config import ServerConfig
from .oauth import LoginNeeded

__all__ = ["Connection", "why"]

log = logging.getLogger("hermes_core.mcp")
_MAX_PAGES = 100
_MAX_DELAY = 60.0
_PING_EVERY = 30.0


class _Late(TimeoutError):
    """A server did not start and list its tools within its `connect_timeout`."""


def why(exc: BaseException) -> str:
    """One line for what stopped a connection or a call (the first leaf of an exception group)."""
    exc = leaf(exc)
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    if isinstance(exc, McpError):  # hermes-core's own words
        return clip(text, 300)
    return clip(f"{type(exc).__name__}: {text}" if text else type(exc).__name__, 300)


def leaf(exc: BaseException) -> BaseException:
    """The first exception inside (nested) exception groups: what really went wrong."""
    while getattr(exc, "exceptions", None):
        exc = exc.exceptions[0]  # type: ignore[attr-defined]
    return exc


def _closed(exc: BaseException) -> bool:
    """Whether a call failed because the connection itself is gone (not the tool)."""
    import anyio

    if isinstance(exc, (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream, EOFError,
                        ConnectionError)):
        return True
    return "connection closed" in str(exc).lower()


class Connection:
    """Server `server`, connected on the portal loop once `start()` is called; `on_tools(connection,
    tools)` hears each listing of its tools (the SDK's `Tool` objects), on the loop's thread. An
    OAuth server's login is read from `home` (`$HERMES_HOME`)."""

    def __init__(self, server: ServerConfig, on_tools: Callable[[Connection, list[Any]], None],
                 home: Path | None = None, sampling: Callable[..., Awaitable[Any]] | None = None) -> None:
        self.server = server
        self.sampling = sampling  # the server's sampling requests: answered by it (`sampling.py`), or refused
        self.home = home if home is not None else hermes_home()
        self.state = "starting"  # starting, ready, failed, needs login, closed
        self.reason = ""
        self.tools: list[Any] = []
        self.capabilities: Any = None  # what the server said it offers, once connected
        self.connected_at: float | None = None
        self.retry_at: float | None = None
        self._on_tools = on_tools
        self._client: Any = None
        self._settled = threading.Event()  # the first attempt ended, either way
        self._up: asyncio.Event | None = None
        self._broken: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None
        self._scope: Any = None  # anyio's cancel scope of what _run does now
        self._future: Any = None

    # -- what the host asks ---------------------------------------------------------------

    def start(self) -> None:
        """Connect in the background (idempotent)."""
        if self._future is None:
            self._future = asyncio.run_coroutine_threadsafe(self._run(), workers.portal())

    def settle(self, timeout: float) -> bool:
        """Wait until the first attempt to connect has ended (at most `timeout` s); whether it has."""
        return self._settled.wait(timeout)

    def describe(self) -> str:
        """The state in a few words: `ready (3 tools)`, `failed: <why>; retrying in 4 s`."""
        if self.state == "ready":
            return f"ready ({len(self.tools)} tool{'s' if len(self.tools) != 1 else ''})"
        if self.state == "needs login":
            return f"needs login: run `hermes mcp login {self.server.name}`"
        if self.state == "failed":
            wait = (self.retry_at or 0) - time.time()
            return f"failed: {self.reason}; " + (f"retrying in {wait:.0f} s" if wait >= 1 else "retrying now")
        return self.state

    def available(self) -> bool | Unavailable:
        """What a tool of this server answers as its `check_fn`: it can run while the server is ready
        or still starting (a call waits for it), not while it is down."""
        if self.state in ("ready", "starting"):
            return True
        return Unavailable(self._down())

    def _down(self) -> str:
        """Why a call cannot reach the server now, as a sentence."""
        if self.state == "needs login":
            return self.reason
        return f"MCP server {self.server.name!r} is {self.describe()}"

    async def acall(self, tool: str, arguments: dict[str, Any], timeout: float) -> Any:
        """Call tool `tool` of the server from any event loop: its `CallToolResult`. Raises
        `ConnectionError` when the server is down or does not come up in `connect_timeout`; the
        SDK's errors for the call itself (its `timeout`, a protocol error) pass through."""
        return await self.ause(lambda client: client.call_tool(tool, arguments, read_timeout_seconds=timeout),
                               f"a call of {tool!r}")

    async def ause(self, use: Callable[[Any], Awaitable[Any]], what: str) -> Any:
        """`await use(client)` with the server's SDK client, from any event loop (`acall`, and the
        server's resources and prompts); `ConnectionError` as for `acall`."""
        if workers.on_portal():
            return await self._use(use, what)
        loop = workers.portal()
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(self._use(use, what), loop))

    def stop(self) -> concurrent.futures.Future[None] | None:
        """Stop connecting and close the connection (a stdio server is asked to exit, then stopped);
        returns at once, with the future of that work on the loop (None when nothing runs)."""
        self.state = "closed"
        future, self._future = self._future, None
        loop = workers.running_portal()
        if future is None or loop is None:
            return None
        if workers.on_portal():
            future.cancel()
            return None
        return asyncio.run_coroutine_threadsafe(self._stop(), loop)

    # -- on the portal loop ------------------------------------------------------------------

    async def _use(self, use: Callable[[Any], Awaitable[Any]], what: str) -> Any:
        client = self._client
        if client is None and self.state == "starting" and self._up is not None:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._up.wait(), self.server.connect_timeout)
            client = self._client
        if client is None:
            raise ConnectionError(self._down())
        try:
            return await use(client)
        except Exception as exc:
            if not _closed(exc):
                raise
            reason = f"the connection closed during {what} ({why(exc)})"
            if self._client is client:  # down from now on; reconnected with backoff
                self._fail(reason)
                if self._broken is not None:
                    self._broken.set()
            raise ConnectionError(reason) from None

    async def _stop(self) -> None:
        if self._scope is not None:
            self._scope.cancel()
        task = self._task
        if task is not None and not task.done():
            await asyncio.wait([task])

    async def _run(self) -> None:
        """Connect; when that fails or the connection breaks, say why and try again after 1, 2, 4 ... s.
        Stopped through `_scope` (anyio's cancellation, which lets the SDK stop a stdio server)."""
        import anyio

        self._task = asyncio.current_task()
        self._up = asyncio.Event()
        backoff = Backoff(1.0, _MAX_DELAY)
        while self.state != "closed":
            reason, state = "", "failed"
            with anyio.CancelScope() as self._scope:
                try:
                    await self._attempt()
                    reason = self.reason or "the connection closed"
                except _Late as exc:  # already said, in these words, the moment the time was up
                    reason = str(exc)
                except Exception as exc:  # noqa: BLE001 - it could not start or broke: say why, try again
                    reason = why(exc)
                    state = "needs login" if isinstance(leaf(exc), LoginNeeded) else state
            if self.state == "closed":
                break
            if self.connected_at is not None and time.time() - self.connected_at > _MAX_DELAY:
                backoff.reset()  # it had been up for a while: a fresh failure starts the backoff again
            self._fail(reason, state)
            self._settled.set()
            delay = backoff.next()
            self.retry_at = time.time() + delay
            with anyio.CancelScope() as self._scope:
                await anyio.sleep(delay)

    def _fail(self, reason: str, state: str = "failed") -> None:
        """The server is down for `reason` (`state`: failed, or needs login): said once (again only
        when the reason changes)."""
        if self.state == "closed":
            return
        said = self.state == state and self.reason == reason
        self.state, self.reason, self._client = state, reason, None
        if self._up is not None:
            self._up.clear()
        if state == "needs login":
            (log.debug if said else log.warning)("%s; its tools are unavailable until then", reason)
            return
        (log.debug if said else log.warning)(
            "MCP server %r: %s; its tools are unavailable until it is back (retried with backoff)", self.server.name,
            reason)

    async def _attempt(self) -> None:
        """Connect and list the tools within `connect_timeout`, then hold the connection until it breaks."""
        import anyio

        self._broken = asyncio.Event()
        late = (f"it did not start and list its tools within {self.server.connect_timeout:g} s "
                f"(mcp_servers.{self.server.name}.connect_timeout)")
        deadline = anyio.CancelScope(deadline=anyio.current_time() + self.server.connect_timeout)
        # said the moment the time is up, not once the SDK has stopped the server (seconds later)
        timer = asyncio.get_running_loop().call_later(self.server.connect_timeout, self._late, late)
        try:
            with deadline:
                async with contextlib.AsyncExitStack() as stack:
                    client = await stack.enter_async_context(await self._client_for(stack))
                    tools = await _list_tools(client, self.server.name)
                    deadline.deadline = math.inf
                    timer.cancel()
                    self._client, self.tools, self.reason = client, tools, ""
                    self.capabilities = client.server_capabilities  # resources, prompts: extras.py offers them
                    self.state, self.connected_at = "ready", time.time()
                    self._on_tools(self, tools)
                    self._settled.set()
                    assert self._up is not None
                    self._up.set()
                    await self._watch(client)
        finally:
            timer.cancel()
            self._client = None
        if deadline.cancelled_caught:
            raise _Late(late)

    def _late(self, reason: str) -> None:
        self._fail(reason)
        self._settled.set()

    async def _watch(self, client: Any) -> None:
        """Hold the connection until a call finds it broken, or a ping every 30 s idle goes unanswered
        (a server that died between calls)."""
        import anyio

        assert self._broken is not None
        while True:
            with anyio.move_on_after(_PING_EVERY):
                await self._broken.wait()
                return
            try:
                with anyio.fail_after(_PING_EVERY):
                    await client.send_ping()
            except Exception as exc:  # noqa: BLE001 - any failure of a ping: the server is gone
                self.reason = f"it stopped answering ({why(exc)})"
                return

    async def _client_for(self, stack: contextlib.AsyncExitStack) -> Any:
        auth = None
        if self.server.auth == "oauth":  # never asks a person: no login, or a refused one, is LoginNeeded
            from .oauth import LoginNeeded, TokenFile, oauth_provider

            storage = TokenFile(self.home, self.server.name, self.server.url)
            if not storage.has_tokens():
                raise LoginNeeded(self.server.name)
            auth = oauth_provider(self.server, storage)
        return await client_for(self.server, stack, auth, self.sampling)


async def _meta_as_headers(request: Any) -> None:
    """An HTTP request's `traceparent` header: the one its MCP message carries in `_meta`."""
    if "traceparent" not in request.headers:
        try:
            request.headers.update(_telemetry.meta_headers(request.content))
        except Exception:  # noqa: BLE001 - a body streamed, not built: the message's `_meta` still carries it
            pass


async def client_for(server: ServerConfig, stack: contextlib.AsyncExitStack, auth: Any = None,
                     sampling: Callable[..., Awaitable[Any]] | None = None) -> Any:
    """The SDK's `Client` for `server` (not yet entered), its HTTP client on `stack`; `auth` (an
    `httpx2.Auth`, the OAuth provider) goes with every HTTP request; `sampling` (the SDK's
    sampling callback) answers the server's sampling requests (None: the client does not offer it)."""
    from mcp import Client, StdioServerParameters

    from .mended import mended

    answers: dict[str, Any] = {"sampling_callback": sampling} if sampling is not None else {}
    if server.transport == "stdio":
        from mcp.client.stdio import stdio_client

        return Client(mended(stdio_client(StdioServerParameters(
            command=server.command, args=list(server.args), env=dict(server.env) if server.env is not None else None,
            cwd=server.cwd or None))), **answers)
    if server.transport == "sse":
        from mcp.client.sse import sse_client

        return Client(mended(sse_client(server.url, headers=dict(server.headers) or None, auth=auth)), **answers)
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    http = await stack.enter_async_context(create_mcp_http_client(headers=dict(server.headers) or None, auth=auth))
    if _telemetry.ACTIVE is not None:  # the server's span of each HTTP request joins the message's trace
        http.event_hooks = {**http.event_hooks, "request": [*http.event_hooks.get("request", []), _meta_as_headers]}
    return Client(mended(streamable_http_client(server.url, http_client=http)), **answers)



async def _list_tools(client: Any, server: str) -> list[Any]:
    """Every page of the server's tools. A page the SDK refuses (one tool's schema is not what the
    protocol says) is read again as plain JSON: each tool that reads as one is kept, each one that
    does not is left out with a warning naming it and its field. One bad tool costs only itself."""
    from pydantic import ValidationError

    tools: list[Any] = []
    cursor = None
    for _ in range(_MAX_PAGES):
        try:
            page = await client.list_tools(cursor=cursor)
        except ValidationError:
            listed, cursor = await _tools_one_by_one(client, server, cursor)
            tools.extend(listed)
        else:
            tools.extend(page.tools)
            cursor = page.next_cursor
        if not cursor:
            break
    return tools


async def _tools_one_by_one(client: Any, server: str, cursor: str | None) -> tuple[list[Any], str | None]:
    import mcp.types as types
    from pydantic import ValidationError

    # The session checks a whole listing against the protocol before anyone sees it; its
    # dispatcher's raw request is the only way to the tools that are fine.
    dispatcher = getattr(client.session, "_dispatcher", None)
    if dispatcher is None or not hasattr(dispatcher, "send_raw_request"):
        raise RuntimeError("the server's tool listing does not follow the protocol, and this mcp SDK offers no way "
                           "to read the tools that do one by one")
    raw = await dispatcher.send_raw_request("tools/list", {"cursor": cursor} if cursor else None, {})
    kept = []
    for item in raw.get("tools") or []:
        try:
            kept.append(types.Tool.model_validate(item))
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(part) for part in first.get("loc", ())) or "the tool"
            name = item.get("name") if isinstance(item, dict) else None
            log.warning("MCP server %r: tool %r is left out: %s: %s", server, name, where, first.get("msg", exc))
    following = raw.get("nextCursor")
    following = following if isinstance(following, str) and following else None
    absorb = getattr(client.session, "_absorb_tool_listing", None)
    if absorb is not None:  # what the session learns from a listing (output schemas), for the calls to come
        absorb(types.ListToolsResult(tools=kept, next_cursor=following), complete=cursor is None and following is None)
    return kept, following
