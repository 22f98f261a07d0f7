"""The keys of traces and metrics on OpenTelemetry (docs/observability.md), `observability.*`."""

from __future__ import annotations

from ._values import FLAG, SECONDS, TEXT, Key, _flag, _seconds, _text

__all__ = ["OBSERVABILITY_OTLP_ENDPOINT", "OBSERVABILITY_RECORD_CONTENT", "OBSERVABILITY_SLOW_HOOK"]

OBSERVABILITY_OTLP_ENDPOINT = Key("observability.otlp_endpoint", TEXT, _text, "",
                                  "the OTLP/HTTP endpoint traces and metrics go to (http://host:4318; needs "
                                  "hermes-core[otel]); empty: OTEL_EXPORTER_OTLP_ENDPOINT, else no export")
OBSERVABILITY_RECORD_CONTENT = Key("observability.record_content", FLAG, _flag, False,
                                   "spans carry the messages, answers, tool arguments and results (secrets masked)")
OBSERVABILITY_SLOW_HOOK = Key("observability.slow_hook", SECONDS, _seconds, 0.1,
                              "a hook callback that runs longer than this (or fails) gets a span of its own")
