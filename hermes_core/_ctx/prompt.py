"""`ctx.register_system_prompt_section`: bounded text plugins add to the agent's system prompt."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from typing import Any, NamedTuple

from .._errors import RegistrationError
from .._runtime.invoke import contained
from .._undo import Undo, put

__all__ = ["PromptSection", "PromptSections", "SECTION_POSITIONS"]

log = logging.getLogger("hermes_core.plugins")


SECTION_MAX_CHARS = 4_000
SECTIONS_TOTAL_CHARS = 8_000
SECTIONS_MAX = 32
SECTION_POSITIONS = ("before_memory", "after_memory", "end")
_SECTION_ID = re.compile(r"[a-z0-9][a-z0-9_.\-]{0,63}")


class PromptSection(NamedTuple):
    plugin_id: str
    id: str
    content: str | Callable[[], Any]
    position: str
    max_chars: int


class PromptSections:
    """Text plugins add to the system prompt, within Hermes' limits: each section at most
    4,000 characters (its `max_chars`), all together at most 8,000 and 32 sections. Callable
    content is rendered when a session starts and kept for that session."""

    def __init__(self) -> None:
        self._sections: dict[tuple[str, str], PromptSection] = {}

    def add(self, section: PromptSection) -> Undo:
        where = f"ctx.register_system_prompt_section({section.id!r})"
        if not isinstance(section.id, str) or not _SECTION_ID.fullmatch(section.id):
            raise RegistrationError(f"{where}: a section id is lowercase letters, digits, '_', '-' or '.', "
                                    "at most 64 characters", plugin_id=section.plugin_id)
        if not (isinstance(section.content, str) or callable(section.content)):
            raise RegistrationError(f"{where}: content is a string or a function returning one",
                                    plugin_id=section.plugin_id)
        if section.position not in SECTION_POSITIONS:
            log.warning("%s of plugin %r: unknown position %r, used as 'after_memory' (positions: %s)",
                        where, section.plugin_id, section.position, ", ".join(SECTION_POSITIONS))
            section = section._replace(position="after_memory")
        key = (section.plugin_id, section.id)
        if key not in self._sections and len(self._sections) >= SECTIONS_MAX:
            raise RegistrationError(f"{where}: the system prompt already has {SECTIONS_MAX} plugin sections",
                                    plugin_id=section.plugin_id)
        bounded = section._replace(max_chars=max(0, min(int(section.max_chars), SECTION_MAX_CHARS)))
        return put(self._sections, key, bounded)

    def render(self) -> dict[str, list[str]]:
        """Each position's texts, in registration order: rendered now, cut to each section's
        limit, and dropped once the total would pass 8,000 characters (a warning says so)."""
        return {position: [text for _, _, text in named] for position, named in self.render_named().items()}

    def render_named(self) -> dict[str, list[tuple[str, str, str]]]:
        """`render()` with where each text came from: `(plugin id, section id, text)`."""
        out: dict[str, list[tuple[str, str, str]]] = {position: [] for position in SECTION_POSITIONS}
        total = 0
        for section in list(self._sections.values()):
            try:
                text = section.content() if callable(section.content) else section.content
            except BaseException as exc:  # noqa: BLE001 - a plugin's section never breaks the prompt
                contained(exc)
                log.warning("system prompt section %r of plugin %r failed: %s: %s", section.id, section.plugin_id,
                            type(exc).__name__, exc)
                continue
            text = "" if text is None else str(text).strip()
            if len(text) > section.max_chars:
                text = text[: max(0, section.max_chars - 1)] + "…"
            if not text:
                continue
            if total + len(text) > SECTIONS_TOTAL_CHARS:
                log.warning("system prompt section %r of plugin %r left out: the plugin sections would pass %d "
                            "characters", section.id, section.plugin_id, SECTIONS_TOTAL_CHARS)
                continue
            total += len(text)
            out[section.position].append((section.plugin_id, section.id, text))
        return out
