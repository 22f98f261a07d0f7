"""Hermes' media cache helpers: an adapter stores what a message carries (an image, a voice note,
a document) under `$HERMES_HOME/cache/<kind>/` and puts the local path in
`MessageEvent.media_urls`. Each returns the file's absolute path as a `str`.

`cache_*_from_url` fetch only public http(s) addresses (a message's URL is the sender's input:
loopback, private and link-local addresses are refused, on every redirect too), as Hermes does.
"""

from __future__ import annotations

import asyncio
import dataclasses
import ipaddress
import socket
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from hermes_core import hermes_home

from .text import safe_url_for_log

__all__ = ["get_image_cache_dir", "get_audio_cache_dir", "get_video_cache_dir", "get_document_cache_dir",
           "cache_image_from_bytes", "cache_audio_from_bytes", "cache_video_from_bytes", "cache_document_from_bytes",
           "cache_image_from_url", "cache_audio_from_url", "is_safe_url", "DEFAULT_INBOUND_MEDIA_MAX_BYTES",
           "SUPPORTED_DOCUMENT_TYPES", "SUPPORTED_VIDEO_TYPES", "validate_inbound_media_size",
           "validate_media_delivery_path", "_ssrf_redirect_guard", "CachedMedia", "cache_media_bytes",
           "SUPPORTED_IMAGE_DOCUMENT_TYPES"]

DEFAULT_INBOUND_MEDIA_MAX_BYTES = 128 * 1024 * 1024
SUPPORTED_DOCUMENT_TYPES = {".pdf": "application/pdf", ".txt": "text/plain", ".md": "text/markdown",
                            ".csv": "text/csv", ".json": "application/json", ".zip": "application/zip",
                            ".docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
                            ".xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"}
SUPPORTED_VIDEO_TYPES = {".mp4": "video/mp4", ".mov": "video/quicktime", ".webm": "video/webm", ".mkv": "video/x-matroska"}
SUPPORTED_IMAGE_DOCUMENT_TYPES = {".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".png": "image/png", ".gif": "image/gif",
                                  ".webp": "image/webp", ".bmp": "image/bmp"}
_AUDIO_TYPES = {".ogg": "audio/ogg", ".mp3": "audio/mpeg", ".wav": "audio/wav", ".m4a": "audio/mp4",
                ".opus": "audio/opus", ".flac": "audio/flac"}
_IMAGE_MAGIC = (b"\x89PNG", b"\xff\xd8\xff", b"GIF8", b"BM")


def _cache_dir(kind: str) -> Path:
    path = hermes_home() / "cache" / kind
    path.mkdir(parents=True, exist_ok=True)
    return path


def get_image_cache_dir() -> Path:
    return _cache_dir("images")


def get_audio_cache_dir() -> Path:
    return _cache_dir("audio")


def get_video_cache_dir() -> Path:
    return _cache_dir("videos")


def get_document_cache_dir() -> Path:
    return _cache_dir("documents")


def _write(folder: Path, name: str, data: bytes) -> str:
    if len(data) > DEFAULT_INBOUND_MEDIA_MAX_BYTES:
        raise ValueError(f"media of {len(data)} bytes is over the {DEFAULT_INBOUND_MEDIA_MAX_BYTES}-byte limit")
    path = folder / name
    partial = path.with_name(path.name + ".part")
    partial.write_bytes(data)
    partial.replace(path)
    return str(path.resolve())


def _ext(ext: str, default: str) -> str:
    ext = ext or default
    return ext if ext.startswith(".") else "." + ext


def cache_image_from_bytes(data: bytes, ext: str = ".jpg") -> str:
    """An image (PNG, JPEG, GIF, BMP or WEBP: anything else is a ValueError) → its cached path."""
    if not (data.startswith(_IMAGE_MAGIC) or (data[:4] == b"RIFF" and data[8:12] == b"WEBP")):
        raise ValueError("not an image (PNG, JPEG, GIF, BMP or WEBP bytes expected)")
    return _write(get_image_cache_dir(), f"img_{uuid.uuid4().hex[:12]}{_ext(ext, '.jpg')}", data)


def cache_audio_from_bytes(data: bytes, ext: str = ".ogg") -> str:
    return _write(get_audio_cache_dir(), f"audio_{uuid.uuid4().hex[:12]}{_ext(ext, '.ogg')}", data)


def cache_video_from_bytes(data: bytes, ext: str = ".mp4") -> str:
    return _write(get_video_cache_dir(), f"video_{uuid.uuid4().hex[:12]}{_ext(ext, '.mp4')}", data)


def cache_document_from_bytes(data: bytes, filename: str) -> str:
    """A document, kept under its own base name (a name with a path in it is a ValueError)."""
    base = Path(filename or "document").name
    if not base or base in (".", "..") or base != filename.replace("\\", "/").rsplit("/", 1)[-1]:
        raise ValueError(f"unsafe document name {filename!r}")
    return _write(get_document_cache_dir(), f"doc_{uuid.uuid4().hex[:12]}_{base}", data)


@dataclasses.dataclass
class CachedMedia:
    """Raw attachment bytes, cached (Hermes' `cache_media_bytes`): where, as what, under which name."""

    path: str
    media_type: str
    kind: str
    display_name: str

    def context_note(self) -> str:
        return f"[{self.kind} '{self.display_name}' saved at: {self.path}]"


def cache_media_bytes(data: bytes, *, filename: str = "", mime_type: str = "",
                      default_kind: str | None = None) -> CachedMedia | None:
    """Classify and cache raw attachment bytes as Hermes does: an image, a video or an audio by
    MIME type, extension or `default_kind` (for a nameless platform photo), else a document; None
    only for image bytes that are not an image."""
    ext = Path(filename).suffix.lower() if filename else ""
    mime = (mime_type or "").lower()
    if not ext and mime:
        ext = next((e for table in (SUPPORTED_DOCUMENT_TYPES, SUPPORTED_VIDEO_TYPES, SUPPORTED_IMAGE_DOCUMENT_TYPES)
                    for e, m in table.items() if m == mime), "")
    kinds = (("image", SUPPORTED_IMAGE_DOCUMENT_TYPES, ".jpg", cache_image_from_bytes, True),
             ("video", SUPPORTED_VIDEO_TYPES, ".mp4", cache_video_from_bytes, False),
             ("audio", _AUDIO_TYPES, ".ogg", cache_audio_from_bytes, True))
    for kind, table, default_ext, cache, passthrough in kinds:
        if mime.startswith(f"{kind}/") or ext in table or default_kind == kind:
            used = ext if ext in table else default_ext
            try:
                path = cache(data, used)
            except ValueError:
                if kind == "image":
                    return None
                raise
            media = mime if passthrough and mime.startswith(f"{kind}/") else table[used]
            return CachedMedia(path, media, kind, filename or Path(path).name)
    name = filename or (f"document{ext}" if ext else "document.bin")
    path = cache_document_from_bytes(data, Path(name).name)
    return CachedMedia(path, SUPPORTED_DOCUMENT_TYPES.get(ext) or mime or "application/octet-stream", "document", name)


def is_safe_url(url: str) -> bool:
    """Whether `url` is http(s) to a host whose every address is public."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return False
    try:
        infos = socket.getaddrinfo(parts.hostname, parts.port or (443 if parts.scheme == "https" else 80))
    except (OSError, UnicodeError):
        return False
    addresses = {ipaddress.ip_address(str(info[4][0]).split("%")[0]) for info in infos}
    return bool(addresses) and all(a.is_global for a in addresses)


def _get(url: str) -> bytes:
    """GET `url` with the standard library, every redirect's target checked like the first."""
    import urllib.request

    class Checked(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, req: Any, fp: Any, code: int, msg: str, headers: Any, newurl: str) -> Any:
            if not is_safe_url(newurl):
                raise ValueError(f"refusing to follow a redirect to {newurl!r}: not a public http(s) address")
            return super().redirect_request(req, fp, code, msg, headers, newurl)

    if not is_safe_url(url):
        raise ValueError(f"refusing to fetch {url!r}: not a public http(s) address")
    opener = urllib.request.build_opener(Checked)
    with opener.open(url, timeout=30) as response:
        data: bytes = response.read(DEFAULT_INBOUND_MEDIA_MAX_BYTES + 1)
    return data


async def _fetch(url: str, retries: int) -> bytes:
    """`url`'s bytes; a timeout, 429 or 5xx is tried again `retries` times (1.5 s, 3 s, ...)."""
    import urllib.error

    for attempt in range(retries + 1):
        try:
            return await asyncio.to_thread(_get, url)
        except urllib.error.HTTPError as error:
            if (error.code != 429 and error.code < 500) or attempt == retries:
                raise
        except (TimeoutError, urllib.error.URLError):
            if attempt == retries:
                raise
        await asyncio.sleep(1.5 * (attempt + 1))
    raise ValueError(f"could not fetch {url!r}")  # pragma: no cover - the loop returns or raises


async def cache_image_from_url(url: str, ext: str = ".jpg", retries: int = 2) -> str:
    return cache_image_from_bytes(await _fetch(url, retries), ext)


async def cache_audio_from_url(url: str, ext: str = ".ogg", retries: int = 2) -> str:
    return cache_audio_from_bytes(await _fetch(url, retries), ext)


def validate_inbound_media_size(size: int | None, *, media_type: str = "media", max_bytes: int | None = None) -> None:
    """A ValueError when a received `media_type` of `size` bytes is over the limit (128 MiB)."""
    limit = max_bytes or DEFAULT_INBOUND_MEDIA_MAX_BYTES
    if size is not None and size > limit:
        raise ValueError(f"{media_type} of {size} bytes is over the {limit}-byte limit")


# Where an answer's media may never be read from: the system's and the user's credentials, and
# hermes-core's own home (its config and secrets) but for the media caches.
_DENIED_ROOTS = ("/etc", "/proc", "/sys", "/dev", "/boot", "/root/.ssh")
_DENIED_HOME = (".ssh", ".aws", ".gnupg", ".kube", ".docker", ".netrc", ".config/gcloud", ".azure", ".pypirc")


def validate_media_delivery_path(path: str, session_key: str = "") -> str | None:
    """The resolved absolute path of a file an answer asks to send (`MEDIA:<path>`), or None
    when it is not an existing regular file or lies among credentials or system files."""
    candidate = str(path or "").strip().rstrip(",.;:)}]").strip("`\"'")
    if not candidate:
        return None
    try:
        resolved = Path(candidate).expanduser()
        if not resolved.is_absolute():
            return None
        resolved = resolved.resolve(strict=True)
    except (OSError, RuntimeError, ValueError):
        return None
    if not resolved.is_file():
        return None
    home = Path.home()
    denied = [Path(root) for root in _DENIED_ROOTS] + [home / sub for sub in _DENIED_HOME]
    if any(resolved == root or root in resolved.parents for root in denied):
        return None
    own = hermes_home().resolve()
    if own in resolved.parents and (own / "cache") not in resolved.parents:
        return None
    return str(resolved)


async def _ssrf_redirect_guard(response: Any) -> None:
    """An httpx response hook (`event_hooks={"response": [_ssrf_redirect_guard]}`) that refuses
    a redirect to anything but a public http(s) address, as Hermes' adapters use it."""
    target = getattr(response, "next_request", None)
    if getattr(response, "is_redirect", False) and target is not None:
        url = str(target.url)
        if not await asyncio.to_thread(is_safe_url, url):
            raise ValueError(f"Blocked redirect to private/internal address: {safe_url_for_log(url)}")
