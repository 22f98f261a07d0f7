"""The openai SDK, imported on first use: cached clients, one request, and what a failure means.

Requests go through the SDK's client (`post`), so the SDK adds its headers and the key,
sends them and turns an error status into its exception; the body is handed to it as the
JSON bytes of the request the host already checked. The typed `chat.completions.create`
re-walks every message against the SDK's parameter types before sending (~90 ms for 160
messages of an agent's history, for an identical result); `post` with `content=` does not.
The reply body is read as plain JSON by the host, which needs three fields of it and no
typed model. An SDK whose `post` takes no `content` gets `with_raw_response.create`.

Building an HTTP client costs tens of milliseconds (TLS setup), so there is one per process
for sync calls and one per event loop for async calls (on aiohttp when it is installed: 100
concurrent calls cost a third of the client CPU they cost on httpx), shared by the light openai client
objects cached per (base URL, key). The SDK's own retries are off: fallback and key
rotation are the host's (see `client`). The async clients of a loop are closed when
`asyncio.run` shuts the loop down (through an async generator it finalises).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import weakref
from collections.abc import AsyncIterator, Iterator
from typing import Any

import attrs

from .. import _telemetry
from .._messages import storable_text
from .._runtime.cancel import breakable, breaking, cancel_check
from . import stoppable

__all__ = ["NO_KEY", "Failure", "apost", "async_client", "classify", "dropped_connection", "encode", "error_message",
           "post", "post_stream", "sync_client"]

# The SDK insists on a key; a server that needs none ignores this one.
NO_KEY = "no-key-needed"

_lock = threading.Lock()
_sync_http: Any = None
_stoppable = False  # whether a stop breaks off a request on `_sync_http` in its own thread (`stoppable`)
_sync_clients: dict[tuple[str, str], Any] = {}
_loops: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopClients] = weakref.WeakKeyDictionary()


def sync_client(base_url: str, key: str | None) -> Any:
    """The cached `openai.OpenAI` for `base_url` and `key`."""
    global _sync_http, _stoppable
    slot = (base_url, key or NO_KEY)
    client = _sync_clients.get(slot)
    if client is None:
        import openai

        with _lock:
            if _sync_http is None:
                _sync_http = openai.DefaultHttpxClient()
                _stoppable = stoppable.install(_sync_http)
            client = _sync_clients.setdefault(
                slot, openai.OpenAI(api_key=slot[1], base_url=base_url, max_retries=0, http_client=_sync_http)
            )
    return client


def _async_http() -> Any:
    """The SDK's aiohttp transport (`openai[aiohttp]`), which it recommends for many concurrent
    requests; its default httpx transport when aiohttp is not installed."""
    import openai

    try:
        return openai.DefaultAioHttpClient()
    except (AttributeError, RuntimeError):  # an SDK without it, or without the aiohttp extra
        return openai.DefaultAsyncHttpxClient()


class _LoopClients:
    __slots__ = ("clients", "http", "keeper")

    def __init__(self) -> None:
        self.http = _async_http()
        self.clients: dict[tuple[str, str], Any] = {}
        self.keeper: AsyncIterator[None] | None = None

    async def _keep(self) -> AsyncIterator[None]:
        try:
            yield
        finally:  # the loop is shutting down (asyncio.run's shutdown_asyncgens)
            await self.http.aclose()


async def async_client(base_url: str, key: str | None) -> Any:
    """The `openai.AsyncOpenAI` for `base_url` and `key` on the running event loop."""
    loop = asyncio.get_running_loop()
    state = _loops.get(loop)
    if state is None:
        state = _loops[loop] = _LoopClients()
        state.keeper = state._keep()
        await state.keeper.__anext__()
    slot = (base_url, key or NO_KEY)
    client = state.clients.get(slot)
    if client is None:
        import openai

        client = state.clients[slot] = openai.AsyncOpenAI(
            api_key=slot[1], base_url=base_url, max_retries=0, http_client=state.http
        )
    return client


_PATH = "/chat/completions"
_SECURITY = {"bearer_auth": True}
_low_level: bool | None = None  # does this SDK's `post` take pre-encoded `content` (and `security`)?


def _has_low_level(client: Any) -> bool:
    global _low_level
    if _low_level is None:
        import inspect

        from openai._models import FinalRequestOptions

        fields = getattr(FinalRequestOptions, "model_fields", None) or getattr(FinalRequestOptions, "__fields__", {})
        _low_level = "content" in inspect.signature(client.post).parameters and "security" in fields
    return _low_level


def _jsonable(value: Any) -> Any:
    """What the SDK's own encoder does with values JSON does not know: dates and pydantic models."""
    import datetime

    if isinstance(value, datetime.datetime):
        return value.isoformat()
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump(exclude_unset=True, mode="json", by_alias=True)
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def encode(request: dict[str, Any]) -> bytes:
    """The request body as the SDK would encode it (compact, UTF-8, no NaN). Every model request
    of every caller is encoded here, so this is where its text is made encodable: a lone surrogate
    (which `json.loads` gives for an escaped "\\ud800", in a caller's message or a tool's result)
    goes to the model as U+FFFD."""
    text = json.dumps(request, ensure_ascii=False, separators=(",", ":"), allow_nan=False, default=_jsonable)
    try:
        return text.encode()
    except UnicodeEncodeError:  # only in JSON strings: replaced there, as `storable_text` would
        return storable_text(text).encode()  # type: ignore[no-any-return]


def post(client: Any, request: dict[str, Any], timeout: float) -> bytes:
    """Send one chat completion request through `client` (an `openai.OpenAI`); the response body.
    In a turn that can be stopped, a stop breaks the request off: in this thread when `client` is
    on the process's own HTTP client (`stoppable`: its connection is shut down, the request
    fails, and that is said as `Cancelled`); another client's request runs in its own thread,
    waited for until it answers or the turn is stopped (then its answer, when it comes, is dropped)."""
    if not _stoppable or getattr(client, "_client", None) is not _sync_http:
        return breakable(lambda: _post(client, request, timeout))
    ident = threading.get_ident()
    with breaking(lambda: stoppable.shut(ident)):
        try:
            return _post(client, request, timeout)
        except Exception:
            cancel_check()  # broken off by a stop: that is what happened, not the connection error it made
            raise


def _options(timeout: float) -> dict[str, Any]:
    """The SDK's request options: the time limit, the key, and the trace context while export is on."""
    if _telemetry.ACTIVE is None:
        return {"timeout": timeout, "security": _SECURITY}
    return {"timeout": timeout, "security": _SECURITY, "headers": _telemetry.headers()}


def _post(client: Any, request: dict[str, Any], timeout: float) -> bytes:
    if _has_low_level(client):
        return client.post(_PATH, cast_to=bytes, content=encode(request),  # type: ignore[no-any-return]
                           options=_options(timeout))
    raw = client.chat.completions.with_raw_response.create(**json.loads(encode(request)), timeout=timeout,
                                                            extra_headers=_telemetry.headers() or None)
    return raw.http_response.content  # type: ignore[no-any-return]


def post_stream(client: Any, request: dict[str, Any], timeout: float) -> Iterator[Any]:
    """Send one chat completion request with `"stream": true` through `client`; its chunks as
    plain JSON data, in order (a server that answered with a whole completion instead gives it
    as one chunk). `timeout` bounds each wait for the next piece, not the whole answer."""
    import openai

    if not _has_low_level(client):
        for typed in client.chat.completions.create(**json.loads(encode(request)), timeout=timeout,
                                                    extra_headers=_telemetry.headers() or None):
            yield typed.model_dump(exclude_unset=True)
        return
    ident = threading.get_ident()
    waiting = breaking(lambda: stoppable.shut(ident)) if _stoppable and getattr(client, "_client", None) is _sync_http \
        else contextlib.nullcontext()
    with waiting:  # a stop before the first byte (a model thinking) breaks off the wait for it
        try:
            stream = client.post(_PATH, cast_to=object, content=encode(request), stream=True,
                                 stream_cls=openai.Stream[object], options=_options(timeout))
        except Exception:
            cancel_check()
            raise
    try:
        with breaking(lambda: _shut(stream.response)):  # a stopped turn: the read blocked on the model returns
            if "event-stream" not in stream.response.headers.get("content-type", "event-stream"):
                yield as_chunk(json.loads(stream.response.read()))
                return
            yield from stream
    finally:
        stream.close()


def _shut(response: Any) -> None:
    """Break off `response` (an httpx response being read in another thread): its connection is
    shut down, which wakes the blocked read (closing the socket alone would not)."""
    import socket

    network = response.extensions.get("network_stream")
    sock = network.get_extra_info("socket") if network is not None else None
    if sock is not None:
        sock.shutdown(socket.SHUT_RDWR)
    else:
        response.close()


def as_chunk(completion: Any) -> Any:
    """A whole chat completion as the one stream chunk that carries all of it."""
    if not isinstance(completion, dict) or not isinstance(completion.get("choices"), list):
        return completion
    choices = []
    for choice in completion["choices"]:
        message = choice.get("message") if isinstance(choice, dict) else None
        if not isinstance(message, dict):
            raise ValueError("the response has no choices[0].message")
        delta = {**message}
        if isinstance(message.get("tool_calls"), list):
            delta["tool_calls"] = [{**call, "index": index} for index, call in enumerate(message["tool_calls"])
                                   if isinstance(call, dict)]
        choices.append({"index": choice.get("index", 0), "delta": delta, "finish_reason": choice.get("finish_reason")})
    return {**completion, "choices": choices}


async def apost(client: Any, request: dict[str, Any], timeout: float) -> bytes:
    """`post` through an `openai.AsyncOpenAI`."""
    if _has_low_level(client):
        return await client.post(_PATH, cast_to=bytes, content=encode(request),  # type: ignore[no-any-return]
                                 options=_options(timeout))
    raw = await client.chat.completions.with_raw_response.create(**json.loads(encode(request)), timeout=timeout,
                                                                  extra_headers=_telemetry.headers() or None)
    return raw.http_response.content  # type: ignore[no-any-return]


@attrs.frozen
class Failure:
    """What went wrong with one attempt, as plain data (no exception, no request, no key)."""

    reason: str
    status: int | None = None
    retryable: bool = False
    retry_after: float | None = None


def _retry_after(headers: Any) -> float | None:
    try:
        if headers.get("retry-after-ms"):
            return float(headers["retry-after-ms"]) / 1000
        value = headers.get("retry-after")
        if value is None:
            return None
        return max(0.0, float(value))
    except (TypeError, ValueError):
        import email.utils
        import time

        try:
            when = email.utils.parsedate_to_datetime(str(headers.get("retry-after")))
        except (TypeError, ValueError):
            return None
        return max(0.0, when.timestamp() - time.time())


def error_message(exc: Any) -> str:
    """The message of an SDK error: the body's `error.message` when the server sent one."""
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        error = body.get("error", body)
        text = error.get("message") if isinstance(error, dict) else error
        if text:
            return str(text)
    return str(getattr(exc, "message", "") or exc)


def dropped_connection(exc: BaseException) -> bool:
    """Whether `exc` is a connection that failed or was dropped (not a timeout, not a status)."""
    import openai

    return isinstance(exc, openai.APIConnectionError) and not isinstance(exc, openai.APITimeoutError)


def classify(exc: BaseException, timeout: float) -> Failure:
    """Turn an SDK exception into a `Failure`: 429, 5xx, connection errors, timeouts and
    malformed responses fall back; other 4xx do not."""
    import openai

    from .._quote import clip
    from .credentials import scrub

    if isinstance(exc, openai.APITimeoutError):
        return Failure(f"timed out after {timeout:g} s", retryable=True)
    if isinstance(exc, openai.APIConnectionError):
        return Failure(f"connection failed ({clip(scrub(str(exc.__cause__ or exc)))})", retryable=True)
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        reason = f"HTTP {status}: {clip(scrub(error_message(exc)), 300)}"
        retryable = status == 429 or status >= 500
        return Failure(reason, status, retryable, _retry_after(exc.response.headers) if retryable else None)
    if isinstance(exc, (openai.APIResponseValidationError, ValueError)):
        return Failure(f"malformed response ({type(exc).__name__})", retryable=True)
    return Failure(f"{type(exc).__name__}: {clip(scrub(str(exc)), 300)}")
