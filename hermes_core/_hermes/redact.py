"""Hermes' `agent.redact`: masking credentials in text before it leaves the host."""

from __future__ import annotations

from typing import Any

from .._redact import redact_secrets

__all__ = ["redact_sensitive_text"]


def redact_sensitive_text(
    text: Any,
    force: bool = False,
    *,
    code_file: bool = False,
    file_read: bool = False,
    secret_file: bool = False,
    redact_url_credentials: bool = False,
) -> Any:
    """`text` with anything that looks like a credential masked (`hermes_core`'s redaction, which
    is always on and always masks URL credentials: the switches Hermes takes change nothing).
    None stays None; anything else is made a string first."""
    if text is None:
        return None
    return redact_secrets(text if isinstance(text, str) else str(text))
