"""Recall helpers Hermes' memory providers use: `RecallStatus` and `is_trivial_prompt`.

Served to Hermes plugins as `agent.memory_provider.RecallStatus` / `.is_trivial_prompt`, with
Hermes' meaning: a provider's `recall_status()` describes what its last prefetch injected,
and a trivial prompt (empty, a slash command, a bare greeting or acknowledgement) warrants no
recall at all.
"""

from __future__ import annotations

import dataclasses
import re

__all__ = ["INDICATOR_GLYPH", "PRE_COMPRESS_CHECKPOINT_API_VERSION", "RecallStatus", "TRIVIAL_PROMPTS",
           "TRIVIAL_PROMPT_RE", "is_trivial_prompt"]

INDICATOR_GLYPH = "🧠"

# Whole prompts that carry no meaning to recall for (matched case-insensitively, ignoring
# trailing punctuation, quotes, brackets and emoticon characters).
TRIVIAL_PROMPTS = frozenset({
    "yes", "no", "ok", "okay", "sure", "thanks", "thank you", "y", "n", "yep", "nope", "yeah", "nah",
    "hi", "hey", "hello", "yo", "sup", "continue", "go ahead", "do it", "proceed", "got it", "cool", "nice",
    "great", "done", "next", "lgtm", "k",
})
_TRAILING = " \t\r\n!?.:;,\"'~‘’“”—–…()[]{}<>*&^%$#@+=`\u00a0"
# The same test as one anchored pattern, as Hermes offers it to providers' own classifiers.
TRIVIAL_PROMPT_RE = re.compile(
    "^(" + "|".join(re.escape(p) for p in sorted(TRIVIAL_PROMPTS, key=len, reverse=True)) + ")"
    "[" + re.escape(_TRAILING) + "]*$",
    re.IGNORECASE,
)
# The version of `on_pre_compress`'s checkpoint contract Hermes' host speaks (2: fail-closed).
PRE_COMPRESS_CHECKPOINT_API_VERSION = 2


@dataclasses.dataclass(frozen=True)
class RecallStatus:
    """What a memory provider's most recent prefetch injected: `count` memories (0 when it
    injected something uncounted, e.g. a synthesised answer), shown after `glyph`."""

    provider_label: str
    count: int
    glyph: str = INDICATOR_GLYPH


def is_trivial_prompt(text: str | None) -> bool:
    """Whether a user prompt is too slight to recall memories for: empty, a `/command`, or a
    bare greeting or acknowledgement ("hi!", "thanks :)", "lgtm"). "k8s" or "note" are not."""
    stripped = (text or "").strip()
    if not stripped or stripped.startswith("/"):
        return True
    return stripped.lower().rstrip(_TRAILING) in TRIVIAL_PROMPTS
