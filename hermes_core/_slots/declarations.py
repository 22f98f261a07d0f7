"""The slots every host has, declared without importing anything heavy.

The records on the listing path are `NamedTuple`s rather than attrs classes: importing
attrs alone costs more start-up time than `hermes plugins list` can afford.

Discovery needs the slot names (they are the plugin categories) and their config keys
(selecting a category plugin in its slot activates it) before any plugin is imported.
"""

from __future__ import annotations

import importlib
from typing import NamedTuple

__all__ = ["SlotDecl", "BUILTIN_SLOTS"]


class SlotDecl(NamedTuple):
    """A single-select extension point: its name, config key, default and base class.

    `base` is the class a provider must be (a subclass or an instance of); None accepts any.
    It may be given as `"module:Class"`, imported only when a provider is checked (the
    built-in slots do this, so that listing plugins imports no base class).
    """

    name: str
    config_key: str
    default: str | None = None
    base: type | str | None = None

    def base_class(self) -> type | None:
        """`base` as a class (a `"module:Class"` string imported now)."""
        if not isinstance(self.base, str):
            return self.base
        module, _, name = self.base.partition(":")
        found: type = getattr(importlib.import_module(module), name)
        return found


def _host_slot(name: str, base: str | None = None) -> SlotDecl:
    return SlotDecl(name, f"{name}.provider", None, base and f"hermes_core.providers:{base}")


BUILTIN_SLOTS: tuple[SlotDecl, ...] = (
    SlotDecl("context_engine", "context.engine", "compressor", "hermes_core._slots.context_engine:ContextEngine"),
    SlotDecl("memory", "memory.provider", "builtin", "hermes_core._slots.memory:MemoryProvider"),
    # Hermes' own sections (`terminal.backend`, `secrets.sources`) name its built-in backends too: the
    # slots hermes-core adds for its terminal and secret providers keep to keys of their own
    _host_slot("image_gen", "ImageGenProvider"),
    _host_slot("video_gen", "VideoGenProvider"),
    _host_slot("web_search", "WebSearchProvider"),
    _host_slot("tts", "TTSProvider"),
    _host_slot("transcription", "TranscriptionProvider"),
    _host_slot("browser", "BrowserProvider"),
    _host_slot("terminal_environment", "TerminalEnvironmentProvider"),
    _host_slot("secret_source", "SecretSource"),
)
