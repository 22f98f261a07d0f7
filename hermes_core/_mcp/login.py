"""`hermes mcp login <server>`: an OAuth login, the one place a person is asked.

The SDK finds the authorization server, registers hermes-core there (once) and makes the PKCE
authorization URL; this module shows the URL (and opens a browser), then gets the answer back:
from the browser, through a listener on 127.0.0.1 (`http://127.0.0.1:<port>/callback`, the
redirect URI the client was registered with, so its port is kept), or pasted by the person
(`paste`: the URL the browser was sent to, or its code alone) where no browser can reach this
machine. The new tokens are written only once the login worked; a failed one keeps the old.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from .._errors import McpError
from .config import ServerConfig
from .connection import client_for, why
from .oauth import TokenFile, oauth_provider

__all__ = ["login", "logout"]

_PAGE = ("<!doctype html><meta charset=utf-8><title>hermes mcp login</title>"
         "<p style='font-family:sans-serif'>{}</p>")


async def login(server: ServerConfig, home: Path, *, say: Callable[[str], None], read_line: Callable[[], str],
                browser: bool = True, paste: bool = False, timeout: float = 300.0) -> None:
    """Log in to `server` (an `auth: oauth` one) and keep its tokens under `home`; `say` shows a line
    to the person, `read_line` reads what they paste. `McpError` saying why when it fails."""
    storage = TokenFile(home, server.name, server.url)
    port = server.oauth_redirect_port or _port_of(storage.redirect_uri())
    listener: _Listener | None = None
    if paste:
        port = port or _free_port()
    else:
        listener = await _Listener.open(server, port)
        port = listener.port
    uri = f"http://127.0.0.1:{port}/callback"
    storage.logging_in(uri)
    sent: list[str] = []

    async def redirect(url: str) -> None:
        if sent:  # the server refused what this login was just granted (a scope it needs but is not given)
            scope = parse_qs(urlsplit(url).query).get("scope", [""])[0]
            raise McpError(f"the server refused the login it had just granted and asks for another"
                           f"{f' (scope {scope!r})' if scope else ''}: its authorization server does not grant what "
                           f"it requires; check mcp_servers.{server.name}.oauth.scope, or ask the server's operator")
        sent.append(url)
        say(f"Open this URL in a browser to log in to MCP server {server.name!r}:")
        say(url)
        if paste:
            say("Then paste here the URL the browser was sent to at the end (or only its code=...):")
        elif browser:  # on a thread: a $BROWSER command may wait for its page, which this loop serves
            threading.Thread(target=_open_browser, args=(url,), name="hermes-mcp-login-browser", daemon=True).start()

    async def callback() -> Any:
        from mcp.shared.auth import AuthorizationCodeResult

        state = parse_qs(urlsplit(sent[-1]).query).get("state", [""])[0]
        try:
            with _within(server, timeout, paste):
                answer = await (_pasted(read_line) if paste else listener.answer())  # type: ignore[union-attr]
        finally:
            if listener is not None:
                listener.close()
        if "code=" in answer or "error=" in answer:  # the URL, or its query alone
            query = parse_qs(urlsplit(answer).query if "?" in answer else answer)
        else:  # the code alone: the state is the one sent
            query = {"code": [answer], "state": [state]}
        if "error" in query:
            detail = query.get("error_description", [""])[0]
            raise McpError(f"the authorization server refused the login: {query['error'][0]}"
                           + (f" ({detail})" if detail else ""))
        return AuthorizationCodeResult(code=query.get("code", [""])[0], state=query.get("state", [None])[0],
                                       iss=query.get("iss", [None])[0])

    auth = oauth_provider(server, storage, uri, redirect, callback)
    try:
        async with contextlib.AsyncExitStack() as stack:
            client = await stack.enter_async_context(await client_for(server, stack, auth))
            await client.list_tools()
    except Exception as exc:  # noqa: BLE001 - one line saying why
        raise McpError(f"hermes mcp login {server.name}: {why(exc)}") from None
    finally:
        storage.logging_in("")
        if listener is not None:
            listener.close()
    if not sent:
        raise McpError(f"hermes mcp login {server.name}: the server answered without asking for a login; "
                       f"it may not need auth: oauth")


def logout(server: ServerConfig, home: Path) -> bool:
    """Forget `server`'s login; whether there was one."""
    return TokenFile(home, server.name, server.url).forget()


def _open_browser(url: str) -> None:
    import webbrowser

    with contextlib.suppress(Exception):
        webbrowser.open(url)


def _port_of(uri: str) -> int:
    if not uri.startswith("http://127.0.0.1:"):
        return 0
    try:
        return urlsplit(uri).port or 0
    except ValueError:
        return 0


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def _within(server: ServerConfig, timeout: float, paste: bool) -> Any:
    import anyio

    with anyio.move_on_after(timeout) as scope:
        yield
    if scope.cancelled_caught:
        how = "nothing was pasted" if paste else "the browser did not come back"
        hint = "" if paste else " (or with --paste where no browser on this machine can be used)"
        raise McpError(f"{how} within {timeout:g} s; run `hermes mcp login {server.name}` again{hint}")


async def _pasted(read_line: Callable[[], str]) -> str:
    """The first line pasted that is not blank, read on a daemon thread (left behind on a timeout)."""
    loop = asyncio.get_running_loop()
    pasted: asyncio.Future[str] = loop.create_future()

    def give(line: str | None, exc: BaseException | None) -> None:
        if pasted.done():
            return
        if exc is not None:
            pasted.set_exception(exc)
        else:
            pasted.set_result(line or "")

    def read() -> None:
        error: BaseException | None = None
        try:
            line = read_line()
            while line and not line.strip():
                line = read_line()
        except Exception as exc:  # noqa: BLE001 - handed to the waiting loop
            line, error = "", exc
        with contextlib.suppress(RuntimeError):  # the loop is gone: nobody waits any more
            loop.call_soon_threadsafe(give, line.strip(), error)

    threading.Thread(target=read, name="hermes-mcp-login-paste", daemon=True).start()
    answer = await pasted
    if not answer:
        raise McpError("nothing was pasted (the input ended)")
    return answer


class _Listener:
    """`http://127.0.0.1:<port>/callback`, waiting for the browser's one redirect."""

    def __init__(self) -> None:
        self.port = 0
        self._server: asyncio.Server | None = None
        self._answer: asyncio.Future[str] = asyncio.get_running_loop().create_future()

    @classmethod
    async def open(cls, server: ServerConfig, port: int) -> _Listener:
        """Listen on `port` (0: a free one); the registered port when busy is given up for a free one
        (the client is then registered again), a configured one is an error."""
        listener = cls()
        try:
            listener._server = await asyncio.start_server(listener._serve, "127.0.0.1", port)
        except OSError as exc:
            if server.oauth_redirect_port:
                raise McpError(f"hermes mcp login {server.name}: cannot listen on 127.0.0.1:{port} "
                               f"(mcp_servers.{server.name}.oauth.redirect_port): {exc.strerror or exc}") from None
            listener._server = await asyncio.start_server(listener._serve, "127.0.0.1", 0)
        listener.port = int(listener._server.sockets[0].getsockname()[1])
        return listener

    async def answer(self) -> str:
        return await asyncio.shield(self._answer)

    def close(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request = (await asyncio.wait_for(reader.readline(), 30)).decode("latin-1").split()
            while (await asyncio.wait_for(reader.readline(), 30)).strip():
                pass
            target = request[1] if len(request) > 1 else ""
            if not target.startswith("/callback?") or self._answer.done():
                await _respond(writer, 404, "Not the login this listener waits for.")
                return
            failed = "error=" in target and "code=" not in target
            await _respond(writer, 200, "The login failed; see the terminal." if failed else
                           "Logged in. You can close this tab and go back to the terminal.")
            self._answer.set_result(f"http://127.0.0.1{target}")
        except (OSError, asyncio.TimeoutError, ValueError):  # a line past the reader's limit is a ValueError
            pass
        except asyncio.CancelledError:  # the login ended with this connection still open: dropped (asyncio
            pass  # would print its cancelled task as "Exception in callback")
        finally:
            writer.close()


async def _respond(writer: asyncio.StreamWriter, status: int, text: str) -> None:
    body = _PAGE.format(text).encode()
    writer.write(f"HTTP/1.1 {status} {'OK' if status == 200 else 'Not Found'}\r\nContent-Type: text/html; "
                 f"charset=utf-8\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode() + body)
    await writer.drain()
