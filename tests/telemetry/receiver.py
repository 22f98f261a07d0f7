"""A tiny OTLP/HTTP receiver on 127.0.0.1 for the tests: it takes what an exporter posts to
`/v1/traces` and `/v1/metrics` (protobuf, gzip or not) and decodes it with the protocol's own
messages (opentelemetry-proto), so a test reads back what went over the wire."""

from __future__ import annotations

import gzip
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import attrs


def until(condition: Any, timeout: float = 20) -> None:
    """Wait for `condition()` (what another process exports arrives in its own time)."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


@attrs.define
class Span:
    name: str
    trace_id: str
    span_id: str
    parent_id: str
    kind: int
    attributes: dict[str, Any]
    events: list[str]
    service: str
    links: list[tuple[str, str]] = attrs.field(factory=list)  # (trace id, span id) of each linked span


def _value(any_value: Any) -> Any:
    kind = any_value.WhichOneof("value")
    if kind == "array_value":
        return tuple(_value(v) for v in any_value.array_value.values)
    return getattr(any_value, kind) if kind else None


class Receiver:
    """`start()` it, point an exporter at `url`, read `spans` and `metric_names` back."""

    def __init__(self) -> None:
        self.spans: list[Span] = []
        self.metric_names: set[str] = set()
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length", 0)))
                if self.headers.get("content-encoding") == "gzip":
                    body = gzip.decompress(body)
                receiver.take(self.path, body)
                self.send_response(200)
                self.send_header("content-type", "application/x-protobuf")
                self.send_header("content-length", "0")
                self.end_headers()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def start(self) -> Receiver:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def take(self, path: str, body: bytes) -> None:
        from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

        if path.endswith("/v1/traces"):
            request = ExportTraceServiceRequest.FromString(body)
            with self.lock:
                for resource in request.resource_spans:
                    service = {a.key: _value(a.value) for a in resource.resource.attributes}.get("service.name", "")
                    for scope in resource.scope_spans:
                        self.spans.extend(Span(s.name, s.trace_id.hex(), s.span_id.hex(), s.parent_span_id.hex(),
                                               s.kind, {a.key: _value(a.value) for a in s.attributes},
                                               [e.name for e in s.events], service,
                                               [(link.trace_id.hex(), link.span_id.hex()) for link in s.links])
                                          for s in scope.spans)
        elif path.endswith("/v1/metrics"):
            request = ExportMetricsServiceRequest.FromString(body)
            with self.lock:
                self.metric_names |= {m.name for r in request.resource_metrics for s in r.scope_metrics
                                      for m in s.metrics}

    def named(self, prefix: str) -> list[Span]:
        with self.lock:
            return [span for span in self.spans if span.name.startswith(prefix)]
