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

The end of input is not the end of the requests read before it (the SDK, told at once, cancels
them unanswered): every request in flight is answered first. They have `grace` seconds to finish;
then `overdue()` is called (the server stops its turns, which answer `cancelled`), and what is still
unanswered a few seconds later gets error -32800 (request cancelled). A request of ours to the
client (a permission, a file), which nobody is left to answer, fails at once with the same error.
Then the responses are flushed and the connection ends.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import stat
from collections.abc import Awaitable, Callable
from typing import Any, BinaryIO

from hermes_core.hosting import loads_sent

__all__ = ["LineTransport", "open_lines"]

MAX_LINE = 50 * 2**20  # one message; a longer line is answered as too long and skipped
_PARSE_ERROR, _INVALID_REQUEST, _CANCELLED = -32700, -32600, -32800
STOPPING = 5.0  # seconds the requests still in flight at the end of `grace` have to answer once stopped
_TOO_LONG = b"\0"  # what `_line` gives for a line it skipped


def _error(code: int, message: str, ident: Any = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": ident, "error": {"code": code, "message": message}}


def _usable_id(value: Any) -> bool:
    """A JSON-RPC id: a string, a number (an integer or, though the spec advises against it, a
    fraction, echoed as sent) or null; never a boolean, an object or an array."""
    if isinstance(value, bool):
        return False
    return value is None or isinstance(value, (str, int)) or (isinstance(value, float) and math.isfinite(value))


def problem(message: Any) -> str | None:
    """Why `message` (one decoded line) is not a JSON-RPC request, notification or response (None: it is one)."""
    if not isinstance(message, dict):
        return f"a message is a JSON object, not {_kind(message)}"
    if "id" in message and not _usable_id(message["id"]):
        return "an id is a string, a finite number or null"
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
    """The SDK's message `Transport` (`send`, `receive`, `close`) over stdin and stdout; made by `open_lines`.

    `grace`: seconds the requests in flight at the end of input have to finish; `overdue`: called
    when they have not (the server stops its turns)."""

    def __init__(self, reader: asyncio.StreamReader | BinaryIO, writer: asyncio.StreamWriter | BinaryIO, *,
                 grace: float = 10.0, overdue: Callable[[], Awaitable[None]] | None = None) -> None:
        self._reader = reader
        self._writer = writer
        self.grace, self.overdue = grace, overdue
        self._asked: dict[Any, str] = {}  # the client's requests not answered yet: id -> method
        self._ours: list[Any] = []  # ids of our requests to the client not answered yet
        self._dropped: set[Any] = set()  # ids answered -32800 at the end: a late answer is not sent
        self._changed = asyncio.Event()
        self._deadline: float | None = None  # the end of input was read: when the requests in flight are overdue
        self._stopping = False

    async def send(self, message: Any) -> None:
        if isinstance(message, dict) and "id" in message:
            ident = message["id"]
            if "method" in message:
                self._ours.append(ident)
            elif ident in self._dropped:
                return
            else:
                self._asked.pop(ident, None)
            self._changed.set()
        data = (json.dumps(message, separators=(",", ":")) + "\n").encode()  # ASCII: any text goes out escaped
        if isinstance(self._writer, asyncio.StreamWriter):
            self._writer.write(data)
            await self._writer.drain()
        else:
            self._writer.write(data)
            self._writer.flush()

    async def receive(self) -> dict[str, Any] | None:
        """The next message; None at the end of input, once every request read has been answered.
        Lines that are none get their answer here."""
        while True:
            line = await self._line()
            if line is None:
                return await self._ended()
            if line is _TOO_LONG:
                await self.send(_error(_INVALID_REQUEST, f"Invalid Request: a line longer than {MAX_LINE >> 20} MB "
                                                         "(one message) was skipped"))
                continue
            if not line.strip():
                continue
            message, answer = answer_for(line)
            if message is not None:
                if "method" in message and "id" in message:
                    self._asked[message["id"]] = message["method"]
                elif "method" not in message and message["id"] in self._ours:
                    self._ours.remove(message["id"])
                return message
            if answer is not None:
                await self.send(answer)

    async def _ended(self) -> dict[str, Any] | None:
        """At the end of input: an error answer to our next request the client will never answer,
        or None once the client's requests are answered (see the module)."""
        loop = asyncio.get_running_loop()
        if self._deadline is None:
            self._deadline = loop.time() + self.grace
        while True:
            if self._ours:
                return _error(_CANCELLED, "Request cancelled: the client closed its input", self._ours.pop(0))
            if not self._asked:
                return None
            left = self._deadline - loop.time()
            if left <= 0 and not self._stopping:
                self._stopping, self._deadline = True, loop.time() + STOPPING
                if self.overdue is not None:
                    await self.overdue()
                continue
            if left <= 0:
                for ident, method in list(self._asked.items()):
                    await self.send(_error(_CANCELLED, f"Request cancelled: {method} was still running "
                                                       f"{self.grace:g} s after the client closed its input", ident))
                    self._dropped.add(ident)
                self._asked.clear()
                return None
            self._changed.clear()
            try:
                await asyncio.wait_for(self._changed.wait(), left)
            except asyncio.TimeoutError:
                pass

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
        """Flush what was sent (a client that stopped reading is waited for a few seconds) and close."""
        if isinstance(self._writer, asyncio.StreamWriter):
            self._writer.transport.set_write_buffer_limits(0)  # drain() now waits for every byte written
            try:
                await asyncio.wait_for(self._writer.drain(), STOPPING)
            except (asyncio.TimeoutError, OSError):
                pass
            self._writer.close()
        else:
            self._writer.flush()


async def open_lines(stdin: BinaryIO, stdout: BinaryIO, *, grace: float = 10.0,
                     overdue: Callable[[], Awaitable[None]] | None = None) -> LineTransport:
    """The transport on `stdin` and `stdout` (byte streams of their own); `grace` and `overdue`: see
    `LineTransport`."""
    loop = asyncio.get_running_loop()
    reader: asyncio.StreamReader | BinaryIO = stdin
    if not _is_file(stdin):
        reader = asyncio.StreamReader(limit=MAX_LINE)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), stdin)
    writer: asyncio.StreamWriter | BinaryIO = stdout
    if not _is_file(stdout):
        transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, stdout)
        writer = asyncio.StreamWriter(transport, protocol, None, loop)
    return LineTransport(reader, writer, grace=grace, overdue=overdue)
