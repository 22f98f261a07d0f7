"""The reference agent's system prompt: assembled once per conversation, from its parts in order.

1. the identity: the caller's own prompt (a batch item's `system`), else the home's `SOUL.md`,
   else `agent.system_prompt`, else the built-in one; then a caller's instructions (an API
   request's system message), if any;
2. the project context (`.hermes.md`, the AGENTS.md chain, CLAUDE.md or `.cursorrules`) under
   Hermes' `# Project Context` heading;
3. the plugins' `before_memory` sections;
4. `memories/MEMORY.md` and `memories/USER.md` of the home;
5. the memory provider's block, the plugins' `after_memory` sections, the skills index, and the
   plugins' `end` sections.

Each part says where it came from, so that `hermes prompt show` can print it; the text is the
parts joined by blank lines and does not change for the rest of the conversation (providers'
prompt caching keys on its bytes): it is kept with the session (`SystemPrompt.stored()`), and an
agent that continues the session, in this process or another host, sends those bytes again
instead of reading the files anew (only the caller's instructions are the request's own).

>>> prompt = build_system_prompt(manager, session, platform="cli", cwd=Path.cwd())  # doctest: +SKIP
>>> [(part.kind, part.source, part.chars) for part in prompt.parts]
[('identity', 'SOUL.md', 812), ('project', 'AGENTS.md', 2040), ...]
"""

from __future__ import annotations

import os
from collections.abc import Collection
from pathlib import Path
from typing import Any

import attrs

from hermes_core import PluginManager
from hermes_core import config_keys as keys

from .prompt_files import FILES, PROJECT_HEADING, LeftOut, PromptFile, cap_for, read_prompt_files

__all__ = ["PromptPart", "SystemPrompt", "build_system_prompt", "DEFAULT_SYSTEM_PROMPT", "SKILL_TOOLS"]

DEFAULT_SYSTEM_PROMPT = (
    "You are Hermes, a helpful agent. Use the tools you are given when they help; answer plainly and briefly."
)
SKILL_TOOLS = frozenset({"skills_list", "skill_view", "skill_manage"})  # offered: the prompt gets the skills index


@attrs.frozen
class PromptPart:
    """One part of the system prompt: what kind (`identity`, `project`, `memory file`, `plugin
    section`, `memory provider`, `skills index`), where from (a file's label, a plugin's id and
    section, a provider's name), the file's path, and its text."""

    kind: str
    source: str
    text: str
    path: str = ""
    truncated: bool = False

    @property
    def chars(self) -> int:
        return len(self.text)

    def as_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "source": self.source, "path": self.path or None, "chars": self.chars,
                "truncated": self.truncated, "text": self.text}


@attrs.frozen
class SystemPrompt:
    """The assembled prompt: its parts in order, the files left out, and its text."""

    parts: tuple[PromptPart, ...]
    left_out: tuple[LeftOut, ...] = ()
    max_chars: int = 0  # each file's cap

    @property
    def text(self) -> str:
        return "\n\n".join(part.text for part in self.parts if part.text)

    def as_json(self) -> dict[str, Any]:
        return {"chars": len(self.text), "file_max_chars": self.max_chars, "text": self.text,
                "parts": [part.as_json() for part in self.parts],
                "left_out": [{"source": f.source, "path": f.path, "reason": f.reason} for f in self.left_out]}

    def stored(self) -> dict[str, Any]:
        """The prompt as the session store keeps it (`from_stored` reads it back, the same bytes)."""
        return {"parts": [[p.kind, p.source, p.text, p.path, p.truncated] for p in self.parts],
                "left_out": [[f.source, f.path, f.reason] for f in self.left_out], "max_chars": self.max_chars}

    @classmethod
    def from_stored(cls, stored: dict[str, Any]) -> SystemPrompt:
        """A prompt kept with a session (`stored`), as it was."""
        parts = tuple(PromptPart(str(k), str(s), str(t), str(p), bool(c)) for k, s, t, p, c in stored["parts"])
        left_out = tuple(LeftOut(str(s), str(p), str(r)) for s, p, r in stored.get("left_out", ()))
        return cls(parts, left_out, int(stored.get("max_chars", 0)))

    def with_instructions(self, instructions: str | None) -> SystemPrompt:
        """This prompt with a caller's `instructions` in place of the ones it had (after the identity)."""
        parts = [part for part in self.parts if part.kind != "instructions"]
        if instructions:
            parts.insert(1 if parts and parts[0].kind == "identity" else 0,
                         PromptPart("instructions", "the caller's instructions", instructions))
        return attrs.evolve(self, parts=tuple(parts))


def _from_file(kind: str, found: PromptFile) -> PromptPart:
    return PromptPart(kind, found.source, found.text, found.path, found.truncated)


def build_system_prompt(
    manager: PluginManager, session: Any, *, platform: str, cwd: Path | None = None, system_prompt: str | None = None,
    files: bool = True, memory: bool = True, offered: Collection[str] = (), instructions: str | None = None,
) -> SystemPrompt:
    """The system prompt of a conversation in `cwd` (None: the process's working folder) with
    `session` (an `AgentSession`) on `platform`. `files=False` reads no file (a batch item's
    choice); `memory=False` (a session without memory) reads no MEMORY.md or USER.md; `offered`
    is the tools the model is offered (a skills tool brings the skills index); `instructions` a
    caller's text that follows the identity (an API request's system message)."""
    config = manager.config
    enabled = {name for name in FILES if config.read(keys.PROMPT_FILES[name])} if files else set()
    if not (memory and config.read(keys.MEMORY_ENABLED)):
        enabled.discard("memory_md")
    if not (memory and config.read(keys.MEMORY_USER_PROFILE_ENABLED)):
        enabled.discard("user_md")
    max_chars = cap_for(getattr(session, "context_length", None), config.read(keys.CONTEXT_FILE_MAX_CHARS))
    if cwd is None:
        try:
            cwd = Path(os.getcwd())
        except OSError:  # the folder was removed under the process: no project context
            enabled -= {"hermes_md", "agents_md", "claude_md", "cursorrules"}
            cwd = manager.home
    found = read_prompt_files(manager.home, Path(cwd), max_chars=max_chars, enabled=enabled)
    configured = config.read(keys.AGENT_SYSTEM_PROMPT)
    if system_prompt:
        parts = [PromptPart("identity", "the caller's system prompt", system_prompt)]
    elif found.soul is not None:
        parts = [_from_file("identity", found.soul)]
    elif configured:
        parts = [PromptPart("identity", "agent.system_prompt", configured)]
    else:
        parts = [PromptPart("identity", "built-in", DEFAULT_SYSTEM_PROMPT)]
    if instructions:
        parts.append(PromptPart("instructions", "the caller's instructions", instructions))
    if found.project:
        parts.append(PromptPart("project", "project context heading", PROJECT_HEADING))
        parts += [_from_file("project", file) for file in found.project]
    sections = manager.prompt_sections(named=True)

    def plugin(position: str) -> list[PromptPart]:
        return [PromptPart("plugin section", f"{plugin_id}:{section} ({position})", text)
                for plugin_id, section, text in sections[position]]

    parts += plugin("before_memory")
    parts += [_from_file("memory file", file) for file in found.memory]
    provider = getattr(session, "memory_provider", None)
    block = session.system_prompt_block()
    if block:
        parts.append(PromptPart("memory provider", getattr(provider, "name", "memory"), block))
    parts += plugin("after_memory")
    if SKILL_TOOLS & set(offered):
        index = manager.skill_library(platform).index_prompt(set(offered))
        if index:
            parts.append(PromptPart("skills index", f"skills offered on {platform}", index))
    parts += plugin("end")
    return SystemPrompt(tuple(part for part in parts if part.text), found.left_out, max_chars)
