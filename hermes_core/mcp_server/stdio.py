"""`hermes mcp serve` over stdio: the protocol on the process's own stdin and stdout, until the
client closes them or SIGINT/SIGTERM arrives (`hosting.until_signal`)."""

from __future__ import annotations

import asyncio
import json
from typing import Any, BinaryIO

from hermes_core.hosting import loads_sent, until_signal

from .ids import refusal

__all__ = ["serve_stdio"]


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


class _Mended:
    """Lines as the SDK reads them, a line whose JSON holds an escaped lone surrogate ("\\ud800",
    which JSON allows) given with U+FFFD in its place (`hosting.loads_sent`): the SDK refuses such a
    line as invalid JSON, and the request it carried was never answered. A request whose id the SDK
    does not take is answered here (`ids.refusal`) and not handed on."""

    def __init__(self, lines: Any, out: Any) -> None:
        self._lines = lines.__aiter__()
        self._out = out

    def __aiter__(self) -> _Mended:
        return self

    async def __anext__(self) -> str:
        line: str = await self._lines.__anext__()
        while (refused := refusal(line.encode("utf-8", "surrogatepass"))) is not None:
            await self._out.write(json.dumps(refused) + "\n")
            await self._out.flush()
            line = await self._lines.__anext__()
        if "\\u" not in line:
            return line
        try:
            return json.dumps(loads_sent(line.encode("utf-8", "surrogatepass")), ensure_ascii=False) + "\n"
        except (ValueError, RecursionError):  # not JSON: the SDK answers it as it does
            return line


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
    lines: Any = _Mended(reader, writer)  # read as the SDK reads its AsyncFile: `async for line in ...`
    with anyio.CancelScope() as scope, until_signal(scope.cancel):
        async with stdio_server(stdin=lines, stdout=writer) as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())
