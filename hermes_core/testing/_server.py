"""A scripted OpenAI-compatible chat completions server on 127.0.0.1, for tests.

It is a real HTTP server (threads, HTTP/1.1 keep-alive), so a client under test goes
through the real openai SDK and the real network stack. A test queues what the server
answers, in order, and reads back what it was sent:

>>> with ScriptedServer() as server:
...     server.reply("pong", usage={"prompt_tokens": 3, "completion_tokens": 1})
...     server.fail(503, retry_after=1)
...     server.reply_json({"tasks": []}, fenced=True)
...     # point `model.base_url` at server.url and call ctx.llm; then:
...     server.requests[0].body["messages"]

When the queue is empty the server answers with `server.default` (set it with
`server.always(...)`); with no default it answers 500, so a test that makes more calls
than it scripted fails loudly.

Real servers check more than OpenAI's own does. `ScriptedServer(strict=True)` refuses what
llama.cpp's server refuses (HTTP 500 to an assistant message whose content is null), and
`server.refuse_formats("json_schema")` refuses a `response_format` type as a server without
structured output does (500 with llama.cpp's message, or the status you give). A refused
request is recorded but takes nothing from the queue.

A request with `"stream": true` is answered as OpenAI streams: server-sent events, one
`chat.completion.chunk` per piece of text (`Reply(chunks=[...])`, else the text word by word),
the tool calls (name first, then the arguments in two pieces), the finish reason, the usage
when the request asks for it (`stream_options.include_usage`), then `[DONE]`. A test can hold
a stream part-way (`Reply(hold=event, hold_after=n)`: n text pieces are sent, then the server
waits for the event; a reply not streamed waits for it before it is sent, so that a test can look at
a call while it runs for as long as it needs) or break it off (`Reply(cut_after=n)`: the connection closes after n
pieces, with no end to the chunked body). `ScriptedServer(streams="whole")` answers a streamed
request with a whole completion, as a server or proxy that cannot stream does;
`streams="unframed"` streams with no chunked framing, the body ending when the server closes the
connection (HTTP/1.0's way, as a simple server does: a client cannot tell a stream broken off
from one that ended); `streams="empty"` answers it with an event stream that ends before its first event, as
llama-cpp-python's server does for a request with tools (taking nothing from the queue).
"""

from __future__ import annotations

import json
import re
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import attrs

__all__ = ["Fault", "RecordedRequest", "Reply", "ScriptedServer"]


@attrs.frozen
class Reply:
    """A chat completion: text and/or tool calls, with usage (counted when not given)."""

    text: str | None = ""
    tool_calls: Sequence[Mapping[str, Any]] = ()
    model: str | None = None
    usage: Mapping[str, Any] | None = None
    finish_reason: str | None = None
    delay: float = 0.0
    headers: Mapping[str, str] = attrs.field(factory=dict)
    chunks: Sequence[str] = ()  # a streamed reply's text pieces (default: the text word by word)
    hold: threading.Event | None = None  # a streamed reply waits for it after `hold_after` pieces; a whole one, first
    hold_after: int = 1
    cut_after: int | None = None  # a streamed reply breaks off after this many pieces

    def pieces(self) -> list[str]:
        """The text as it is streamed: `chunks`, else each word with the space before it."""
        if self.chunks:
            return list(self.chunks)
        return re.findall(r"\s*\S+\s*$|\s*\S+", self.text or "")


@attrs.frozen
class Fault:
    """Something other than a completion: an error status, a malformed body, or a dropped connection."""

    kind: str  # "status", "malformed", "drop"
    status: int = 500
    body: bytes = b""
    delay: float = 0.0
    headers: Mapping[str, str] = attrs.field(factory=dict)


@attrs.frozen
class RecordedRequest:
    """One request the server received: `body` is the parsed JSON (None if it was not JSON)."""

    method: str
    path: str
    headers: Mapping[str, str]
    body: Any
    received_at: float

    @property
    def model(self) -> str | None:
        return self.body.get("model") if isinstance(self.body, dict) else None

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body.get("messages", [])) if isinstance(self.body, dict) else []

    @property
    def api_key(self) -> str | None:
        """The bearer token the client sent, if any."""
        value = self.headers.get("authorization", "")
        return value[len("Bearer "):] if value.startswith("Bearer ") else None


def _words(value: Any) -> int:
    """A stand-in token count: the words of a content (string, or the text of its parts)."""
    if isinstance(value, str):
        return len(value.split())
    if isinstance(value, Mapping):
        return _words(value.get("text"))
    if isinstance(value, (list, tuple)):
        return sum(_words(v) for v in value)
    return 0


def tool_call(name: str, arguments: Mapping[str, Any] | str, call_id: str | None = None) -> dict[str, Any]:
    """A `tool_calls` entry for `Reply(tool_calls=[...])`."""
    args = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {"id": call_id or f"call_{name}", "type": "function", "function": {"name": name, "arguments": args}}


class ScriptedServer:
    """The server; start it with `with ScriptedServer() as server:` or `start()` / `close()`."""

    def __init__(self, *, strict: bool = False, streams: str = "yes") -> None:
        if streams not in ("yes", "whole", "empty", "unframed"):
            raise ValueError(f"streams is 'yes', 'whole', 'unframed' or 'empty', not {streams!r}")
        self.strict = strict
        self.streams = streams
        self._refused_formats: tuple[frozenset[str], int, str] | None = None
        self._script: deque[Reply | Fault] = deque()
        self._lock = threading.Lock()
        self.requests: list[RecordedRequest] = []
        self.default: Reply | Fault | None = None
        self.responder: Callable[[Any], Reply | Fault | str] | None = None
        self._httpd: _Server | None = None
        self._counter = 0

    # -- lifecycle ----------------------------------------------------------------------

    def start(self) -> ScriptedServer:
        handler = type("_Handler", (_Handler,), {"scripted": self})
        httpd = _Server(("127.0.0.1", 0), handler)
        threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05},
                         name="scripted-llm-server", daemon=True).start()
        self._httpd = httpd
        return self

    def close(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> ScriptedServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("the scripted server is not running; call start() or use `with`")
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        """The base URL an OpenAI client (or `model.base_url`) points at: `http://127.0.0.1:PORT/v1`."""
        return f"http://127.0.0.1:{self.port}/v1"

    def url_for(self, name: str) -> str:
        """A distinct base URL on this server (`.../<name>/v1`), to tell providers apart in `requests`."""
        return f"http://127.0.0.1:{self.port}/{name}/v1"

    # -- the script -----------------------------------------------------------------------

    def push(self, *items: Reply | Fault) -> ScriptedServer:
        with self._lock:
            self._script.extend(items)
        return self

    def reply(self, text: str | None = "", **fields: Any) -> ScriptedServer:
        """Queue a completion; `fields` are those of `Reply` (tool_calls, model, usage, delay, ...)."""
        return self.push(Reply(text, **fields))

    def reply_json(self, value: Any, *, fenced: bool = False, **fields: Any) -> ScriptedServer:
        """Queue a completion whose text is `value` as JSON, optionally in a ```json fence."""
        text = json.dumps(value)
        return self.reply(f"Here it is:\n```json\n{text}\n```\n" if fenced else text, **fields)

    def fail(self, status: int, message: str = "scripted failure", *, retry_after: float | str | None = None,
             delay: float = 0.0, headers: Mapping[str, str] | None = None) -> ScriptedServer:
        """Queue an error response with an OpenAI-style error body (and `Retry-After` if given)."""
        extra = dict(headers or {})
        if retry_after is not None:
            extra["Retry-After"] = str(retry_after)
        body = json.dumps({"error": {"message": message, "type": "scripted", "code": status}}).encode()
        return self.push(Fault("status", status, body, delay, extra))

    def malformed(self, body: bytes = b'{"choices": [', *, status: int = 200) -> ScriptedServer:
        """Queue a response whose body is not a valid completion."""
        return self.push(Fault("malformed", status, body))

    def drop(self, *, delay: float = 0.0) -> ScriptedServer:
        """Queue a dropped connection: the server closes the socket without answering."""
        return self.push(Fault("drop", delay=delay))

    def always(self, item: Reply | Fault | str) -> ScriptedServer:
        """What to answer once the queue is empty (a string means `Reply(text)`)."""
        self.default = Reply(item) if isinstance(item, str) else item
        return self

    def answer(self, responder: Callable[[Any], Reply | Fault | str] | None) -> ScriptedServer:
        """Once the queue is empty, answer each request with what `responder(body)` returns for its
        JSON body (a string means `Reply(text)`): the next step of each conversation decided by
        what it holds, for clients that run many at once. None: `always` again.

        >>> server.answer(lambda body: "Done." if body["messages"][-1]["role"] == "tool" else
        ...               Reply(tool_calls=[tool_call("search", {"q": "x"})]))
        """
        self.responder = responder
        return self

    def refuse_formats(self, *types: str, status: int = 500, message: str | None = None) -> ScriptedServer:
        """Refuse requests whose `response_format` type is one of `types` (none: accept all
        again), answering `status` with `message` (default: llama.cpp's, naming the types it takes)."""
        if not types:
            self._refused_formats = None
            return self
        allowed = [t for t in ("text", "json_object", "json_schema") if t not in types]
        text = message or "1 validation error: response_format.type: Input should be " + " or ".join(
            repr(t) for t in allowed)
        self._refused_formats = (frozenset(types), status, text)
        return self

    def refusal(self, body: Any) -> tuple[int, str] | None:
        """Why this server refuses a request body (status, message), or None: the checks of
        `strict` and `refuse_formats`."""
        if not isinstance(body, dict):
            return None
        if self.strict:
            for index, message in enumerate(body.get("messages") or []):
                if isinstance(message, dict) and message.get("role") == "assistant" and message.get("content") is None:
                    return 500, (f"messages[{index}]: an assistant message's content is null; "
                                 "this server needs a string (send \"\" beside tool calls)")
        refused = self._refused_formats
        fmt = body.get("response_format")
        if refused is not None and isinstance(fmt, dict) and fmt.get("type") in refused[0]:
            return refused[1], refused[2]
        return None

    @property
    def pending(self) -> int:
        """How many queued items have not been served yet."""
        return len(self._script)

    def _next(self, body: Any = None) -> tuple[int, Reply | Fault | None]:
        """The number of this request and what to answer it: the queue's next, else the responder's, else `default`."""
        with self._lock:
            self._counter += 1
            number, queued, responder = self._counter, self._script.popleft() if self._script else None, self.responder
        if queued is not None or responder is None:
            return number, queued if queued is not None else self.default
        answer = responder(body)
        return number, Reply(answer) if isinstance(answer, str) else answer

    @staticmethod
    def _completion(number: int, reply: Reply, request: Any) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": reply.text}
        if reply.tool_calls:
            message["tool_calls"] = [dict(call) for call in reply.tool_calls]
        requested = request.get("model") if isinstance(request, dict) else None
        return {
            "id": f"chatcmpl-scripted-{number}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": reply.model or requested or "scripted-model",
            "choices": [{
                "index": 0,
                "message": message,
                "finish_reason": reply.finish_reason or ("tool_calls" if reply.tool_calls else "stop"),
            }],
            "usage": ScriptedServer._usage(reply, request),
        }

    @staticmethod
    def _chunks(number: int, reply: Reply, request: Any) -> Iterator[dict[str, Any] | None]:
        """A streamed reply: its chunks in order; None where the stream holds (`hold_after`)."""
        whole = ScriptedServer._completion(number, reply, request)
        head = {"id": whole["id"], "object": "chat.completion.chunk", "created": whole["created"],
                "model": whole["model"]}

        def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
            return {**head, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

        yield chunk({"role": "assistant", "content": ""})
        for index, piece in enumerate(reply.pieces()):
            if reply.hold is not None and index == reply.hold_after:
                yield None
            yield chunk({"content": piece})
        for index, call in enumerate(reply.tool_calls):
            function = call.get("function") or {}
            arguments = str(function.get("arguments") or "")
            half = len(arguments) // 2
            yield chunk({"tool_calls": [{"index": index, "id": call.get("id"), "type": "function",
                                         "function": {"name": function.get("name"), "arguments": ""}}]})
            for part in (arguments[:half], arguments[half:]):
                yield chunk({"tool_calls": [{"index": index, "function": {"arguments": part}}]})
        yield chunk({}, whole["choices"][0]["finish_reason"])
        options = request.get("stream_options") if isinstance(request, dict) else None
        if isinstance(options, dict) and options.get("include_usage"):
            yield {**head, "choices": [], "usage": whole["usage"]}

    @staticmethod
    def _usage(reply: Reply, request: Any) -> dict[str, Any]:
        messages = request.get("messages") if isinstance(request, dict) else None
        prompt = sum(_words(m.get("content")) for m in messages if isinstance(m, dict)) if isinstance(messages, list) else 0
        completion = _words(reply.text)
        usage = {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}
        usage.update(reply.usage or {})
        if reply.usage and "total_tokens" not in reply.usage:
            usage["total_tokens"] = int(usage["prompt_tokens"]) + int(usage["completion_tokens"])
        return usage


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256  # many concurrent clients connect at once

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that gave up (timed out, hung up) is part of the script, not an error."""
        import sys

        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body are two writes: no 40 ms delayed-ACK stall
    scripted: ScriptedServer

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: tests read `server.requests`, not stderr."""

    def _send(self, status: int, body: bytes, headers: Mapping[str, str] = {}) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for key, value in headers.items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(body)

    def _stream(self, chunks: Iterator[dict[str, Any] | None], reply: Reply, *, done: bool = True) -> None:
        """Server-sent events in a chunked body (unframed: ended by closing the connection); held
        or cut off where the reply says; `[DONE]` at the end."""
        framed = self.scripted.streams != "unframed"
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding" if framed else "Connection", "chunked" if framed else "close")
        for key, value in reply.headers.items():
            self.send_header(key, value)
        self.end_headers()

        def write(data: bytes) -> None:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data) if framed else data)
            self.wfile.flush()

        pieces = 0
        for chunk in chunks:
            if chunk is None:
                assert reply.hold is not None
                reply.hold.wait(60)
                continue
            if reply.cut_after is not None and pieces > reply.cut_after:
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
                return
            write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
            pieces += 1
        if done:
            write(b"data: [DONE]\n\n")
        if framed:
            self.wfile.write(b"0\r\n\r\n")
        else:
            self.close_connection = True

    def do_GET(self) -> None:
        if self.path.rstrip("/").endswith("/models"):
            self._send(200, json.dumps({"object": "list", "data": [{"id": "scripted-model", "object": "model"}]}).encode())
        else:
            self._send(404, b'{"error": {"message": "not found"}}')

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        server = self.scripted
        headers = {key.lower(): value for key, value in self.headers.items()}
        with server._lock:
            server.requests.append(RecordedRequest("POST", self.path, headers, body, time.monotonic()))
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._send(404, json.dumps({"error": {"message": f"no such endpoint: {self.path}"}}).encode())
            return
        refused = server.refusal(body)
        if refused is not None:
            error = {"error": {"message": refused[1], "type": "server_error" if refused[0] >= 500
                               else "invalid_request_error", "code": refused[0]}}
            self._send(refused[0], json.dumps(error).encode())
            return
        streamed = isinstance(body, dict) and body.get("stream") is True
        if streamed and server.streams == "empty":
            self._stream(iter(()), Reply(), done=False)
            return
        number, item = server._next(body)
        if item is None:
            self._send(500, b'{"error": {"message": "the scripted server has no reply left for this request"}}')
            return
        if item.delay:
            time.sleep(item.delay)
        if isinstance(item, Reply) and streamed and server.streams in ("yes", "unframed"):
            self._stream(server._chunks(number, item, body), item)
        elif isinstance(item, Reply):
            if item.hold is not None:
                item.hold.wait(60)
            self._send(200, json.dumps(server._completion(number, item, body)).encode(), item.headers)
        elif item.kind == "drop":
            self.close_connection = True
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        else:
            self._send(item.status, item.body, item.headers)
