"""The OpenTelemetry SDK's providers with OTLP/HTTP exporters (`hermes-core[otel]`), made once per
process: a batching span processor, a periodic metric reader, a resource named after the service
(`OTEL_SERVICE_NAME`, else `hermes`). The SDK reads the other `OTEL_*` variables itself
(`OTEL_EXPORTER_OTLP_HEADERS` for a backend's key, `OTEL_RESOURCE_ATTRIBUTES`, the batch sizes);
`OTEL_TRACES_EXPORTER=none` or `OTEL_METRICS_EXPORTER=none` leaves that signal out (a backend that
takes traces only, as Langfuse and Phoenix do).
A process that set up the SDK itself keeps its providers: spans and metrics go to its exporters.
"""

from __future__ import annotations

import logging
import os
from typing import Any

from .settings import Settings
from .spans import Telemetry

__all__ = ["providers_key", "start"]

log = logging.getLogger("hermes_core.telemetry")
EXPORT_TIMEOUT = 1.0


def providers_key(settings: Settings) -> Any:
    """What a `Telemetry` made for `settings` is kept by: its endpoint, or (the process's own SDK)
    the providers themselves, so that a host that sets up new ones gets a new one."""
    if settings.endpoint is not None:
        return settings.endpoint
    from opentelemetry import metrics, trace

    return id(trace.get_tracer_provider()), id(metrics.get_meter_provider())


def start(settings: Settings) -> Telemetry | None:
    """The process's telemetry, None (with one warning) when the SDK is not installed."""
    try:
        from opentelemetry import metrics, trace
    except ImportError:
        log.warning("traces are asked for (observability.otlp_endpoint or OTEL_EXPORTER_OTLP_ENDPOINT) but "
                    "OpenTelemetry is not installed: pip install 'hermes-core[otel]'")
        return None
    if settings.endpoint is None:  # the process's own SDK
        return Telemetry(trace.get_tracer_provider(), metrics.get_meter_provider(), settings)
    try:
        tracer_provider, meter_provider = _providers(settings.endpoint)
    except ImportError:
        log.warning("traces are asked for but the OpenTelemetry SDK or its OTLP/HTTP exporter is not installed: "
                    "pip install 'hermes-core[otel]'")
        return None
    trace.set_tracer_provider(tracer_provider)
    metrics.set_meter_provider(meter_provider)
    return Telemetry(tracer_provider, meter_provider, settings)


def _providers(endpoint: str) -> tuple[Any, Any]:
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
    from opentelemetry.sdk.resources import SERVICE_NAME, Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    from .._version import __version__

    base = endpoint.rstrip("/")
    resource = Resource.create({SERVICE_NAME: os.environ.get("OTEL_SERVICE_NAME") or "hermes",
                                "service.version": __version__})
    tracer_provider = TracerProvider(resource=resource)
    if not _left_out("OTEL_TRACES_EXPORTER"):
        spans = OTLPSpanExporter(**_where(base, "traces"))
        tracer_provider.add_span_processor(BatchSpanProcessor(spans))
    readers = []
    if not _left_out("OTEL_METRICS_EXPORTER"):
        readers.append(PeriodicExportingMetricReader(OTLPMetricExporter(**_where(base, "metrics"))))
    return tracer_provider, MeterProvider(resource=resource, metric_readers=readers)


def _where(base: str, signal: str) -> dict[str, Any]:
    """The exporter's endpoint (None: the `OTEL_*` variables') and time limit: `EXPORT_TIMEOUT`
    seconds unless a variable sets one, so that a collector that is down delays a command's exit
    by seconds (the last batch is sent as the process exits), not the SDK's default 10 s per signal."""
    where: dict[str, Any] = {"endpoint": f"{base}/v1/{signal}"} if base else {}
    if not (os.environ.get("OTEL_EXPORTER_OTLP_TIMEOUT") or os.environ.get(f"OTEL_EXPORTER_OTLP_{signal.upper()}_TIMEOUT")):
        where["timeout"] = EXPORT_TIMEOUT
    return where


def _left_out(variable: str) -> bool:
    return os.environ.get(variable, "").strip().lower() == "none"
