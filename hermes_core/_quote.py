"""Quoting user or plugin input in an error line, bounded: a 10 kB plugin id is not echoed whole.

Every message that quotes a value it did not write (an id, a name, arguments, a tool's
output, an exception's message) passes it through `clip` or `quoted`, so one error stays one
readable line however large the value.

>>> clip("x" * 10_213)[-15:]
'…(10,213 chars)'
>>> quoted("word-tools")
"'word-tools'"
"""

from __future__ import annotations

__all__ = ["LIMIT", "MESSAGE_LIMIT", "bounded", "clip", "error_line", "internal_error", "quoted"]

LIMIT = 200  # a quoted value: an id, a name, arguments
MESSAGE_LIMIT = 1000  # a message a plugin raised, or one an error already wrote around its values
LINE_LIMIT = 2000


def clip(value: object, limit: int = LIMIT) -> str:
    """`str(value)`, cut after `limit` characters with a marker saying how long it was."""
    text = value if isinstance(value, str) else str(value)
    if len(text) <= limit:
        return text
    return f"{text[:limit]}…({len(text):,} chars)"


def quoted(value: object, limit: int = LIMIT) -> str:
    """`repr(value)` as messages quote a name (`'x'`), cut like `clip`."""
    return clip(repr(value), limit)


def bounded(line: str) -> str:
    """An error line as it is printed: any run of more than `LIMIT` characters without a space
    (an id, a name, a JSON argument a message quoted whole) cut like `clip`, and the line as a
    whole held to `LINE_LIMIT` characters. The CLI passes every error line through it."""
    import re

    def cut(match: re.Match[str]) -> str:
        run = match.group()
        marker = re.search(r"…\(\d[\d,]*$", run)  # cut already: shorter still, the length it gave kept
        return run[:LIMIT] + marker.group() if marker else clip(run)

    line = re.sub(r"\S{%d,}" % (LIMIT + 1), cut, line)
    return clip(line, LINE_LIMIT)


def error_line(message: str) -> str:
    """An error as `hermes` prints it on stderr: one bounded line after `hermes: error: `."""
    return f"hermes: error: {bounded(' '.join(message.split()))}"


def internal_error(exc: BaseException) -> str:
    """What `hermes` says of a failure no error of its own describes (without `--debug`)."""
    return f"internal error: {type(exc).__name__}: {exc} (run with --debug for the traceback)"
