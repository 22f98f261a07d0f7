"""Hermes' `agent.tts_provider` helpers (the base class is `hermes_core.providers`)."""

from __future__ import annotations

from typing import Any

__all__ = ["DEFAULT_OUTPUT_FORMAT", "VALID_OUTPUT_FORMATS", "resolve_output_format"]

DEFAULT_OUTPUT_FORMAT = "mp3"
VALID_OUTPUT_FORMATS = frozenset({"mp3", "wav", "ogg", "opus", "flac"})


def resolve_output_format(value: Any) -> str:
    """`value` lowercased when it is a known format, else `mp3`."""
    name = str(value or "").strip().lower()
    return name if name in VALID_OUTPUT_FORMATS else DEFAULT_OUTPUT_FORMAT
