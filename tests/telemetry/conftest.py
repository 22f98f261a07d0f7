"""An OpenTelemetry SDK set up in the test's own process, as a host that embeds hermes-core sets up
its own: spans to an `InMemorySpanExporter`, metrics to an `InMemoryMetricReader`. hermes-core
finds it and reports into it; afterwards the process's providers are taken down again, so the next
manager loaded in this process turns export off."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import attrs
import pytest

from .receiver import Receiver

pytest.importorskip("opentelemetry.sdk")


@attrs.define
class Exported:
    spans: Any
    metrics: Any

    def finished(self) -> list[Any]:
        return list(self.spans.get_finished_spans())

    def named(self, prefix: str) -> list[Any]:
        return [span for span in self.finished() if span.name.startswith(prefix)]

    def root(self, name: str) -> Any:
        """A span of the test's own, current inside `with` (what a host's turn would be)."""
        from opentelemetry import trace

        return trace.get_tracer("tests").start_as_current_span(name)

    def points(self, name: str) -> list[Any]:
        """The data points of metric `name` collected now."""
        data = self.metrics.get_metrics_data()
        return [point for resource in (data.resource_metrics if data else []) for scope in resource.scope_metrics
                for metric in scope.metrics if metric.name == name for point in metric.data.data_points]


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    """A tiny OTLP/HTTP receiver on 127.0.0.1 (`receiver.py`) for what a subprocess exports."""
    running = Receiver().start()
    yield running
    running.close()


@pytest.fixture
def exported() -> Iterator[Exported]:
    from opentelemetry import metrics, trace
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    spans, reader = InMemorySpanExporter(), InMemoryMetricReader()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    trace._TRACER_PROVIDER_SET_ONCE._done = False  # the SDK's own tests reset its globals so
    trace.set_tracer_provider(provider)
    metrics._internal._METER_PROVIDER_SET_ONCE._done = False
    metrics.set_meter_provider(MeterProvider(metric_readers=[reader]))
    try:
        yield Exported(spans, reader)
    finally:
        trace._TRACER_PROVIDER_SET_ONCE._done = False
        trace._TRACER_PROVIDER = None
        metrics._internal._METER_PROVIDER_SET_ONCE._done = False
        metrics._internal._METER_PROVIDER = None
