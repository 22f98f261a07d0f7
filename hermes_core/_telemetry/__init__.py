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
method per kind of span; imports the SDK), `start` (the SDK's providers and OTLP/HTTP exporters).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .._config.config import Config
    from .spans import Telemetry

__all__ = ["ACTIVE", "NO_SPAN", "NoSpan", "configure", "headers", "span"]

ACTIVE: Telemetry | None = None  # set by `configure` while export is on
_made: dict[Any, Telemetry] = {}  # by endpoint, or by the process's own providers: made once each


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
