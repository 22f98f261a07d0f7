"""Hermes' `agent.image_gen_provider` helpers (the base class is `hermes_core.providers`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..providers._defaults import IMAGE_ASPECT
from .media import decode, download, extension_for, save_bytes

__all__ = [
    "DEFAULT_ASPECT_RATIO",
    "VALID_ASPECT_RATIOS",
    "error_response",
    "normalize_reference_images",
    "resolve_aspect_ratio",
    "save_b64_image",
    "save_url_image",
    "success_response",
]

VALID_ASPECT_RATIOS = ("landscape", "square", "portrait")
DEFAULT_ASPECT_RATIO = IMAGE_ASPECT
_TYPES = {"image/png": "png", "image/jpeg": "jpg", "image/jpg": "jpg", "image/webp": "webp", "image/gif": "gif"}


def resolve_aspect_ratio(value: Any) -> str:
    """`value` when it is a known aspect ratio (any case), else `landscape`."""
    name = value.strip().lower() if isinstance(value, str) else ""
    return name if name in VALID_ASPECT_RATIOS else DEFAULT_ASPECT_RATIO


def normalize_reference_images(value: Any) -> list[str] | None:
    """A string or a list of them as a list of non-blank, stripped strings; None when none is left."""
    items = [value] if isinstance(value, str) else value if isinstance(value, (list, tuple)) else []
    cleaned = [item.strip() for item in items if isinstance(item, str) and item.strip()]
    return cleaned or None


def save_b64_image(b64_data: str, *, prefix: str = "image", extension: str = "png") -> Path:
    """Decode base64 image data into `$HERMES_HOME/cache/images/`; returns the file's path."""
    return save_bytes("images", decode(b64_data), prefix, extension)


def save_url_image(url: str, *, prefix: str = "image", timeout: float = 60.0, max_bytes: int = 25 * 1024 * 1024) -> Path:
    """Download an image into `$HERMES_HOME/cache/images/`; raises on an HTTP error, an empty
    or an oversized body."""
    body, content_type = download(url, timeout=timeout, max_bytes=max_bytes, what="Image")
    return save_bytes("images", body, prefix, extension_for(url, content_type, _TYPES, "png"))


def success_response(
    *, image: str, model: str, prompt: str, aspect_ratio: str, provider: str, modality: str = "text",
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    payload: dict[str, Any] = {"success": True, "image": image, "model": model, "prompt": prompt,
                               "aspect_ratio": aspect_ratio, "modality": modality, "provider": provider}
    for key, value in (extra or {}).items():
        payload.setdefault(key, value)
    return payload


def error_response(
    *, error: str, error_type: str = "provider_error", provider: str = "", model: str = "", prompt: str = "",
    aspect_ratio: str = DEFAULT_ASPECT_RATIO,
) -> dict[str, Any]:
    return {"success": False, "image": None, "error": error, "error_type": error_type, "model": model,
            "prompt": prompt, "aspect_ratio": aspect_ratio, "provider": provider}
