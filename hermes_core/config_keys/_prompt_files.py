"""The keys of the files the reference agent's system prompt is built from (docs/agent.md)."""

from __future__ import annotations

from ._values import COUNT, FLAG, Key, _count, _flag

__all__ = ["PROMPT_FILES", "CONTEXT_FILE_MAX_CHARS", "MEMORY_ENABLED", "MEMORY_USER_PROFILE_ENABLED"]

# Each file is switched off by its key.
PROMPT_FILES = {name: Key(f"agent.prompt_files.{name}", FLAG, _flag, True, what) for name, what in (
    ("soul_md", "false: $HERMES_HOME/SOUL.md is not the agent's identity (the built-in one is)"),
    ("hermes_md", "false: no .hermes.md / HERMES.md from the working folder up to the git root"),
    ("agents_md", "false: no AGENTS.md chain (git root down to the working folder)"),
    ("claude_md", "false: no CLAUDE.md of the working folder"),
    ("cursorrules", "false: no .cursorrules (and .cursor/rules/*.mdc) of the working folder"),
    ("memory_md", "false: no $HERMES_HOME/memories/MEMORY.md"),
    ("user_md", "false: no $HERMES_HOME/memories/USER.md"),
)}
CONTEXT_FILE_MAX_CHARS = Key("context_file_max_chars", COUNT, _count, 0,
                             "characters kept of each prompt file (0: 6% of the model's context window in "
                             "characters, at least 20,000 and at most 500,000; Hermes' key)")
MEMORY_ENABLED = Key("memory.memory_enabled", FLAG, _flag, True,
                     "false: MEMORY.md is not in the system prompt (Hermes' key)")
MEMORY_USER_PROFILE_ENABLED = Key("memory.user_profile_enabled", FLAG, _flag, True,
                                  "false: USER.md is not in the system prompt (Hermes' key)")
