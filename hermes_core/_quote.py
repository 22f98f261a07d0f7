"""Quoting user or plugin input in an error line, bounded: a 10 kB plugin id is not echoed whole.

Every message that quotes a value it did not write (an id, a name, arguments, a tool's
output, an exception's message) passes it through `clip` or `quoted`, so one error stays one
readable line however large the value.

>>> clip("x" * 10_213)[-16:]
'…(10,213 chars)'
>>> quoted("word-tools")
"'word-tools'"
"""

from __future__ import annotations

__all__ = ["LIMIT", "clip", "quoted"]

LIMIT = 200


def clip(value: object, limit: int = LIMIT) -> str:
    """`str(value)`, cut after `limit` characters with a marker saying how long it was."""
    text = value if isinstance(value, str) else str(value)
    if len(text) <= limit:
        return text
    return f"{text[:limit]}…({len(text):,} chars)"


def quoted(value: object, limit: int = LIMIT) -> str:
    """`repr(value)` as messages quote a name (`'x'`), cut like `clip`."""
    return clip(repr(value), limit)
