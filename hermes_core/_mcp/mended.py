"""A server's message that holds an escaped lone surrogate ("\\ud800", which JSON's grammar allows
and Python's `json` reads) is read with U+FFFD in its place.

The SDK parses each message with pydantic, which refuses such a line as invalid JSON: the line is
logged with a traceback and dropped, and the call it answered waits until its time limit. Every
transport hands the refused line on as an exception in its read stream; `mended` reads it again
there, with the text made encodable as everywhere else (`storable_text`).
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

from .._messages import storable_text

__all__ = ["mended"]


def _refused_line(item: Any) -> str | None:
    """The line the SDK refused as invalid JSON, when `item` is that refusal."""
    errors = getattr(item, "errors", None)
    if not callable(errors):
        return None
    try:
        (error,) = errors()
    except (TypeError, ValueError):
        return None
    line = error.get("input") if error.get("type") == "json_invalid" else None
    return line if isinstance(line, str) and "\\u" in line.lower() else None


def _mend(item: Any) -> Any:
    """`item` (a message or an exception from the transport), a refused line read again when a lone
    surrogate was all that was wrong with it."""
    line = _refused_line(item)
    if line is None:
        return item
    try:
        text = json.dumps(json.loads(line), ensure_ascii=False)
    except (ValueError, RecursionError):
        return item
    fixed = storable_text(text)
    if fixed == text:
        return item
    from mcp import types
    from mcp.shared.message import SessionMessage

    try:
        return SessionMessage(types.jsonrpc_message_adapter.validate_json(fixed, by_name=False))
    except ValueError:
        return item


class _MendedReads:
    """The transport's read stream, each refused line read again (see the module)."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:  # `last_context`, which the SDK reads when present
        return getattr(self._inner, name)

    async def receive(self) -> Any:
        return _mend(await self._inner.receive())

    async def aclose(self) -> None:
        await self._inner.aclose()

    def __aiter__(self) -> _MendedReads:
        return self

    async def __anext__(self) -> Any:
        return _mend(await self._inner.__anext__())

    async def __aenter__(self) -> _MendedReads:
        await self._inner.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> bool | None:
        return await self._inner.__aexit__(*exc)  # type: ignore[no-any-return]


class _Mendable(logging.Filter):
    """Leaves out the SDK's traceback for a line `mended` reads again."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        return exc is None or _mend(exc) is exc


@asynccontextmanager
async def mended(transport: AbstractAsyncContextManager[Any]) -> AsyncIterator[Any]:
    """`transport` (the SDK's stdio, SSE or streamable HTTP client) with its refused lines read again."""
    for name in ("mcp.client.stdio", "mcp.client.sse", "mcp.client.streamable_http"):
        sdk_log = logging.getLogger(name)
        if not any(isinstance(f, _Mendable) for f in sdk_log.filters):
            sdk_log.addFilter(_Mendable())
    async with transport as streams:
        read, *rest = streams
        yield (_MendedReads(read), *rest)
