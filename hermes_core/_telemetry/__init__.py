"""Traces and metrics on OpenTelemetry (docs/observability.md): the seams the rest of the package
calls, and nothing that imports OpenTelemetry.

`ACTIVE` is None while export is off, so a seam costs one attribute test:

    telemetry = _telemetry.ACTIVE
    if telemetry is not None:
        ...

`configure(config)` (each time a manager reads its config) turns export on when
`observability.otlp_endpoint`, `OTEL_EXPORTER_OTLP_ENDPOINT` (or its traces variant) is set, or
when the process already runs an OpenTelemetry SDK of its own (a host that embeds hermes-core),
and off when none is: the latest config read decides. The SDK's providers made for an endpoint
are made once per process and kept (turned on again, export goes on through them).

Modules, internal: `settings` (whether and how export is on; reads the config and the
environment, imports nothing), `spans` (the `Telemetry` object: the tracer, the meters and one
method per kind of span; imports the SDK), `start` (the SDK's providers and OTLP/HTTP exporters),
`relay` (an isolated plugin's spans and metrics: collected in its process, made again in the host's).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, ContextManager

if TYPE_CHECKING:
    from .._config.config import Config
    from .relay import ChildTelemetry
    from .spans import Telemetry

__all__ = ["ACTIVE", "NO_SPAN", "NoSpan", "attached", "carried", "collected", "configure", "continued",
           "flush_to_host", "headers", "meta_headers", "relayed", "sending", "span"]

log = logging.getLogger("hermes_core.telemetry")

ACTIVE: Telemetry | None = None  # set by `configure` while export is on
_made: dict[Any, Telemetry] = {}  # by endpoint, or by the process's own providers: made once each
_child: ChildTelemetry | None = None  # in an isolated plugin's process, once a call carried a trace
_sender: Callable[[dict[str, Any]], None] | None = None  # there: how what ends between calls reaches the host


def configure(config: Config) -> None:
    """Turn export on or off as the config and the environment say; while on, the latest
    config's content and hook settings hold."""
    global ACTIVE
    from .settings import wanted

    settings = wanted(config)
    if settings is None:
        ACTIVE = None
        return
    from .start import providers_key, start

    key = providers_key(settings)
    telemetry = _made.get(key)
    if telemetry is None:
        telemetry = start(settings)
        if telemetry is not None:
            _made[key] = telemetry
    else:
        telemetry.settings = settings
    ACTIVE = telemetry


class NoSpan:
    """What `span` gives while export is off: takes attributes and events, keeps nothing."""

    __slots__ = ()

    def set(self, key: str, value: Any) -> None:
        """Set attribute `key` of the span."""

    def event(self, name: str, **attributes: Any) -> None:
        """Add event `name` to the span."""


NO_SPAN = NoSpan()


@contextlib.contextmanager
def span(name: str, plugin_id: str | None = None, **attributes: Any) -> Iterator[Any]:
    """A span of the caller's own (`ctx.trace_span`) under the current one; a `NoSpan` while off."""
    telemetry = ACTIVE
    if telemetry is None:
        yield NO_SPAN
        return
    with telemetry.own(name, plugin_id, attributes) as handle:
        yield handle


def headers() -> dict[str, str]:
    """The current trace context as W3C headers (`traceparent`, ...) for an outgoing request; {} while off."""
    telemetry = ACTIVE
    return {} if telemetry is None else telemetry.headers()


def meta_headers(body: bytes) -> dict[str, str]:
    """The trace context an MCP message (JSON-RPC, `body`) carries in `params._meta`, as the HTTP
    request's W3C headers, so that the server's span of the request joins the message's trace."""
    if b'"traceparent"' not in body:
        return {}
    import json

    try:
        meta = json.loads(body)["params"]["_meta"]
    except (ValueError, KeyError, TypeError):
        return {}
    if not isinstance(meta, dict):
        return {}
    return {key: meta[key] for key in ("traceparent", "tracestate") if isinstance(meta.get(key), str)}


# -- an isolated plugin's process (`relay`) ---------------------------------------------------------


def carried() -> dict[str, Any] | None:
    """What a call to an isolated plugin's process (or its request to the host) carries: the trace
    context and the settings its spans follow; None while off."""
    telemetry = ACTIVE
    if telemetry is None:
        return None
    return {"headers": telemetry.headers(), "record_content": telemetry.settings.record_content,
            "slow_hook": telemetry.settings.slow_hook}


def continued(carried: dict[str, Any] | None, tool: str | None = None) -> ContextManager[None]:
    """In an isolated plugin's process, one call from the host: under the host's span, export on as
    the host's is (`carried`; None: off); `tool` the tool it runs, which the host has a span for."""
    global ACTIVE, _child
    if not carried:
        ACTIVE = None
        return contextlib.nullcontext()
    record, slow = bool(carried.get("record_content")), float(carried.get("slow_hook", 0.1))
    child = _child
    if child is None or (child.settings.record_content, child.settings.slow_hook) != (record, slow):
        from .relay import child_telemetry
        from .settings import Settings

        child = _child = child_telemetry(Settings(None, record, slow))
        if _sender is not None:
            child.sending(_sender)
    ACTIVE = child
    return child.serving(carried.get("headers") or {}, tool)


def collected() -> dict[str, Any]:
    """In an isolated plugin's process: the spans ended and the metrics measured since the last
    answer, as data to send with it (`{"spans": [...], "metrics": {...}}`, each only when there is some)."""
    return {} if _child is None else _child.drained()


def sending(send: Callable[[dict[str, Any]], None]) -> None:
    """In an isolated plugin's process: what ends between calls (a plugin's thread) goes to `send`
    by itself, within a bounded time (`relay.RELAY_SECONDS`), as `collected` gives it."""
    global _sender
    _sender = send
    if _child is not None:
        _child.sending(send)


def flush_to_host() -> None:
    """In an isolated plugin's process about to exit: send what is left now."""
    if _child is not None:
        _child.flush_to_host()


def attached(carried: dict[str, Any] | None) -> ContextManager[None]:
    """In the host: the context an isolated plugin's request carried (its `ctx.llm` call) current."""
    telemetry = ACTIVE
    if telemetry is None or not carried:
        return contextlib.nullcontext()
    return telemetry.attached(carried.get("headers") or {})


def relayed(sent: Mapping[str, Any]) -> None:
    """In the host: export the spans an isolated plugin's process sent back (with an answer, or
    by themselves), as they were, and add its metrics to the host's."""
    telemetry = ACTIVE
    if telemetry is None:
        return
    spans, metrics = sent.get("spans"), sent.get("metrics")
    if not (spans and isinstance(spans, list)) and not (metrics and isinstance(metrics, dict)):
        return
    from .relay import merge, replay

    try:
        if isinstance(spans, list):
            replay(telemetry.tracer_provider, spans)
        if isinstance(metrics, dict):
            merge(telemetry, metrics)
    except Exception as exc:  # noqa: BLE001 - the plugin's process sent something else: its spans are lost, not the call
        log.warning("spans or metrics sent back by an isolated plugin's process could not be exported: %s: %s",
                    type(exc).__name__, exc)
