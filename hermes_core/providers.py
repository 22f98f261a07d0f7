"""The base classes of the host-subsystem slots: web search, image and video generation, cloud
browser, speech in and out, terminal backends and secret sources.

They are Hermes Agent's provider classes with the same names, abstract members, optional members
and defaults, so a provider written for Hermes is one here, and a Hermes plugin importing
`agent.web_search_provider` (and the other Hermes modules) gets these classes. Each slot
(`web_search`, `image_gen`, ...) accepts a subclass, or any class that has every abstract
member of its base (see docs/hermes.md); the config (`<slot>.provider`) picks the active one.

>>> from hermes_core.providers import WebSearchProvider
>>> class Quick(WebSearchProvider):
...     name = "quick"
...     def is_available(self): return True
...     def search(self, query, limit=5):
...         return {"success": True, "data": {"web": []}}

Imports only `abc`, `enum` and `re` up front: the slot declarations (read on the
listing path) name these classes. `FetchResult` is imported on first use.
"""

from __future__ import annotations

import abc
import enum
import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping
    from pathlib import Path

    from ._hermes.secret_sources import FetchResult

__all__ = [
    "BrowserProvider",
    "CatalogProviderBase",
    "ErrorKind",
    "FetchResult",
    "ImageGenProvider",
    "ProviderBase",
    "SecretSource",
    "TTSProvider",
    "TerminalEnvironmentProvider",
    "TranscriptionProvider",
    "VideoGenProvider",
    "WebSearchProvider",
]

# Hermes' values; its modules export them under Hermes' names (`agent.image_gen_provider`, ...)
_API_VERSION = 1
_FETCH_TIMEOUT = 120.0
_IMAGE_ASPECT = "landscape"
_VIDEO_ASPECT = "16:9"
_RESOLUTION = "720p"
_ASPECTS = ("16:9", "9:16", "1:1", "4:3", "3:4", "3:2", "2:3", "21:9")
_RESOLUTIONS = ("480p", "540p", "720p", "768p", "1080p")


class ProviderBase(abc.ABC):
    """What every provider has: a `name` (its config value and registry key), a
    `display_name`, and a row for setup pickers."""

    @property
    @abc.abstractmethod
    def name(self) -> str:
        """Stable lowercase id (hyphens allowed): the value `<slot>.provider` selects."""

    @property
    def display_name(self) -> str:
        """The label shown to people; `name` by default."""
        return self.name

    def get_setup_schema(self) -> dict[str, Any]:
        """The picker row: `{"name", "badge", "tag", "env_vars": [{"key", "prompt", "url"}, ...]}`."""
        return {"name": self.display_name, "badge": "", "tag": "", "env_vars": []}


class CatalogProviderBase(ProviderBase):
    """A provider with a model catalog: available unless it says otherwise, title-cased label."""

    @property
    def display_name(self) -> str:
        return self.name.title()

    def is_available(self) -> bool:
        """Whether it can serve calls (key set, SDK importable). Must not raise or touch the network."""
        return True

    def list_models(self) -> list[dict[str, Any]]:
        """The catalog: `{"id", "display", ...}` entries; `[]` by default."""
        return []

    def default_model(self) -> str | None:
        """The `id` of the first catalog entry, or None."""
        models = self.list_models()
        return models[0].get("id") if models else None


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
        aspect_ratio: str = _IMAGE_ASPECT,
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
            "aspect_ratios": list(_ASPECTS),
            "resolutions": list(_RESOLUTIONS),
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
        aspect_ratio: str = _VIDEO_ASPECT,
        resolution: str = _RESOLUTION,
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


_CONFIG_KEY_PART = re.compile(r"^[A-Za-z0-9_-]+$")
_UNSAFE_KEY_PARTS = frozenset({"__proto__", "constructor", "prototype"})
_FIELD_TYPES = frozenset({"boolean", "list", "number", "secret", "select", "string", "text"})
_VALUE_METADATA = frozenset({"const", "default", "example", "examples", "options", "value"})


class TerminalEnvironmentProvider(ProviderBase):
    """A terminal execution backend (`terminal_environment.provider`): `create_environment`
    returns an object with `execute(command, timeout=None, ...)` giving `{"output", "exit_code"}`
    and `cleanup()`."""

    is_remote: bool = True
    is_container: bool = True
    session_isolated_when_nonpersistent: bool = False

    @property
    def description(self) -> str:
        return f"Run commands in a {self.display_name} environment."

    @property
    def skip_container_guards(self) -> bool:
        return self.is_container

    @property
    def cache_path_base(self) -> str | None:
        return None

    @property
    def strip_env_keys(self) -> frozenset[str]:
        return frozenset()

    @property
    def env_description(self) -> str:
        return f"a {self.display_name} environment (likely Linux)"

    @abc.abstractmethod
    def is_available(self) -> bool:
        """A cheap check; never the network."""

    def check_requirements(self, config: dict[str, Any]) -> bool:
        return self.is_available()

    def probe(self) -> tuple[str, str]:
        """`(status, detail)`: `ready`, `needs_setup` or `unavailable`; never raises."""
        return ("ready", "") if self.is_available() else ("needs_setup", f"{self.display_name} is not configured.")

    def probe_with_config(self, config: Mapping[str, Any]) -> tuple[str, str]:
        return self.probe()

    def setup_instructions(self) -> list[str]:
        return []

    def post_setup(self) -> None:
        """An interactive step after the backend is chosen; nothing by default."""

    def doctor_checks(self) -> list[tuple[bool, str, str]]:
        try:
            ok = bool(self.is_available())
        except Exception:  # noqa: BLE001 - a raising check means unavailable
            ok = False
        detail = "(configured)" if ok else "(not configured — see setup instructions)"
        return [(ok, f"{self.display_name} backend", detail)]

    def get_config_schema(self) -> dict[str, dict[str, Any]]:
        """The fields of `terminal.backends.<name>`: `{key: {"type", "description", ...}}`."""
        return {}

    def validated_config_schema(self) -> dict[str, dict[str, Any]]:
        """`get_config_schema()` checked (safe dotted keys, known field types, no value on a
        secret, JSON values only) and copied; `TypeError` / `ValueError` say what is wrong."""
        import copy
        import json

        raw = self.get_config_schema()
        if not isinstance(raw, dict):
            raise TypeError("terminal provider config schema must be a mapping")
        checked: dict[str, dict[str, Any]] = {}
        for key, field in raw.items():
            if not isinstance(key, str) or not key:
                raise TypeError("terminal provider config schema keys must be non-empty strings")
            if any(not _CONFIG_KEY_PART.match(p) or p in _UNSAFE_KEY_PARTS for p in key.split(".")):
                raise ValueError(f"terminal provider config schema key {key!r} is unsafe")
            if not isinstance(field, dict) or not all(isinstance(k, str) for k in field):
                raise TypeError(f"terminal provider config schema entry {key!r} must be a mapping with string keys")
            entry = copy.deepcopy(field)
            entry["type"] = kind = entry.get("type", "string")
            if kind not in _FIELD_TYPES:
                raise ValueError(f"terminal provider config schema entry {key!r} has unsupported type {kind!r}")
            if kind == "secret" and _VALUE_METADATA & entry.keys():
                raise ValueError(f"secret config schema entry {key!r} cannot include value-bearing metadata: "
                                 + ", ".join(sorted(_VALUE_METADATA & entry.keys())))
            options = entry.get("options")
            if kind == "select" and (not isinstance(options, list) or not all(isinstance(o, str) for o in options)):
                raise TypeError(f"terminal provider config schema entry {key!r} options must be a list of strings")
            try:
                json.dumps(entry, allow_nan=False)
            except (TypeError, ValueError) as exc:
                raise TypeError(f"terminal provider config schema entry {key!r} must be JSON-serializable") from exc
            checked[key] = entry
        return checked

    def resolve_config(self, config: Mapping[str, Any]) -> dict[str, Any]:
        import copy

        return copy.deepcopy(dict(config))

    def validated_config(self, config: Mapping[str, Any]) -> dict[str, Any]:
        import copy

        resolved = self.resolve_config(copy.deepcopy(dict(config)))
        if not isinstance(resolved, dict):
            raise TypeError(f"Terminal provider {self.name!r} resolve_config() must return a mapping")
        return copy.deepcopy(resolved)

    @abc.abstractmethod
    def create_environment(
        self,
        *,
        cwd: str,
        timeout: int,
        task_id: str = "default",
        image: str | None = None,
        container_config: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> Any:
        """A new environment; accept and ignore keyword arguments you do not know."""


class ErrorKind(str, enum.Enum):
    """Why a secret source's fetch failed."""

    NOT_CONFIGURED = "not_configured"
    BINARY_MISSING = "binary_missing"
    AUTH_FAILED = "auth_failed"
    AUTH_EXPIRED = "auth_expired"
    REF_INVALID = "ref_invalid"
    NETWORK = "network"
    EMPTY_VALUE = "empty_value"
    TIMEOUT = "timeout"
    INTERNAL = "internal"


class SecretSource(abc.ABC):
    """A secret manager that supplies environment-variable-shaped credentials
    (`secret_source.provider`). Set the class attributes and implement `fetch`, which never
    raises and never prompts: failures go in the returned `FetchResult`."""

    api_version: int = _API_VERSION
    name: str = ""
    label: str = ""
    shape: str = "mapped"  # or "bulk"
    scheme: str | None = None

    @abc.abstractmethod
    def fetch(self, cfg: dict[str, Any], home_path: Path) -> FetchResult:
        """The secrets this source would supply, from its config section `secrets.<name>`."""

    def is_enabled(self, cfg: dict[str, Any]) -> bool:
        return bool(isinstance(cfg, dict) and cfg.get("enabled"))

    def override_existing(self, cfg: dict[str, Any]) -> bool:
        return bool(isinstance(cfg, dict) and cfg.get("override_existing", False))

    def protected_env_vars(self, cfg: dict[str, Any]) -> frozenset[str]:
        return frozenset()

    def fetch_timeout_seconds(self, cfg: dict[str, Any]) -> float:
        try:
            seconds = float((cfg or {}).get("timeout_seconds", _FETCH_TIMEOUT))
        except (TypeError, ValueError, AttributeError):
            return _FETCH_TIMEOUT
        return seconds if seconds > 0 else _FETCH_TIMEOUT

    def config_schema(self) -> dict[str, Any]:
        """`{key: {"description", "default"}}`, for setup screens."""
        return {}

    def invalidate_cache(self, home_path: Path) -> None:
        """Forget anything cached under `home_path`; nothing by default."""

    def remediation(self, kind: ErrorKind | None, cfg: dict[str, Any]) -> str:
        """One line saying what to do about a failed fetch; no I/O, never raises."""
        setup = f"`hermes secrets {self.name} setup`"
        hints = {
            ErrorKind.NOT_CONFIGURED: f"Run {setup} to finish configuration.",
            ErrorKind.BINARY_MISSING: f"Run {setup} to install the helper CLI.",
            ErrorKind.AUTH_FAILED: f"Credentials rejected — run {setup} to re-authenticate.",
            ErrorKind.AUTH_EXPIRED: f"Credentials expired — run {setup} to re-authenticate.",
            ErrorKind.NETWORK: "Network problem reaching the secrets backend — check connectivity and retry.",
            ErrorKind.TIMEOUT: f"Backend was slow — raise secrets.{self.name}.timeout_seconds if this recurs.",
        }
        return hints.get(kind, "") if kind is not None else ""


def __getattr__(name: str) -> Any:
    if name == "FetchResult":
        from ._hermes.secret_sources import FetchResult

        globals()[name] = FetchResult
        return FetchResult
    raise AttributeError(f"module 'hermes_core.providers' has no attribute {name!r}")
