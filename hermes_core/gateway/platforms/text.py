"""Text helpers of Hermes' `gateway.platforms.base`: lengths, log-safe URLs, what kind of
failure a send was, and where a code block is open."""

from __future__ import annotations

import re

__all__ = ["NETWORK_ERRORS", "classify_send_error", "extract_images", "extract_media", "fence_after", "safe_url_for_log",
           "utf16_len"]

# What a failed send's error says when a retry may help.
NETWORK_ERRORS = ("connecterror", "connectionerror", "connectionreset", "connectionrefused", "connecttimeout",
                  "network", "broken pipe", "remotedisconnected", "eoferror", "timeout")


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


def fence_after(text: str) -> str | None:
    """The code fence open at the end of `text` (its opening line), or None."""
    fence: str | None = None
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fence = None if fence is not None else line.strip()
    return fence


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
