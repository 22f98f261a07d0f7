"""Saving generated media under `$HERMES_HOME/cache/<kind>/`, shared by the image and video helpers."""

from __future__ import annotations

import base64
import datetime
import uuid
from pathlib import Path

from .constants import get_hermes_home

__all__ = ["download", "save_bytes"]


def save_bytes(kind: str, data: bytes, prefix: str, extension: str) -> Path:
    """Write `data` as `$HERMES_HOME/cache/<kind>/<prefix>_<YYYYMMDD_HHMMSS>_<8 hex>.<extension>`."""
    folder = get_hermes_home() / "cache" / kind
    folder.mkdir(parents=True, exist_ok=True)
    stamp = datetime.datetime.now().strftime("%Y%m%d_%H%M%S")
    path = folder / f"{prefix}_{stamp}_{uuid.uuid4().hex[:8]}.{extension.lstrip('.')}"
    path.write_bytes(data)
    return path


def decode(b64_data: str) -> bytes:
    return base64.b64decode(b64_data)


def download(url: str, *, timeout: float, max_bytes: int, what: str) -> tuple[bytes, str]:
    """The body and content type at `url`; `ValueError` for an empty or oversized body, the
    HTTP error for a failed request."""
    import urllib.request

    with urllib.request.urlopen(url, timeout=timeout) as response:  # noqa: S310 - a provider's own result URL
        content_type = (response.headers.get("Content-Type") or "").split(";", 1)[0].strip().lower()
        body = response.read(max_bytes + 1)
    if len(body) > max_bytes:
        raise ValueError(f"{what} at {url} exceeds {max_bytes // (1024 * 1024)}MB cap; refusing to cache.")
    if not body:
        raise ValueError(f"{what} at {url} returned 0 bytes; refusing to cache.")
    return body, content_type


def extension_for(url: str, content_type: str, known: dict[str, str], default: str) -> str:
    """The file extension for a download: from its content type, else the URL's suffix, else `default`."""
    if content_type in known:
        return known[content_type]
    path = url.split("?", 1)[0].lower()
    for ext in dict.fromkeys(known.values()):
        if path.endswith(f".{ext}") or (ext == "jpg" and path.endswith(".jpeg")):
            return ext
    return default
