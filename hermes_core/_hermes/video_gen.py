"""Hermes' `agent.video_gen_provider` helpers (the base class is `hermes_core.providers`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..providers._defaults import ASPECTS, RESOLUTION, RESOLUTIONS, VIDEO_ASPECT
from .media import decode, download, extension_for, save_bytes

__all__ = [
    "COMMON_ASPECT_RATIOS",
    "COMMON_RESOLUTIONS",
    "DEFAULT_ASPECT_RATIO",
    "DEFAULT_RESOLUTION",
    "error_response",
    "save_b64_video",
    "save_bytes_video",
    "save_url_video",
    "success_response",
]

COMMON_ASPECT_RATIOS = ASPECTS
COMMON_RESOLUTIONS = RESOLUTIONS
DEFAULT_ASPECT_RATIO = VIDEO_ASPECT
DEFAULT_RESOLUTION = RESOLUTION
_TYPES = {"video/mp4": "mp4", "video/webm": "webm", "video/quicktime": "mov"}


def save_bytes_video(raw: bytes, *, prefix: str = "video", extension: str = "mp4") -> Path:
    """Write video bytes into `$HERMES_HOME/cache/videos/`; returns the file's path."""
    return save_bytes("videos", raw, prefix, extension)


def save_b64_video(b64: str, *, prefix: str = "video", extension: str = "mp4") -> Path:
    return save_bytes("videos", decode(b64), prefix, extension)


def save_url_video(url: str, *, prefix: str = "video", timeout: float = 180.0, max_bytes: int = 200 * 1024 * 1024) -> Path:
    """Download a video into `$HERMES_HOME/cache/videos/`; raises on an HTTP error, an empty
    or an oversized body."""
    body, content_type = download(url, timeout=timeout, max_bytes=max_bytes, what="Video")
    return save_bytes("videos", body, prefix, extension_for(url, content_type, _TYPES, "mp4"))


def success_response(
    *, video: str, model: str, prompt: str, modality: str = "text", aspect_ratio: str = "", duration: int = 0,
    provider: str, extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    payload: dict[str, Any] = {"success": True, "video": video, "model": model, "prompt": prompt,
                               "modality": modality, "aspect_ratio": aspect_ratio, "duration": duration,
                               "provider": provider}
    for key, value in (extra or {}).items():
        payload.setdefault(key, value)
    return payload


def error_response(
    *, error: str, error_type: str = "provider_error", provider: str = "", model: str = "", prompt: str = "",
    aspect_ratio: str = "",
) -> dict[str, Any]:
    return {"success": False, "video": None, "error": error, "error_type": error_type, "model": model,
            "prompt": prompt, "aspect_ratio": aspect_ratio, "provider": provider}
