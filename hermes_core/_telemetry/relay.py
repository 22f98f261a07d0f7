"""An isolated plugin's spans, made in its process and exported by the host's (`isolation: process`).

The host sends the current trace context and the content setting with each call to the child
(`carried`). The child then runs an SDK tracer provider of its own whose only processor keeps what
ends (`Collector`); the spans go back as plain data with each answer, and the host starts and ends
them again through its own providers (`replay`) with the child's trace and span ids, so that the
tree holds across the two processes: the host's `execute_tool` over the plugin's `ctx.trace_span`,
over the `chat` span of the `ctx.llm` call that the host makes for the child with the child's
context. The child needs no exporter and no settings of its own, and the spans go wherever the
host's go (its endpoint, or the providers of a program that embeds hermes-core).

Its metrics go the same way: the sums the child's `Telemetry` keeps (tool calls of the tools the
plugin dispatches there, hook time of the callbacks run there) and any measurement of its
instruments go back with the answer, and the host adds them to its own meter (`merge`). What ends
between calls (a plugin's thread) is sent by itself within `RELAY_SECONDS` (what is only counted,
within `COUNTED_SECONDS`), and what is left when the host closes the connection before the process exits.
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.id_generator import RandomIdGenerator
from opentelemetry.trace import NonRecordingSpan, SpanContext, SpanKind, Status, StatusCode, TraceFlags

from .._version import __version__
from .settings import Settings
from .spans import Telemetry, ToolSpan

__all__ = ["COUNTED_SECONDS", "RELAY_SECONDS", "Collector", "ChildTelemetry", "child_telemetry", "merge", "replay"]
RELAY_SECONDS = 0.2  # a span that ends between calls is sent this long after, with what else ended meanwhile
COUNTED_SECONDS = 1.0  # and what was only counted, within this long

_SERVED: contextvars.ContextVar[str | None] = contextvars.ContextVar("hermes_served_tool", default=None)


def _plain(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def fields(span: ReadableSpan) -> dict[str, Any]:
    """One ended span as JSON-ready data."""
    context, parent, scope = span.context, span.parent, span.instrumentation_scope
    assert context is not None
    return {"name": span.name, "trace": f"{context.trace_id:032x}", "span": f"{context.span_id:016x}",
            "parent": f"{parent.span_id:016x}" if parent is not None else "", "flags": int(context.trace_flags),
            "kind": span.kind.value, "start": span.start_time, "end": span.end_time,
            "attributes": {k: _plain(v) for k, v in (span.attributes or {}).items()},
            "events": [[e.name, e.timestamp, {k: _plain(v) for k, v in (e.attributes or {}).items()}]
                       for e in span.events],
            "status": [span.status.status_code.value, span.status.description or ""],
            "scope": [scope.name, scope.version or ""] if scope is not None else ["", ""]}


class Collector(SpanProcessor):
    """Keeps each span that ends in this process, as data, until `drain` hands them over; `ended`
    is set when one ends."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._ended: list[dict[str, Any]] = []
        self.ended = threading.Event()

    def on_end(self, span: ReadableSpan) -> None:
        data = fields(span)
        with self._lock:
            self._ended.append(data)
        if not self.ended.is_set():
            self.ended.set()

    def drain(self) -> list[dict[str, Any]]:
        with self._lock:
            ended, self._ended = self._ended, []
        return ended


class _Recorded:
    """An instrument of the child's `Telemetry` (a histogram or a counter): keeps each measurement
    for the host, which makes it again with its own instrument of the same name."""

    __slots__ = ("_name", "_kept", "_lock")

    def __init__(self, name: str, kept: list[list[Any]], lock: threading.Lock) -> None:
        self._name, self._kept, self._lock = name, kept, lock

    def record(self, amount: float, attributes: Mapping[str, Any] | None = None) -> None:
        with self._lock:
            self._kept.append([self._name, amount, dict(attributes or {})])

    add = record


class _NoToolSpan:
    """The child's side of a tool call the host already has an `execute_tool` span for."""

    def __enter__(self) -> _NoToolSpan:
        return self

    def __exit__(self, *exc: Any) -> None:
        pass

    def done(self, outcome: Any) -> Any:
        return outcome


class ChildTelemetry(Telemetry):
    """The child's `Telemetry`: spans to a `Collector`, measurements kept for the host (`drained`);
    the call the host sent gets no second `execute_tool` (the host has one, and counts it)."""

    def __init__(self, settings: Settings) -> None:
        from opentelemetry.metrics import NoOpMeterProvider

        self.collector = Collector()
        provider = TracerProvider()
        provider.add_span_processor(self.collector)
        super().__init__(provider, NoOpMeterProvider(), settings)
        self._measured: list[list[Any]] = []
        self._measuring = threading.Lock()
        self.token_usage = _Recorded("gen_ai.client.token.usage", self._measured, self._measuring)
        self.duration = _Recorded("gen_ai.client.operation.duration", self._measured, self._measuring)
        self.budget_refusals = _Recorded("hermes.llm.budget.refusals", self._measured, self._measuring)
        self._sender: Callable[[dict[str, Any]], None] | None = None
        self._flushing = threading.Lock()  # what one flush drained is sent before another (the exit's) looks
        trace.set_tracer_provider(provider)  # a plugin's own OpenTelemetry spans come along too

    def drained(self) -> dict[str, Any]:
        """What ended and what was measured since the last call, as `{"spans": ..., "metrics": ...}`
        (each left out when there is none), for the host's `merge` and `replay`."""
        payload: dict[str, Any] = {}
        spans = self.collector.drain()
        if spans:
            payload["spans"] = spans
        with self._measuring:
            measured, self._measured[:] = list(self._measured), []
        metrics = {"tool_calls": self.tool_calls.drain(), "hook_time": self.hook_time.drain(), "measured": measured}
        metrics = {key: value for key, value in metrics.items() if value}
        if metrics:
            payload["metrics"] = metrics
        return payload

    def sending(self, send: Callable[[dict[str, Any]], None]) -> None:
        """From now on, what ends between calls goes to `send` by itself, `RELAY_SECONDS` after (what
        is only counted, within `COUNTED_SECONDS`)."""
        if self._sender is None:
            self._sender = send
            threading.Thread(target=self._relaying, name="hermes-telemetry-relay", daemon=True).start()

    def _relaying(self) -> None:
        ended = self.collector.ended
        while True:
            if ended.wait(COUNTED_SECONDS):  # else only counted, maybe (a quick hook callback has no span)
                time.sleep(RELAY_SECONDS)  # what else ends meanwhile goes in the same message
                ended.clear()
            self.flush_to_host()

    def flush_to_host(self) -> None:
        """Send what ended and was measured since the last answer now (the process is about to exit)."""
        send = self._sender
        if send is None:
            return
        with self._flushing:  # else the exit's flush could find nothing while the relay's payload is not sent yet
            payload = self.drained()
            if payload:
                try:
                    send(payload)
                except (OSError, TypeError, ValueError):
                    pass  # the host is gone, or this payload cannot cross: it is lost, never the relay thread

    def tool(self, name: str, plugin_id: str | None, tool_type: str, call_id: str, arguments: Any) -> ToolSpan:
        if _SERVED.get() == name:
            _SERVED.set(None)  # the tools this one dispatches get theirs
            return _NoToolSpan()  # type: ignore[return-value]
        return super().tool(name, plugin_id, tool_type, call_id, arguments)

    @contextlib.contextmanager
    def serving(self, headers: Mapping[str, str], tool: str | None) -> Iterator[None]:
        """One call from the host: its context current, `tool` the tool it runs (if it is one)."""
        served = _SERVED.set(tool)
        try:
            with self.attached(headers):
                yield
        finally:
            _SERVED.reset(served)


_CHILD: ChildTelemetry | None = None
_CHILD_LOCK = threading.Lock()


def child_telemetry(settings: Settings) -> ChildTelemetry:
    """The child process's `ChildTelemetry`, made at the first call that carries a trace; the
    latest call's settings hold."""
    global _CHILD
    with _CHILD_LOCK:
        if _CHILD is None:
            _CHILD = ChildTelemetry(settings)
        else:
            _CHILD.settings = settings
        return _CHILD


class _Replaying(RandomIdGenerator):
    """The ids of the span being replayed on this thread (the child's), else random ones."""

    def __init__(self) -> None:
        self.pending = threading.local()

    def generate_span_id(self) -> int:
        span_id = getattr(self.pending, "span_id", 0)
        return span_id or super().generate_span_id()

    def generate_trace_id(self) -> int:
        trace_id = getattr(self.pending, "trace_id", 0)
        return trace_id or super().generate_trace_id()


_IDS = _Replaying()
_TRACERS: dict[tuple[int, str, str], Any] = {}


def _tracer(provider: Any, scope: list[str]) -> Any:
    """A tracer of the host's provider for the child's instrumentation scope, giving the child's ids
    (None when the provider is not the SDK's: its spans cannot be made with given ids)."""
    name, version = scope[0] or "hermes_core", scope[1] or __version__
    key = (id(provider), name, version)
    tracer = _TRACERS.get(key)
    if tracer is None:
        tracer = provider.get_tracer(name, version, attributes={"hermes.plugin.process": True})
        if not hasattr(tracer, "id_generator"):
            return None
        tracer.id_generator = _IDS  # this scope is the replay's own: the host's tracers keep theirs
        _TRACERS[key] = tracer
    return tracer


def replay(provider: Any, spans: list[dict[str, Any]]) -> None:
    """Start and end the child's `spans` again through `provider` (the host's), ids and times kept."""
    for data in spans:
        tracer = _tracer(provider, data.get("scope") or ["", ""])
        if tracer is None:
            return
        trace_id, span_id = int(data["trace"], 16), int(data["span"], 16)
        parent = otel_context.Context()  # a span the child started a trace with stays a root
        if data["parent"]:
            remote = SpanContext(trace_id, int(data["parent"], 16), True, TraceFlags(data["flags"]))
            parent = trace.set_span_in_context(NonRecordingSpan(remote), parent)
        _IDS.pending.trace_id, _IDS.pending.span_id = trace_id, span_id
        try:
            span = tracer.start_span(data["name"], parent, SpanKind(data["kind"]), data["attributes"],
                                     start_time=data["start"])
        finally:
            _IDS.pending.trace_id = _IDS.pending.span_id = 0
        for name, timestamp, attributes in data["events"]:
            span.add_event(name, attributes, timestamp)
        code, description = data["status"]
        if code == StatusCode.ERROR.value:
            span.set_status(Status(StatusCode.ERROR, description or None))
        elif code == StatusCode.OK.value:
            span.set_status(Status(StatusCode.OK))
        span.end(data["end"])


def merge(telemetry: Telemetry, metrics: Mapping[str, Any]) -> None:
    """Add what the child measured (`ChildTelemetry.drained`) to the host's meter: its sums to the
    host's sums, its measurements made again with the host's instrument of the same name."""
    for values, count, total in metrics.get("tool_calls") or ():
        telemetry.tool_calls.merge(tuple(str(v) for v in values), int(count), float(total))
    for values, count, total in metrics.get("hook_time") or ():
        telemetry.hook_time.merge(tuple(str(v) for v in values), int(count), float(total))
    instruments = {"gen_ai.client.token.usage": telemetry.token_usage.record,
                   "gen_ai.client.operation.duration": telemetry.duration.record,
                   "hermes.llm.budget.refusals": telemetry.budget_refusals.add}
    for name, amount, attributes in metrics.get("measured") or ():
        made = instruments.get(name)
        if made is not None:
            made(amount, attributes)
