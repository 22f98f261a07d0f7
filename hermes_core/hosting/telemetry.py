"""Traces for hosts (docs/observability.md): the spans a host opens around what it serves, all
no-ops while OpenTelemetry export is off (then nothing of OpenTelemetry is imported).

- `turn_span(agent, session_id, model, platform, text)`: the `invoke_agent` span of one turn
  (None while off; `finished(...)` sets what the turn took);
- `served_span(name, headers, **attributes)`: a SERVER span for one request, continuing the
  caller's trace from its W3C `traceparent` header;
- `new_trace(name, linked_to=None, /, **attributes)`: a span that starts a trace of its own (a cron run,
  a batch item), linked to the span whose headers `linked_to` holds (the batch's);
- `trace_headers()`: the current trace context as headers, for a request to another process;
- `flush_traces(seconds)`: export what is queued now (a process about to be killed: a Ray worker);
- `TraceRequests(app)`: ASGI, a `served_span` per HTTP request (`serve_asgi` puts it around every app).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Mapping
from typing import Any, ContextManager

from .. import _telemetry

__all__ = ["TraceRequests", "flush_traces", "new_trace", "served_span", "trace_headers", "turn_span"]

_OFF: ContextManager[Any] = contextlib.nullcontext(None)
_NO_SPAN: ContextManager[Any] = contextlib.nullcontext(_telemetry.NO_SPAN)


def turn_span(agent: str, session_id: str, model: str, platform: str, text: str) -> ContextManager[Any]:
    """The `invoke_agent` span of one turn, current while the turn runs; None while export is off."""
    telemetry = _telemetry.ACTIVE
    return _OFF if telemetry is None else telemetry.turn(agent, session_id, model, platform, text)


def served_span(name: str, headers: Mapping[str, str], **attributes: Any) -> ContextManager[Any]:
    """A SERVER span for one request (`POST /v1/chat/completions`), child of the caller's span
    when `headers` carry a `traceparent`; it has `set(key, value)` and `event(name, **attributes)`."""
    telemetry = _telemetry.ACTIVE
    return _NO_SPAN if telemetry is None else telemetry.served(name, headers, attributes)


def new_trace(name: str, linked_to: Mapping[str, str] | None = None, /, **attributes: Any) -> ContextManager[Any]:
    """A span that starts a trace of its own, whatever span is current (a cron run, a batch item),
    with a link to the span whose context `linked_to` holds (`trace_headers()` where the work came
    from: the batch's span, in another process or not)."""
    telemetry = _telemetry.ACTIVE
    return _NO_SPAN if telemetry is None else telemetry.own_trace(name, attributes, linked_to)


def flush_traces(seconds: float = 5.0) -> None:
    """Export the spans and metrics still queued, waiting up to `seconds` (a process that is about to
    be killed rather than exit, as a Ray worker is); nothing while export is off."""
    telemetry = _telemetry.ACTIVE
    if telemetry is not None:
        telemetry.flush(seconds)


def trace_headers() -> dict[str, str]:
    """The current trace context (`traceparent`, ...) for a request to another process; {} while off."""
    return _telemetry.headers()


_ID = re.compile(r"/(?!v\d+(?:/|$))[^/]*\d[^/]*")  # a segment with a digit (not `/v1`): an id (`/runs/run_3f2a`)


class TraceRequests:
    """ASGI: each HTTP request in a SERVER span (`POST /v1/chat/completions`, ids in the path as
    `{id}`) that continues the caller's `traceparent`, with its status; while export is off, the
    request goes straight through."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        telemetry = _telemetry.ACTIVE
        if telemetry is None or scope.get("type") != "http":
            await self.app(scope, receive, send)
            return
        path, method = scope.get("path", ""), scope.get("method", "")
        headers = {key.decode("latin-1"): value.decode("latin-1") for key, value in scope.get("headers", ())}
        attributes = {"http.request.method": method, "url.path": path, "url.scheme": scope.get("scheme", "http")}
        with telemetry.served(f"{method} {_ID.sub('/{id}', path)}", headers, attributes) as span:
            async def sent(message: Any) -> None:
                if message.get("type") == "http.response.start":
                    span.set("http.response.status_code", message.get("status", 0))
                await send(message)

            await self.app(scope, receive, sent)
