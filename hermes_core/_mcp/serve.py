"""`hermes mcp serve`: the host's tools served to any MCP client, over stdio or Streamable HTTP.

Built on the SDK's low-level `Server`, which takes tools with raw JSON Schemas, as plugins have
them. Every call takes the path the agent's calls take (`arun_tool`: validation, `pre_tool_call`,
the time limit, `post_tool_call`, `transform_tool_result`); a blocked or failed call is an
`isError` result with the message the model would read. Plugin slash commands that take one text
argument may be offered as prompts.
"""

from __future__ import annotations

import asyncio
import contextlib
import fnmatch
import hmac
import ipaddress
import signal
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, BinaryIO, Protocol

import attrs

from .._commands.command import Command
from .._errors import HermesError, McpError
from .._tools.call import ToolOutcome
from .._tools.tool import ToolInfo

__all__ = ["Host", "Selection", "build_server", "is_loopback", "serve_http", "serve_stdio"]

LOOPBACK_NAMES = ("localhost",)
_TEXT_MODES = ("raw", "text", "required", "none")


class Host(Protocol):
    """What serving needs of a `PluginManager`."""

    def tool_infos(self) -> list[ToolInfo]: ...

    async def arun_tool(self, name: str, args: Any, *, session_id: str = "", tool_call_id: str = "") -> ToolOutcome: ...

    @property
    def commands(self) -> Iterable[Command]: ...

    async def arun_command(self, name: str, raw_args: str = "", *, session_key: str = "",
                           platform: str = "cli") -> str | None: ...


@attrs.frozen
class Selection:
    """What is served: every available tool, or those whose name matches a `tools` glob or whose
    plugin matches a `plugins` glob; slash commands as prompts with `prompts`."""

    tools: tuple[str, ...] = ()
    plugins: tuple[str, ...] = ()
    prompts: bool = False

    def wants(self, info: ToolInfo) -> bool:
        if not self.tools and not self.plugins:
            return True
        return (any(fnmatch.fnmatchcase(info.name, p) for p in self.tools)
                or any(fnmatch.fnmatchcase(info.plugin or "", p) for p in self.plugins))


def is_loopback(host: str) -> bool:
    """Whether binding `host` keeps the server on this machine."""
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _tool(info: ToolInfo) -> Any:
    import mcp.types as types

    hints = info.schema.get("annotations")
    return types.Tool(name=info.name, description=info.schema.get("description") or None,
                      input_schema=dict(info.schema.get("parameters") or {"type": "object"}),
                      annotations=types.ToolAnnotations.model_validate(dict(hints)) if hints else None)


def _prompt(command: Command) -> Any:
    import mcp.types as types

    arguments = [] if command.argument_mode == "none" else [types.PromptArgument(
        name="text", description=command.args_hint or "the command's text",
        required=command.argument_mode == "required")]
    return types.Prompt(name=command.name, description=command.description or None, arguments=arguments)


def build_server(host: Host, selection: Selection, *, name: str = "hermes-core", version: str = "") -> Any:
    """The SDK's low-level `Server` answering with `host`'s tools (and commands, as prompts)."""
    import mcp.types as types
    from mcp.server.lowlevel import Server

    names: set[str] = set()  # what was served at the last listing: a call of one of these skips listing again

    def served() -> dict[str, ToolInfo]:
        tools = {info.name: info for info in host.tool_infos() if info.available and selection.wants(info)}
        names.clear()
        names.update(tools)
        return tools

    def text(value: str, *, error: bool = False) -> Any:
        return types.CallToolResult(content=[types.TextContent(type="text", text=value)], is_error=error)

    async def list_tools(ctx: Any, params: Any) -> Any:
        return types.ListToolsResult(tools=[_tool(info) for info in served().values()])

    async def call_tool(ctx: Any, params: Any) -> Any:
        if params.name not in names and params.name not in served():  # the call checks availability itself
            return text(f"Unknown tool: {params.name}", error=True)
        outcome = await host.arun_tool(params.name, dict(params.arguments or {}),
                                       tool_call_id=f"mcp-{getattr(ctx, 'request_id', '')}")
        return text(outcome.message, error=True) if outcome.status != "ok" else text(outcome.result)

    def commands() -> dict[str, Command]:
        return {c.name: c for c in host.commands if c.argument_mode in _TEXT_MODES}

    async def list_prompts(ctx: Any, params: Any) -> Any:
        return types.ListPromptsResult(prompts=[_prompt(c) for c in commands().values()])

    async def get_prompt(ctx: Any, params: Any) -> Any:
        from mcp.shared.exceptions import MCPError

        if params.name not in commands():
            raise MCPError(types.INVALID_PARAMS, f"Unknown prompt: {params.name}")
        try:
            answer = await host.arun_command(params.name, str((params.arguments or {}).get("text", "")), platform="mcp")
        except HermesError as exc:
            raise MCPError(types.INTERNAL_ERROR, str(exc)) from None
        return types.GetPromptResult(description=commands()[params.name].description or None, messages=[
            types.PromptMessage(role="user", content=types.TextContent(type="text", text=answer or ""))])

    if selection.prompts:
        return Server(name, version=version, on_list_tools=list_tools, on_call_tool=call_tool,
                      on_list_prompts=list_prompts, on_get_prompt=get_prompt)
    return Server(name, version=version, on_list_tools=list_tools, on_call_tool=call_tool)


async def _until_signal(stop: Callable[[], None], *, task_status: Any) -> None:
    """Call `stop()` at the first SIGINT or SIGTERM (started once the signals are caught)."""
    import anyio

    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        task_status.started()
        async for _ in signals:
            stop()
            return


class _Lines:
    """The protocol's stdin as the SDK's stdio transport reads it (`async for line in ...`), on an
    asyncio pipe: no worker thread per line, as a file wrapped for anyio would take."""

    def __init__(self, reader: asyncio.StreamReader) -> None:
        self._reader = reader

    def __aiter__(self) -> _Lines:
        return self

    async def __anext__(self) -> str:
        line = await self._reader.readline()
        if not line:
            raise StopAsyncIteration
        return line.decode("utf-8", "replace")


class _Out:
    """The protocol's stdout as the SDK's stdio transport writes it (`await write(text)`, `await flush()`)."""

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self._writer = writer

    async def write(self, text: str) -> None:
        self._writer.write(text.encode("utf-8"))

    async def flush(self) -> None:
        await self._writer.drain()


def _is_pipe(stream: BinaryIO) -> bool:
    """Whether `stream` is a pipe or a socket (safe to make non-blocking: no terminal, no file)."""
    import os
    import stat

    try:
        mode = os.fstat(stream.fileno()).st_mode
    except (OSError, ValueError):
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


async def _streams(stdin: BinaryIO, stdout: BinaryIO) -> tuple[Any, Any]:
    """The protocol's streams: asyncio pipes when both are pipes (what a client that starts the server
    gives it), else files wrapped for anyio (a terminal, a regular file)."""
    if _is_pipe(stdin) and _is_pipe(stdout):
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=64 * 1024 * 1024, loop=loop)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader, loop=loop), stdin)
        transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, stdout)
        return _Lines(reader), _Out(asyncio.StreamWriter(transport, protocol, None, loop))
    import io

    import anyio

    return (anyio.wrap_file(io.TextIOWrapper(stdin, encoding="utf-8", errors="replace")),
            anyio.wrap_file(io.TextIOWrapper(stdout, encoding="utf-8")))


async def serve_stdio(server: Any, stdin: BinaryIO, stdout: BinaryIO) -> None:
    """Serve `server` over the protocol's own `stdin` / `stdout` until the client closes them or
    SIGINT/SIGTERM arrives."""
    import anyio
    from mcp.server.stdio import stdio_server

    reader, writer = await _streams(stdin, stdout)
    async with anyio.create_task_group() as group:
        await group.start(_until_signal, group.cancel_scope.cancel)
        async with stdio_server(stdin=reader, stdout=writer) as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())
        group.cancel_scope.cancel()


class _Bearer:
    """ASGI: every HTTP request needs `Authorization: Bearer <token>` (else 401)."""

    def __init__(self, app: Any, token: str) -> None:
        self.app, self.expected = app, f"Bearer {token}".encode()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            given = dict(scope.get("headers") or []).get(b"authorization", b"")
            if not hmac.compare_digest(given, self.expected):
                await send({"type": "http.response.start", "status": 401,
                            "headers": [(b"content-type", b"application/json"), (b"www-authenticate", b"Bearer")]})
                await send({"type": "http.response.body", "body": b'{"error": "a bearer token is required"}'})
                return
        await self.app(scope, receive, send)


async def serve_http(server: Any, host: str, port: int, token: str | None,
                     ready: Callable[[str], Awaitable[None] | None]) -> None:
    """Serve `server` over Streamable HTTP at `http://host:port/mcp` until SIGINT/SIGTERM; `ready(url)`
    is called once the socket listens (port 0: a free port)."""
    import socket

    import anyio
    import uvicorn

    if not is_loopback(host) and not token:
        raise McpError(f"hermes mcp serve: {host} is not a loopback address; serving it needs a bearer token")
    app: Any = server.streamable_http_app(host=host)
    if token:
        app = _Bearer(app, token)
    family = socket.AF_INET6 if ":" in host.strip("[]") else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
    except OSError as exc:
        sock.close()
        raise McpError(f"hermes mcp serve: cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    sock.listen(128)
    web = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    web.capture_signals = contextlib.nullcontext  # type: ignore[method-assign,assignment]  # _until_signal ends it
    bound = sock.getsockname()[1]
    shown = f"[{host.strip('[]')}]" if family == socket.AF_INET6 else host
    async with anyio.create_task_group() as group:
        await group.start(_until_signal, lambda: setattr(web, "should_exit", True))
        result = ready(f"http://{shown}:{bound}/mcp")
        if result is not None:
            await result
        await web.serve(sockets=[sock])
        group.cancel_scope.cancel()
