"""Redacting secrets from text that leaves the host: keys, tokens, passwords, URL credentials.

`redact_secrets` masks what looks like a credential (plugins add their own shapes with
`ctx.register_redaction_patterns`); `sanitize_memory_context` prepares a
memory provider's text for a context engine or a model (redacted, then cut to a bounded size,
keeping its head and its tail), as Hermes' `agent.context_engine.sanitize_memory_context` does.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache
from typing import Any

from ._undo import Undo

__all__ = ["MEMORY_CONTEXT_MAX_CHARS", "add_patterns", "mask_secret_keys", "redact_secrets", "redact_tree",
           "sanitize_memory_context"]

MEMORY_CONTEXT_MAX_CHARS = 6_000
_HEAD, _TAIL = 4_000, 1_500
_CUT = "\n...[memory provider context truncated]...\n"
MASK = "[REDACTED]"

# (pattern, replacement): provider key shapes, bearer tokens, `key = value` assignments, URL credentials.
_PATTERNS = (
    (r"\bsk-(?:ant-|or-|proj-)?[A-Za-z0-9_\-]{16,}", MASK),
    (r"\bgh[pousr]_[A-Za-z0-9]{20,}", MASK),
    (r"\bxox[abprs]-[A-Za-z0-9\-]{10,}", MASK),
    (r"\bAKIA[0-9A-Z]{16}\b", MASK),
    (r"\bAIza[0-9A-Za-z_\-]{35}\b", MASK),
    (r"(?i)\b(bearer)\s+[A-Za-z0-9._~+/=\-]{16,}", r"\1 " + MASK),
    (r"(?i)\b(api[_-]?key|access[_-]?token|auth[_-]?token|secret|password|passwd)(\s*[:=]\s*)[^\s,;'\"]+",
     r"\1\2" + MASK),
    (r"(?i)\b([a-z][a-z0-9+.\-]*://)[^/\s@]+@", r"\1" + MASK + "@"),  # redis://:pw@, https://TOKEN@ too
)


@lru_cache(maxsize=1)
def _compiled() -> tuple[tuple[re.Pattern[str], str], ...]:
    return tuple((re.compile(pattern), replacement) for pattern, replacement in _PATTERNS)


def redact_secrets(text: str) -> str:
    """`text` with anything that looks like a credential replaced by `[REDACTED]`."""
    for pattern, replacement in (*_compiled(), *_extra):
        text = pattern.sub(replacement, text)
    return text


_SECRET_KEY = re.compile(r"(?i)(?:^|[_\-.])(?:api[_\-]?key|key|token|secret|password|passwd|credentials?)$")


def mask_secret_keys(data: Any) -> Any:
    """`data` (plain config data) with the value of every key named like a secret (`api_key`,
    `bot_token`, `password`, `client_secret`, ...) replaced by `[REDACTED]`, at any depth; for
    showing settings, where a token needs no recognisable shape to be one."""
    if isinstance(data, dict):
        return {key: MASK if isinstance(key, str) and _SECRET_KEY.search(key) and data[key] not in (None, "")
                else mask_secret_keys(value) for key, value in data.items()}
    if isinstance(data, list):
        return [mask_secret_keys(item) for item in data]
    return data


def redact_tree(data: Any) -> Any:
    """`data` (plain JSON-like data) with every string passed through `redact_secrets`."""
    if isinstance(data, str):
        return redact_secrets(data)
    if isinstance(data, dict):
        return {key: redact_tree(value) for key, value in data.items()}
    if isinstance(data, (list, tuple)):
        return [redact_tree(value) for value in data]
    return data


def sanitize_memory_context(memory_context: str) -> str:
    """A memory provider's text made safe to hand on: stripped, redacted, and at most
    `MEMORY_CONTEXT_MAX_CHARS` long (the head and the tail kept, a marker between them)."""
    sanitized = redact_secrets(memory_context.strip())
    if len(sanitized) <= MEMORY_CONTEXT_MAX_CHARS:
        return sanitized
    return sanitized[:_HEAD] + _CUT + sanitized[-_TAIL:]


_extra: list[tuple[re.Pattern[str], str]] = []


def add_patterns(patterns: Iterable[str | re.Pattern[str]], owner: str = "") -> Undo:
    """Add regular expressions whose matches `redact_secrets` masks too (a plugin's own secret
    shapes, `ctx.register_redaction_patterns`); returns the function that removes them."""
    compiled: list[tuple[re.Pattern[str], str]] = []
    for pattern in patterns:
        try:
            compiled.append((pattern if isinstance(pattern, re.Pattern) else re.compile(pattern), MASK))
        except (re.error, TypeError) as exc:
            who = f" of plugin {owner!r}" if owner else ""
            raise ValueError(f"redaction pattern {pattern!r}{who} is not a regular expression: {exc}") from None
    _extra.extend(compiled)

    def undo() -> None:
        for item in compiled:
            if item in _extra:
                _extra.remove(item)

    return undo
