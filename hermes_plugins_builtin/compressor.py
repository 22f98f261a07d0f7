"""Built-in context engine `compressor` (the default): keep the head and the tail, summarise the middle.

    compression:
      threshold: 0.50        # compress when the prompt reaches this fraction of the context window
      target_ratio: 0.20     # pruning alone is enough when it brings the prompt under this fraction
      protect_first_n: 3     # messages kept at the start (after the system prompt)
      protect_last_n: 20     # messages kept at the end (always including the last user message)
    auxiliary:
      compression: {model: gpt-4o-mini}   # the summariser; unset: the main model

One pass: cut where no tool call is separated from its results; replace large old tool
outputs in the middle with a placeholder (enough, if that brings the prompt under the
target); otherwise summarise the middle with the host's auxiliary LLM, updating the
summary of the previous pass; if the summariser fails, an extractive summary stands in
(and says so) so the middle is never silently lost; repair tool pairing last.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from hermes_core import config_keys as keys
from hermes_core import estimate_tokens, message_text, repair_tool_pairing, split_for_compression

from ._engine_base import ThresholdEngine

__all__ = ["CompressorEngine", "SUMMARY_MARK"]

log = logging.getLogger("hermes.plugins.compressor")

SUMMARY_MARK = "[Summary of the earlier conversation"
PRUNE_CHARS = 2_000  # a tool output longer than this, in the middle, is replaced by a placeholder
LINE_CHARS = 2_000  # each message is cut to this for the summariser
SUMMARY_INPUT_CHARS = 120_000  # the summariser reads at most this much (the newest part of the middle)
EXTRACT_LINE_CHARS = 160
EXTRACT_MAX_LINES = 40

PROMPT = (
    "You compress conversations for an AI agent that will continue the conversation from your summary. "
    "Summarise the turns you are given. Keep: the user's goals, constraints and preferences; decisions made "
    "and why; facts learned (names, numbers, file paths, ids, URLs); what tools returned that still matters; "
    "work in progress and open questions. Drop pleasantries and repetition. Write terse bullet points, "
    "no preamble."
)


def _is_summary(message: Mapping[str, Any]) -> bool:
    content = message.get("content")
    return message.get("role") == "user" and isinstance(content, str) and content.startswith(SUMMARY_MARK)


def _pruned(message: Mapping[str, Any]) -> dict[str, Any]:
    content = message.get("content")
    if message.get("role") == "tool" and isinstance(content, str) and len(content) > PRUNE_CHARS:
        return {**message, "content": f"[old tool output removed by compression: {len(content):,} characters]"}
    return dict(message)


def _line(message: Mapping[str, Any], limit: int) -> str:
    text = " ".join(message_text(message).split())
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return f"[{message.get('role')}] {text}"


class CompressorEngine(ThresholdEngine):
    """Lossy compression: the middle of the conversation becomes one summary message."""

    name = "compressor"
    settings = (keys.COMPRESSION_THRESHOLD, keys.COMPRESSION_TARGET_RATIO, keys.COMPRESSION_PROTECT_FIRST_N,
                keys.COMPRESSION_PROTECT_LAST_N)

    def __init__(
        self,
        *,
        threshold: float = keys.COMPRESSION_THRESHOLD.default,
        target_ratio: float = keys.COMPRESSION_TARGET_RATIO.default,
        protect_first_n: int = keys.COMPRESSION_PROTECT_FIRST_N.default,
        protect_last_n: int = keys.COMPRESSION_PROTECT_LAST_N.default,
        context_length: int = 128_000,
        auxiliary: Any = None,
    ) -> None:
        self.threshold_percent = float(threshold)
        self.target_ratio = float(target_ratio)
        self.protect_first_n = int(protect_first_n)
        self.protect_last_n = int(protect_last_n)
        self.auxiliary = auxiliary  # anything with complete(messages, max_tokens=) -> result with .text
        self.last_summary_failure: str | None = None
        self.update_model("", context_length)

    def __deepcopy__(self, memo: dict[int, Any]) -> CompressorEngine:
        return type(self)(threshold=self.threshold_percent, target_ratio=self.target_ratio,
                          protect_first_n=self.protect_first_n, protect_last_n=self.protect_last_n,
                          context_length=self.context_length, auxiliary=self.auxiliary)

    # -- the host's calls ---------------------------------------------------------------------

    def on_session_start(self, session_id: str, **kwargs: Any) -> None:
        if kwargs.get("auxiliary") is not None:
            self.auxiliary = kwargs["auxiliary"]
        super().on_session_start(session_id, **kwargs)

    def compress(
        self,
        messages: list[dict[str, Any]],
        current_tokens: int | None = None,
        focus_topic: str | None = None,
        memory_context: str | None = None,
    ) -> list[dict[str, Any]]:
        messages = list(messages)
        head_end, tail_start = split_for_compression(messages, self.protect_first_n, self.protect_last_n)
        if head_end >= tail_start:
            return repair_tool_pairing(messages)
        head, middle, tail = messages[:head_end], messages[head_end:tail_start], messages[tail_start:]
        self.compression_count += 1
        pruned = [_pruned(m) for m in middle]
        target = int(self.context_length * self.target_ratio)
        candidate = head + pruned + tail
        if target > 0 and estimate_tokens(candidate) <= target:
            result = repair_tool_pairing(candidate)
        else:
            previous = "\n".join(str(m["content"]) for m in pruned if _is_summary(m))
            turns = [m for m in pruned if not _is_summary(m)]
            summary = self._summary(turns, previous, focus_topic, memory_context)
            result = repair_tool_pairing([*head, {"role": "user", "content": summary}, *tail])
        self.last_prompt_tokens = estimate_tokens(result)
        return result

    # -- summaries ----------------------------------------------------------------------------

    def _summary(self, turns: Sequence[Mapping[str, Any]], previous: str, focus: str | None, notes: str | None) -> str:
        header = f"{SUMMARY_MARK}: {len(turns)} messages, compression pass {self.compression_count}]"
        try:
            text = self._summarise(turns, previous, focus, notes)
            self.last_summary_failure = None
            return f"{header}\n{text}"
        except Exception as exc:  # noqa: BLE001 - the middle must never be lost
            reason = f"{type(exc).__name__}: {exc}"
            self.last_summary_failure = reason
            log.warning("compression summary failed, using an extractive summary: %s", reason)
            return f"{header}\n{self._extract(turns, previous, reason)}"

    def _summarise(self, turns: Sequence[Mapping[str, Any]], previous: str, focus: str | None, notes: str | None) -> str:
        if self.auxiliary is None:
            raise RuntimeError("no summariser is configured (the engine was given no auxiliary LLM)")
        kept: list[str] = []
        size = 0
        for message in reversed(turns):  # the newest turns first, up to the budget
            line = _line(message, LINE_CHARS)
            if size + len(line) > SUMMARY_INPUT_CHARS:
                break
            kept.append(line)
            size += len(line) + 1
        kept.reverse()
        parts = []
        if previous:
            parts.append(f"The summary so far (update it with the new turns; keep what still matters):\n{previous}")
        if focus:
            parts.append(f"Focus on: {focus}. Keep everything about it in full detail; be brief on the rest.")
        if notes:
            parts.append(f"Notes the agent's memory kept from these turns:\n{notes}")
        if len(kept) < len(turns):
            parts.append(f"({len(turns) - len(kept)} older messages are not shown.)")
        parts.append("The turns:\n" + "\n".join(kept))
        budget = max(256, min(4_096, int(self.context_length * self.target_ratio / 4)))
        result = self.auxiliary.complete(
            [{"role": "system", "content": PROMPT}, {"role": "user", "content": "\n\n".join(parts)}],
            max_tokens=budget,
        )
        text = (getattr(result, "text", "") or "").strip()
        if not text:
            raise RuntimeError("the summariser returned an empty summary")
        return text

    @staticmethod
    def _extract(turns: Sequence[Mapping[str, Any]], previous: str, reason: str) -> str:
        """A summary without an LLM: the previous summary and a line per message (the first and
        the latest ones when there are many)."""
        lines = [f"(The summariser failed — {reason} — so this summary was extracted from the messages.)"]
        if previous:
            lines.append(previous if len(previous) <= 3_000 else previous[:2_999] + "…")
        if len(turns) <= EXTRACT_MAX_LINES:
            shown = [_line(m, EXTRACT_LINE_CHARS) for m in turns]
        else:
            first, last = EXTRACT_MAX_LINES // 4, EXTRACT_MAX_LINES - EXTRACT_MAX_LINES // 4
            shown = [*(_line(m, EXTRACT_LINE_CHARS) for m in turns[:first]),
                     f"… {len(turns) - first - last} messages omitted …",
                     *(_line(m, EXTRACT_LINE_CHARS) for m in turns[-last:])]
        return "\n".join(lines + shown)

    def get_status(self) -> dict[str, Any]:
        return {**super().get_status(), "last_summary_failure": self.last_summary_failure}

