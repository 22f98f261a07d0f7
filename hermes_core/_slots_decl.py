"""The slots every host has, declared without importing anything heavy.

The records on the listing path are `NamedTuple`s rather than attrs classes: importing
attrs alone costs more start-up time than `hermes plugins list` can afford.

Discovery needs the slot names (they are the plugin categories) and their config keys
(selecting a category plugin in its slot activates it) before any plugin is imported.
"""

from __future__ import annotations

from typing import NamedTuple

from ._context_engine import ContextEngine
from ._memory import MemoryProvider
from .providers import (
    BrowserProvider,
    ImageGenProvider,
    SecretSource,
    TerminalEnvironmentProvider,
    TranscriptionProvider,
    TTSProvider,
    VideoGenProvider,
    WebSearchProvider,
)

__all__ = ["SlotDecl", "BUILTIN_SLOTS"]


class SlotDecl(NamedTuple):
    """A single-select extension point: its name, config key, default and base class.

    `base` is the class a provider must be (a subclass or an instance of); None accepts any.
    """

    name: str
    config_key: str
    default: str | None = None
    base: type | None = None


def _host_slot(name: str, base: type | None = None) -> SlotDecl:
    return SlotDecl(name, f"{name}.provider", None, base)


BUILTIN_SLOTS: tuple[SlotDecl, ...] = (
    SlotDecl("context_engine", "context.engine", "compressor", ContextEngine),
    SlotDecl("memory", "memory.provider", "builtin", MemoryProvider),
    # Hermes' own sections (`terminal.backend`, `secrets.sources`) name its built-in backends too: the
    # slots hermes-core adds for its terminal and secret providers keep to keys of their own
    _host_slot("image_gen", ImageGenProvider),
    _host_slot("video_gen", VideoGenProvider),
    _host_slot("web_search", WebSearchProvider),
    _host_slot("tts", TTSProvider),
    _host_slot("transcription", TranscriptionProvider),
    _host_slot("browser", BrowserProvider),
    _host_slot("terminal_environment", TerminalEnvironmentProvider),
    _host_slot("secret_source", SecretSource),
    _host_slot("platform"),  # a gateway's messaging platforms: Hermes has no provider class for them
)
