"""Whether export is on, and how: read from the config and the environment, importing nothing.

On when `observability.otlp_endpoint` is set, when `OTEL_EXPORTER_OTLP_ENDPOINT` or
`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` is, or when the process already set up an OpenTelemetry
SDK of its own (its tracer provider is then used, and its exporters); off whatever else says
so when `OTEL_SDK_DISABLED=true`.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

import attrs

from ..config_keys._observability import (
    OBSERVABILITY_OTLP_ENDPOINT, OBSERVABILITY_RECORD_CONTENT, OBSERVABILITY_SLOW_HOOK,
)

if TYPE_CHECKING:
    from .._config.config import Config

__all__ = ["Settings", "wanted"]

ENVIRONMENT = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")


@attrs.frozen
class Settings:
    """How export runs: `endpoint` (the config's OTLP/HTTP base URL; "" for the `OTEL_*`
    variables; None: the process's own SDK), whether spans carry contents, and from how many
    seconds a hook callback gets a span."""

    endpoint: str | None
    record_content: bool = False
    slow_hook: float = 0.1


def _own_sdk() -> bool:
    """Whether the process set up an OpenTelemetry SDK tracer provider before us (only looked
    at when OpenTelemetry is imported already, so that looking costs no import)."""
    if "opentelemetry.trace" not in sys.modules or "opentelemetry.sdk.trace" not in sys.modules:
        return False
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider

    return isinstance(trace.get_tracer_provider(), TracerProvider)


def wanted(config: Config) -> Settings | None:
    """The settings of export, None while it is off."""
    if os.environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return None
    endpoint: str | None = config.read(OBSERVABILITY_OTLP_ENDPOINT)
    if not endpoint:
        if any(os.environ.get(name, "").strip() for name in ENVIRONMENT):
            endpoint = ""
        elif _own_sdk():
            endpoint = None
        else:
            return None
    return Settings(endpoint, config.read(OBSERVABILITY_RECORD_CONTENT), config.read(OBSERVABILITY_SLOW_HOOK))
