"""ACP's newline-delimited JSON-RPC on stdin and stdout, every line answered as JSON-RPC 2.0 says.

The SDK's own stdio reader hands on whatever a line decodes to: a line that is valid JSON but not
an object (`[]`, `42`, `"str"`) ended the server, `null` read as the end of input, and a malformed
line was logged and dropped without an answer. Here, as the message transport the SDK's
connection takes, a malformed line is answered `-32700` (parse error) and anything that is not a
request, a notification or a response `-32600` (invalid request), both with `"id": null` unless
the message had a usable id; an escaped lone surrogate in a line is read as U+FFFD; a batch (a JSON array, which ACP does not use) is answered with an
invalid-request error for each request in it. The server goes on serving after each.

stdin and stdout may be pipes, sockets or regular files (`hermes acp > transcript.jsonl`): a file,
which asyncio's pipe transports refuse, is read and written directly (it never blocks).
"""

from __future__ import annotations

import asyncio
import json
import os
import stat
from typing import Any, BinaryIO

from hermes_core.hosting import loads_sent

__all__ = ["LineTransport", "open_lines"]

MAX_LINE = 50 * 2**20  # one message; a longer line is answered as too long and skipped
_PARSE_ERROR, _INVALID_REQUEST = -32700, -32600
_TOO_LONG = b"\0"  # what `_line` gives for a line it skipped


def _error(code: int, message: str, ident: Any = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": ident, "error": {"code": code, "message": message}}


def _usable_id(value: Any) -> bool:
    return value is None or isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def problem(message: Any) -> str | None:
    """Why `message` (one decoded line) is not a JSON-RPC request, notification or response (None: it is one)."""
    if not isinstance(message, dict):
        return f"a message is a JSON object, not {_kind(message)}"
    if "id" in message and not _usable_id(message["id"]):
        return "an id is a string, a number or null"
    if "method" in message:
        if not isinstance(message["method"], str):
            return "a method is a string"
        params = message.get("params")
        return None if params is None or isinstance(params, (dict, list)) else "params are an object or an array"
    if "id" in message and ("result" in message or "error" in message):
        return None
    return "a message has a method (a request or a notification) or an id and a result or an error (a response)"


def _kind(value: Any) -> str:
    return {type(None): "null", bool: "a boolean", int: "a number", float: "a number", str: "a string",
            list: "an array"}.get(type(value), type(value).__name__)


def answer_for(line: bytes) -> tuple[dict[str, Any] | None, Any]:
    """The message on `line`, or None and the answer it gets instead (None: no answer, such as for a
    batch of notifications)."""
    try:
        message = loads_sent(line)
    except (ValueError, RecursionError) as exc:  # invalid UTF-8 is a ValueError too
        why = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
        return None, _error(_PARSE_ERROR, f"Parse error: the line is not JSON ({why[:200]})")
    if isinstance(message, list):
        if not message:
            return None, _error(_INVALID_REQUEST, "Invalid Request: an empty batch")
        said = "Invalid Request: ACP takes one message a line, not a batch (a JSON array)"
        answers = [_error(_INVALID_REQUEST, said, item["id"] if isinstance(item, dict) and _usable_id(item["id"])
                          else None) for item in message if not isinstance(item, dict) or "id" in item]
        return None, answers or None
    wrong = problem(message)
    if wrong is not None:
        ident = message.get("id") if isinstance(message, dict) and _usable_id(message.get("id")) else None
        if isinstance(message, dict) and "method" not in message and ("result" in message or "error" in message):
            return None, None  # a malformed response: nobody waits for an answer to it
        return None, _error(_INVALID_REQUEST, f"Invalid Request: {wrong}", ident)
    return message, None


def _is_file(stream: BinaryIO) -> bool:
    try:
        return stat.S_ISREG(os.fstat(stream.fileno()).st_mode)
    except (OSError, ValueError):
        return False


class LineTransport:
    """The SDK's message `Transport` (`send`, `receive`, `close`) over stdin and stdout; made by `open_lines`."""

    def __init__(self, reader: asyncio.StreamReader | BinaryIO, writer: asyncio.StreamWriter | BinaryIO) -> None:
        self._reader = reader
        self._writer = writer

    async def send(self, message: Any) -> None:
        data = (json.dumps(message, separators=(",", ":")) + "\n").encode()  # ASCII: any text goes out escaped
        if isinstance(self._writer, asyncio.StreamWriter):
            self._writer.write(data)
            await self._writer.drain()
        else:
            self._writer.write(data)
            self._writer.flush()

    async def receive(self) -> dict[str, Any] | None:
        """The next message; None at the end of input. Lines that are none get their answer here."""
        while True:
            line = await self._line()
            if line is None:
                return None
            if line is _TOO_LONG:
                await self.send(_error(_INVALID_REQUEST, f"Invalid Request: a line longer than {MAX_LINE >> 20} MB "
                                                         "(one message) was skipped"))
                continue
            if not line.strip():
                continue
            message, answer = answer_for(line)
            if message is not None:
                return message
            if answer is not None:
                await self.send(answer)

    async def _line(self) -> bytes | None:
        if not isinstance(self._reader, asyncio.StreamReader):
            line = self._reader.readline(MAX_LINE + 1)
            if len(line) > MAX_LINE and not line.endswith(b"\n"):
                while (rest := self._reader.readline(MAX_LINE)) and not rest.endswith(b"\n"):
                    pass
                return _TOO_LONG
            return line or None
        try:
            line = await self._reader.readuntil(b"\n")
        except asyncio.IncompleteReadError as exc:
            return exc.partial or None
        except asyncio.LimitOverrunError:
            while True:  # skip to the end of the line, a buffer at a time
                try:
                    await self._reader.readuntil(b"\n")
                    break
                except asyncio.LimitOverrunError as exc:
                    await self._reader.readexactly(exc.consumed)
                except asyncio.IncompleteReadError:
                    break
            return _TOO_LONG
        return line

    async def close(self) -> None:
        if isinstance(self._writer, asyncio.StreamWriter):
            self._writer.close()
        else:
            self._writer.flush()


async def open_lines(stdin: BinaryIO, stdout: BinaryIO) -> LineTransport:
    """The transport on `stdin` and `stdout` (byte streams of their own)."""
    loop = asyncio.get_running_loop()
    reader: asyncio.StreamReader | BinaryIO = stdin
    if not _is_file(stdin):
        reader = asyncio.StreamReader(limit=MAX_LINE)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), stdin)
    writer: asyncio.StreamWriter | BinaryIO = stdout
    if not _is_file(stdout):
        transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, stdout)
        writer = asyncio.StreamWriter(transport, protocol, None, loop)
    return LineTransport(reader, writer)
