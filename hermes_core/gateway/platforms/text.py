"""Text helpers of Hermes' `gateway.platforms.base`: lengths, log-safe URLs, what kind of
failure a send was, and where a code block is open."""

from __future__ import annotations

import re
from collections.abc import Callable

__all__ = ["NETWORK_ERRORS", "approval_text", "classify_send_error", "extract_images", "extract_media", "fence_after", "safe_url_for_log",
           "split_text", "utf16_len"]

# What a failed send's error says when a retry may help.
NETWORK_ERRORS = ("connecterror", "connectionerror", "connectionreset", "connectionrefused", "connecttimeout",
                  "network", "broken pipe", "remotedisconnected", "eoferror", "timeout")


def approval_text(command: str, description: str, *, allow_session: bool = True, allow_permanent: bool = True) -> str:
    """The message that puts a tool call to a chat without buttons: what, why, and how to answer."""
    answers = ["/approve (this once)"]
    if allow_session:
        answers.append("/approve session (for this conversation)")
    if allow_permanent:
        answers.append("/approve always")
    answers.append("/deny [reason]")
    why = f": {description}" if description else ""
    return f"⚠️ Approval needed{why}\n{command}\nReply " + ", ".join(answers) + "."


def utf16_len(text: str) -> int:
    """The length of `text` in UTF-16 code units (how Telegram and others count)."""
    return len(text.encode("utf-16-le")) // 2


def safe_url_for_log(url: str, max_len: int = 80) -> str:
    """`url` for a log line: its scheme, host (no credentials) and last path segment only."""
    from urllib.parse import urlsplit

    text = "" if url is None or max_len <= 0 else str(url)
    try:
        parts = urlsplit(text)
    except ValueError:
        return text[:max_len]
    if parts.scheme and parts.netloc:
        host = parts.netloc.rsplit("@", 1)[-1]
        last = parts.path.rsplit("/", 1)[-1]
        text = f"{parts.scheme}://{host}" + ("" if parts.path in ("", "/") else f"/.../{last}" if last else "/...")
    if len(text) <= max_len:
        return text
    return "." * max_len if max_len <= 3 else text[: max_len - 3] + "..."


def classify_send_error(exc: BaseException | None, error_text: str = "") -> str:
    """One of `SEND_ERROR_KINDS` for a failed send."""
    text = f"{type(exc).__name__ if exc else ''} {exc or ''} {error_text}".lower()
    for kind, words in (("rate_limited", ("429", "rate limit", "too many")), ("too_long", ("too long", "too_long")),
                        ("forbidden", ("403", "forbidden", "blocked")), ("not_found", ("404", "not found")),
                        ("transient", NETWORK_ERRORS), ("bad_format", ("parse", "format", "entities"))):
        if any(word in text for word in words):
            return kind
    return "unknown"


_OPENER = re.compile(r" {0,3}(`{3,})([^`]*)")
_CLOSER = re.compile(r" {0,3}(`{3,})[ \t]*")


def fence_after(text: str) -> str | None:
    """The code fence open at the end of `text`, as the line that reopens it (its backticks and
    language, as in "```py"), or None. Fences are CommonMark's: three or more backticks open one
    (an info string holding a backtick does not), and only as many or more close it."""
    fence: str | None = None
    for line in text.splitlines():
        if fence is None:
            opened = _OPENER.fullmatch(line)
            if opened:
                fence = opened.group(1) + "".join(opened.group(2).split()[:1])
        else:
            closed = _CLOSER.fullmatch(line)
            if closed and len(closed.group(1)) >= len(fence) - len(fence.lstrip("`")):
                fence = None
    return fence


def split_text(text: str, budget: int, measure: Callable[[str], int] = len) -> list[str]:
    """`text` in pieces of at most `budget` (by `measure`), cut at a line break, else a space, else
    anywhere. A code block cut in two is closed and reopened with its own fence and language; a
    piece that cannot carry them (a fence line near half the budget) is cut as plain text."""
    pieces: list[str] = []
    rest, fence = text, None
    while rest:
        prefix = f"{fence}\n" if fence else ""
        room, plain = budget - measure(prefix), False
        while True:
            if room < budget // 2:  # no room to carry the fence: a plain piece
                prefix, room, plain = "", budget, True
            piece, after = _cut(rest, room, measure)
            body = prefix + piece
            fence = fence_after(body) if after and not plain else None
            close = "\n" + fence[: len(fence) - len(fence.lstrip("`"))] if fence else ""
            over = measure(body + close) - budget
            if over <= 0 or plain:
                break
            room -= over
        pieces.append(body + close)
        rest = after
    return pieces


def _cut(text: str, room: int, measure: Callable[[str], int]) -> tuple[str, str]:
    """The first piece of `text` that fits `room` and the rest (its leading breaks dropped)."""
    if measure(text) <= room:
        return text, ""
    room = max(room, 1)
    cut = text.rfind("\n", 0, room)
    if cut < room // 2:
        cut = text.rfind(" ", 0, room)
    if cut < room // 2:
        cut = room
    while cut > 1 and measure(text[:cut]) > room:  # a measure that counts more than characters
        cut -= 1
    return text[:cut], text[cut:].lstrip("\n ")


def extract_images(content: str) -> tuple[list[tuple[str, str]], str]:
    """Markdown images `![alt](url)` in `content`: [(url, alt)] and the text without them."""
    found = [(m.group(2), m.group(1)) for m in re.finditer(r"!\[([^\]]*)\]\((https?://[^)\s]+)\)", content)]
    return found, re.sub(r"!\[[^\]]*\]\(https?://[^)\s]+\)", "", content).strip()


def extract_media(content: str) -> tuple[list[tuple[str, bool]], str]:
    """`MEDIA:<path>` tags in `content`: [(path, as voice)] and the text without them."""
    voice = "[[audio_as_voice]]" in content
    found = [(m.group(1), voice) for m in re.finditer(r"MEDIA:(\S+)", content)]
    cleaned = re.sub(r"MEDIA:\S+", "", content.replace("[[audio_as_voice]]", "").replace("[[as_document]]", ""))
    return found, cleaned.strip()
