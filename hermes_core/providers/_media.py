"""The providers of media and the web: search and extraction, image and video generation, a cloud
browser, speech out (`TTSProvider`) and in (`TranscriptionProvider`)."""

from __future__ import annotations

import abc
from typing import TYPE_CHECKING, Any

from ._base import CatalogProviderBase, ProviderBase
from ._defaults import ASPECTS, IMAGE_ASPECT, RESOLUTION, RESOLUTIONS, VIDEO_ASPECT

if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = [
    "BrowserProvider", "ImageGenProvider", "TTSProvider", "TranscriptionProvider", "VideoGenProvider", "WebSearchProvider",
]


class WebSearchProvider(ProviderBase):
    """A web search and/or page extraction backend (`web_search.provider`).

    Results keep Hermes' shapes: search `{"success": True, "data": {"web": [{"title", "url",
    "description", "position"}, ...]}}`, extract `{"success": True, "data": [{"url", "title",
    "content", "raw_content", ...}]}`, a failure `{"success": False, "error": str}`.
    """

    @abc.abstractmethod
    def is_available(self) -> bool:
        """A cheap check (key set, dependency importable); never the network."""

    def supports_search(self) -> bool:
        return True

    def supports_extract(self) -> bool:
        return False

    def search(self, query: str, limit: int = 5) -> dict[str, Any]:
        raise NotImplementedError(f"{self.name} does not support search (override supports_search)")

    def extract(self, urls: list[str], **kwargs: Any) -> Any:
        """The pages at `urls` (may be `async def`); ignore keyword arguments you do not know."""
        raise NotImplementedError(f"{self.name} does not support extract (override supports_extract)")

    def is_keyless_available(self) -> bool:
        """Whether it can serve calls anonymously (a weaker tier; never makes `is_available` true)."""
        return False


class ImageGenProvider(CatalogProviderBase):
    """An image generation backend (`image_gen.provider`)."""

    def capabilities(self) -> dict[str, Any]:
        """What it accepts: `modalities`, `max_reference_images`, ..."""
        return {"modalities": ["text"], "max_reference_images": 0}

    @abc.abstractmethod
    def generate(
        self,
        prompt: str,
        aspect_ratio: str = IMAGE_ASPECT,
        *,
        image_url: str | None = None,
        reference_image_urls: list[str] | None = None,
        **kwargs: Any,
    ) -> dict[str, Any]:
        """One image: `{"success": True, "image", "model", "prompt", ...}` or an error dict.
        Called with `prompt=` and `aspect_ratio=` by keyword; unknown keywords are ignored."""


class VideoGenProvider(CatalogProviderBase):
    """A video generation backend (`video_gen.provider`)."""

    def capabilities(self) -> dict[str, Any]:
        return {
            "modalities": ["text"],
            "aspect_ratios": list(ASPECTS),
            "resolutions": list(RESOLUTIONS),
            "max_duration": 10,
            "min_duration": 1,
            "supports_audio": False,
            "supports_negative_prompt": False,
            "max_reference_images": 0,
            "supports_seed": False,
            "supports_upscale": False,
        }

    @abc.abstractmethod
    def generate(
        self,
        prompt: str,
        *,
        model: str | None = None,
        image_url: str | None = None,
        reference_image_urls: list[str] | None = None,
        duration: int | None = None,
        aspect_ratio: str = VIDEO_ASPECT,
        resolution: str = RESOLUTION,
        negative_prompt: str | None = None,
        audio: bool | None = None,
        seed: int | None = None,
        **kwargs: Any,
    ) -> dict[str, Any]:
        """One video: `{"success": True, "video", ...}` or an error dict; unknown keywords are ignored."""


class BrowserProvider(abc.ABC):
    """A cloud browser backend (`browser.provider`): only the session lifecycle; the host drives
    the page over the CDP URL it returns."""

    @property
    @abc.abstractmethod
    def name(self) -> str:
        """Stable lowercase id, e.g. `browserbase`."""

    @property
    def display_name(self) -> str:
        return self.name

    @abc.abstractmethod
    def is_available(self) -> bool:
        """A cheap check; never the network."""

    @abc.abstractmethod
    def create_session(self, task_id: str) -> dict[str, object]:
        """`{"session_name", "bb_session_id", "cdp_url", "features", ...}`; may raise `ValueError`
        (missing credentials) or `RuntimeError` (the service failed)."""

    @abc.abstractmethod
    def close_session(self, session_id: str) -> bool:
        """Close a session by its provider id; False on failure, never raises."""

    @abc.abstractmethod
    def emergency_cleanup(self, session_id: str) -> None:
        """Best-effort cleanup at exit; never raises."""

    def get_setup_schema(self) -> dict[str, Any] | None:
        return {"name": self.display_name, "badge": "", "tag": "", "env_vars": []}

    def is_configured(self) -> bool:
        return self.is_available()

    def provider_name(self) -> str:
        return self.display_name


class TTSProvider(CatalogProviderBase):
    """A text-to-speech backend (`tts.provider`)."""

    def list_voices(self) -> list[dict[str, Any]]:
        return []

    def default_voice(self) -> str | None:
        voices = self.list_voices()
        return voices[0].get("id") if voices else None

    @abc.abstractmethod
    def synthesize(
        self,
        text: str,
        output_path: str,
        *,
        voice: str | None = None,
        model: str | None = None,
        speed: float | None = None,
        format: str = "mp3",
        **extra: Any,
    ) -> str:
        """Write speech for `text` to `output_path` (its folder exists); return the path written.
        Raise on failure."""

    def stream(
        self, text: str, *, voice: str | None = None, model: str | None = None, format: str = "opus", **extra: Any
    ) -> Iterator[bytes]:
        """Audio chunks as they are made; by default not supported (callers fall back to `synthesize`)."""
        raise NotImplementedError(f"{self.name} does not stream")

    @property
    def voice_compatible(self) -> bool:
        return False

    @property
    def supports_pcm_stream(self) -> bool:
        return False

    def warm(self) -> None:
        """Called when speech output is turned on."""

    def release(self) -> None:
        """Called when its last user lets go."""


class TranscriptionProvider(CatalogProviderBase):
    """A speech-to-text backend (`transcription.provider`)."""

    @abc.abstractmethod
    def transcribe(
        self, file_path: str, *, model: str | None = None, language: str | None = None, **extra: Any
    ) -> dict[str, Any]:
        """`{"success": bool, "transcript": str, "provider": str, "error"?: str}`; never raises."""
