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

`ContextCompressor` is served to Hermes plugins as `agent.context_compressor.ContextCompressor`
and is built like Hermes' own: Hermes' constructor, and `compress` done through the methods a
subclass overrides (`_prune_old_tool_results`, `_prune_boundary`, `_find_tail_cut_by_tokens`,
`_generate_summary`, ...), so that an override changes what it does. docs/engines.md lists them.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from hermes_core import config_keys as keys
from hermes_core import estimate_tokens, message_text, repair_tool_pairing

from ._engine_base import ThresholdEngine

__all__ = ["CompressorEngine", "ContextCompressor", "SUMMARY_MARK"]

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
    return message.get("role") in ("user", "assistant") and isinstance(content, str) \
        and content.startswith(SUMMARY_MARK)


def _line(message: Mapping[str, Any], limit: int) -> str:
    text = " ".join(message_text(message).split())
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return f"[{message.get('role')}] {text}"


class ContextCompressor(ThresholdEngine):
    """Lossy compression: the middle of the conversation becomes one summary message.

    The constructor is Hermes' (`model` first; every other argument by keyword). What this
    engine does with each argument: `threshold_percent`, `protect_first_n`, `protect_last_n`,
    `summary_target_ratio`, `abort_on_summary_failure`, `model_thresholds`,
    `threshold_tokens_cap`, `proactive_prune_*`, `min_tail_user_messages` and
    `config_context_length` are honoured; `summary_model_override`, `base_url`, `api_key`,
    `provider`, `api_mode`, `max_tokens`, `tail_mode`, `custom_providers` are kept as
    attributes and not used: the summariser is the host's (`auxiliary.compression`, the
    operator's choice), handed over by `bind_summariser`. `context_length` and `auxiliary`
    (keyword only) are hermes-core's own.
    """

    name = "compressor"
    settings = (keys.COMPRESSION_THRESHOLD, keys.COMPRESSION_TARGET_RATIO, keys.COMPRESSION_PROTECT_FIRST_N,
                keys.COMPRESSION_PROTECT_LAST_N)

    def __init__(
        self,
        model: str = "",
        threshold_percent: float = keys.COMPRESSION_THRESHOLD.default,
        protect_first_n: int = keys.COMPRESSION_PROTECT_FIRST_N.default,
        protect_last_n: int = keys.COMPRESSION_PROTECT_LAST_N.default,
        summary_target_ratio: float = keys.COMPRESSION_TARGET_RATIO.default,
        quiet_mode: bool = False,
        summary_model_override: str | None = None,
        base_url: str = "",
        api_key: str = "",
        config_context_length: int | None = None,
        provider: str = "",
        api_mode: str = "",
        abort_on_summary_failure: bool = False,
        max_tokens: int | None = None,
        model_thresholds: dict[str, float] | None = None,
        threshold_tokens_cap: int | None = None,
        proactive_prune_tokens: int = 0,
        proactive_prune_min_result_chars: int = 8_000,
        proactive_prune_min_reclaim_tokens: int = 4_096,
        min_tail_user_messages: int = 1,
        tail_mode: str = "lean",
        custom_providers: list[Any] | None = None,
        *,
        context_length: int | None = None,
        auxiliary: Any = None,
    ) -> None:
        self.model, self.base_url, self.api_key, self.provider, self.api_mode = model, base_url, api_key, provider, api_mode
        self.threshold_percent = float(threshold_percent)
        self.protect_first_n = int(protect_first_n)
        self.protect_last_n = int(protect_last_n)
        self.summary_target_ratio = float(summary_target_ratio)
        self.quiet_mode = bool(quiet_mode)
        self.summary_model = summary_model_override or ""
        self.abort_on_summary_failure = bool(abort_on_summary_failure)
        self.max_tokens = max_tokens
        self.model_thresholds = dict(model_thresholds or {})
        self.threshold_tokens_cap = threshold_tokens_cap
        self.proactive_prune_tokens = int(proactive_prune_tokens or 0)
        self.proactive_prune_min_result_chars = int(proactive_prune_min_result_chars)
        self.proactive_prune_min_reclaim_tokens = int(proactive_prune_min_reclaim_tokens)
        self.min_tail_user_messages = max(int(min_tail_user_messages), 1)
        self.tail_mode, self.custom_providers = tail_mode, custom_providers
        self.auxiliary = auxiliary  # anything with complete(messages, max_tokens=) -> result with .text
        self.last_summary_failure: str | None = None
        self._previous_summary: str | None = None
        # Hermes' context-length probe flags, kept for subclasses that read them (no probe runs here)
        self._context_probed = self._context_probe_persistable = False
        self._memory_context = ""
        self._last_compress_aborted = False
        self.tail_token_budget = self.max_summary_tokens = 0
        window = config_context_length or context_length or 128_000
        self.update_model(model, int(window))

    def __deepcopy__(self, memo: dict[int, Any]) -> ContextCompressor:
        """A copy for a new session; the summariser (the host's client) is shared, not copied."""
        if self.auxiliary is not None:
            memo[id(self.auxiliary)] = self.auxiliary
        clone = object.__new__(type(self))
        memo[id(self)] = clone
        for key, value in self.__dict__.items():
            clone.__dict__[key] = copy.deepcopy(value, memo)
        return clone

    @property
    def target_ratio(self) -> float:
        """`compression.target_ratio`: Hermes' `summary_target_ratio`."""
        return self.summary_target_ratio

    @target_ratio.setter
    def target_ratio(self, value: float) -> None:
        self.summary_target_ratio = float(value)

    # -- the host's calls ---------------------------------------------------------------------

    def bind_summariser(self, summariser: Any) -> None:
        """The host's summariser for this session (`auxiliary.compression`), given before `on_session_start`."""
        self.auxiliary = summariser

    def on_session_start(self, session_id: str, **kwargs: Any) -> None:
        if kwargs.get("auxiliary") is not None:
            self.auxiliary = kwargs["auxiliary"]
        super().on_session_start(session_id, **kwargs)

    def update_model(
        self, model: str, context_length: int, base_url: str = "", api_key: str = "", provider: str = "",
        api_mode: str = "", max_tokens: int | None = None,
    ) -> None:
        self.model = model or getattr(self, "model", "")
        if max_tokens is not None:
            self.max_tokens = max_tokens
        super().update_model(self.model, context_length, base_url, api_key, provider, api_mode)
        cap = self.threshold_tokens_cap
        if isinstance(cap, int) and not isinstance(cap, bool) and cap > 0:
            self.threshold_tokens = min(self.threshold_tokens, cap)
        self.tail_token_budget = int(self.threshold_tokens * self.summary_target_ratio)
        self.max_summary_tokens = max(256, min(4_096, int(self.context_length * self.summary_target_ratio / 4)))

    def on_session_reset(self) -> None:
        super().on_session_reset()
        self._previous_summary = self.last_summary_failure = None
        self._last_compress_aborted = self._context_probed = self._context_probe_persistable = False

    def has_content_to_compress(self, messages: list[dict[str, Any]]) -> bool:
        """Whether anything lies between the protected head and tail."""
        head_end = self._align_boundary_forward(messages, self._protect_head_size(messages))
        return head_end < self._find_tail_cut_by_tokens(messages, head_end)

    def compress(
        self,
        messages: list[dict[str, Any]],
        current_tokens: int | None = None,
        focus_topic: str | None = None,
        force: bool = False,
        memory_context: str = "",
    ) -> list[dict[str, Any]]:
        messages = list(messages)
        self._last_compress_aborted = False
        head_end = self._align_boundary_forward(messages, self._protect_head_size(messages))
        tail_start = self._find_tail_cut_by_tokens(messages, head_end)
        if head_end >= tail_start:
            return self._sanitize_tool_pairs(messages)
        self.compression_count += 1
        pruned, count = self._prune_old_tool_results(
            messages, protect_tail_count=len(messages) - tail_start, min_prune_chars=PRUNE_CHARS)
        target = int(self.context_length * self.summary_target_ratio)
        before = estimate_tokens(messages)
        remaining = max(current_tokens or 0, before) - (before - estimate_tokens(pruned))
        if count > 0 and 0 < target and remaining <= target:
            result = self._sanitize_tool_pairs(pruned)
        else:
            middle = pruned[head_end:tail_start]
            found = [str(m["content"]) for m in middle if _is_summary(m)]
            self._previous_summary = "\n".join(found) if found else None
            turns = [m for m in middle if not _is_summary(m)]
            self._memory_context = memory_context or ""
            body = self._generate_summary(turns, focus_topic=focus_topic)
            if body is None and self.abort_on_summary_failure:
                self.compression_count -= 1
                self._last_compress_aborted = True
                return self._sanitize_tool_pairs(messages)
            if body is None:
                body = self._build_static_fallback_summary(turns, reason=self.last_summary_failure)
            header = f"{SUMMARY_MARK}: {len(turns)} messages, compression pass {self.compression_count}]"
            summary = {"role": self._summary_role(pruned[:head_end], pruned[tail_start:]), "content": f"{header}\n{body}"}
            result = self._sanitize_tool_pairs([*pruned[:head_end], summary, *pruned[tail_start:]])
        self.last_prompt_tokens = estimate_tokens(result)
        return result

    def prune_tool_results_only(
        self, messages: list[dict[str, Any]], current_tokens: int | None = None
    ) -> tuple[list[dict[str, Any]], int]:
        """Hermes' proactive prune: off unless `proactive_prune_tokens` is set and reached; then
        old tool outputs over `proactive_prune_min_result_chars` go, if that saves at least
        `proactive_prune_min_reclaim_tokens`."""
        if self.proactive_prune_tokens <= 0 or (current_tokens is not None and current_tokens < self.proactive_prune_tokens):
            return messages, 0
        pruned, count = self._prune_old_tool_results(messages, self.protect_last_n,
                                                     min_prune_chars=self.proactive_prune_min_result_chars)
        if count <= 0 or estimate_tokens(messages) - estimate_tokens(pruned) < self.proactive_prune_min_reclaim_tokens:
            return messages, 0
        return pruned, count

    def get_status(self) -> dict[str, Any]:
        return {**super().get_status(), "last_summary_failure": self.last_summary_failure}

    # -- where to cut (override to change the boundaries) -----------------------------------------

    def _protect_head_size(self, messages: list[dict[str, Any]]) -> int:
        """The system prompt(s) and the first `protect_first_n` messages after them."""
        lead = 0
        while lead < len(messages) and messages[lead].get("role") == "system":
            lead += 1
        return min(len(messages), lead + max(self.protect_first_n, 0))

    def _align_boundary_forward(self, messages: list[dict[str, Any]], idx: int) -> int:
        """Move a head cut past tool results, so they stay with the call they answer."""
        while idx < len(messages) and messages[idx].get("role") == "tool":
            idx += 1
        return idx

    def _align_boundary_backward(self, messages: list[dict[str, Any]], idx: int) -> int:
        """Move a tail cut back to the assistant message whose tool results it would split off."""
        while 0 < idx < len(messages) and messages[idx].get("role") == "tool":
            idx -= 1
        return idx

    def _find_tail_cut_by_tokens(self, messages: list[dict[str, Any]], head_end: int,
                                 token_budget: int | None = None) -> int:
        """Where the kept tail starts: at least `protect_last_n` messages (grown while it fits
        `token_budget`, when one is given), with the latest user message(s) in it."""
        cut = max(len(messages) - max(self.protect_last_n, 0), 0)
        if token_budget:
            used = estimate_tokens(messages[cut:])
            while cut > head_end and used + estimate_tokens(messages[cut - 1:cut]) <= token_budget:
                cut -= 1
                used += estimate_tokens(messages[cut:cut + 1])
        cut = self._ensure_last_user_message_in_tail(messages, cut, head_end)
        return max(self._align_boundary_backward(messages, cut), head_end)

    def _find_last_user_message_idx(self, messages: list[dict[str, Any]], head_end: int) -> int:
        """The index of the last real user message at or after `head_end` (not a summary), or -1."""
        for index in range(len(messages) - 1, head_end - 1, -1):
            if messages[index].get("role") == "user" and not _is_summary(messages[index]):
                return index
        return -1

    def _ensure_last_user_message_in_tail(self, messages: list[dict[str, Any]], cut_idx: int, head_end: int) -> int:
        """`cut_idx` moved back so the last `min_tail_user_messages` user messages are in the tail."""
        index, end = cut_idx, len(messages)
        for _ in range(self.min_tail_user_messages):
            found = self._find_last_user_message_idx(messages[:end], head_end)
            if found < 0:
                break
            index, end = min(index, found), found
        return index

    def _prune_boundary(self, result: list[dict[str, Any]], protect_tail_count: int,
                        protect_tail_tokens: int | None = None) -> int:
        """Where the protected tail starts for pruning: the last `protect_tail_count` messages,
        or more while they fit `protect_tail_tokens`."""
        boundary = max(len(result) - max(protect_tail_count, 0), 0)
        if protect_tail_tokens:
            used = estimate_tokens(result[boundary:])
            while boundary > 0 and used + estimate_tokens(result[boundary - 1:boundary]) <= protect_tail_tokens:
                boundary -= 1
                used += estimate_tokens(result[boundary:boundary + 1])
        return boundary

    def _prune_old_tool_results(
        self, messages: list[dict[str, Any]], protect_tail_count: int, protect_tail_tokens: int | None = None,
        min_prune_chars: int = 200,
    ) -> tuple[list[dict[str, Any]], int]:
        """`(messages, count)`: tool outputs longer than `min_prune_chars` between the head and
        the protected tail replaced by a one-line placeholder. No LLM call."""
        result = [dict(m) for m in messages]
        start = self._align_boundary_forward(result, self._protect_head_size(result))
        end = self._prune_boundary(result, protect_tail_count, protect_tail_tokens)
        count = 0
        for index in range(start, end):
            content = result[index].get("content")
            if result[index].get("role") == "tool" and isinstance(content, str) and len(content) > min_prune_chars:
                result[index]["content"] = f"[old tool output removed by compression: {len(content):,} characters]"
                count += 1
        return result, count

    def _sanitize_tool_pairs(self, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Orphaned tool results removed; a call that lost its result gets a stub result."""
        return repair_tool_pairing(messages)

    @staticmethod
    def _summary_role(head: Sequence[Mapping[str, Any]], tail: Sequence[Mapping[str, Any]]) -> str:
        """A role for the summary that does not repeat its neighbours' (user when both would)."""
        before = head[-1].get("role") if head else None
        after = tail[0].get("role") if tail else None
        for role in ("user", "assistant"):
            if role != before and role != after:
                return role
        return "assistant" if before == "user" and after != "assistant" else "user"

    # -- summaries (override to summarise differently) ---------------------------------------------

    def _compute_summary_budget(self, turns_to_summarize: Sequence[Mapping[str, Any]]) -> int:
        """How many tokens the summary may take."""
        return self.max_summary_tokens or 256

    def _serialize_for_summary(self, turns: Sequence[Mapping[str, Any]]) -> str:
        """The turns as `[role] text` lines for the summariser: the newest first within the budget."""
        kept: list[str] = []
        size = 0
        for message in reversed(turns):
            line = _line(message, LINE_CHARS)
            if size + len(line) > SUMMARY_INPUT_CHARS:
                break
            kept.append(line)
            size += len(line) + 1
        kept.reverse()
        omitted = f"({len(turns) - len(kept)} older messages are not shown.)\n" if len(kept) < len(turns) else ""
        return omitted + "\n".join(kept)

    def _generate_summary(self, turns_to_summarize: list[dict[str, Any]], focus_topic: str | None = None) -> str | None:
        """A summary of the turns by the host's summariser, updating `_previous_summary`; None
        when it fails (the reason is in `last_summary_failure`)."""
        try:
            text = self._summarise(turns_to_summarize, focus_topic)
        except Exception as exc:  # noqa: BLE001 - the middle must never be lost
            reason = f"{type(exc).__name__}: {exc}"
            self.last_summary_failure = reason
            (log.debug if self.quiet_mode else log.warning)(
                "compression summary failed, using an extractive summary: %s", reason)
            return None
        self.last_summary_failure = None
        self._previous_summary = text
        return text

    def _summarise(self, turns: Sequence[Mapping[str, Any]], focus: str | None) -> str:
        if self.auxiliary is None:
            raise RuntimeError("no summariser is configured (the engine was given no auxiliary LLM)")
        parts = []
        if self._previous_summary:
            parts.append(f"The summary so far (update it with the new turns; keep what still matters):\n"
                         f"{self._previous_summary}")
        if focus:
            parts.append(f"Focus on: {focus}. Keep everything about it in full detail; be brief on the rest.")
        if self._memory_context:
            parts.append(f"Notes the agent's memory kept from these turns:\n{self._memory_context}")
        parts.append("The turns:\n" + self._serialize_for_summary(turns))
        result = self.auxiliary.complete(
            [{"role": "system", "content": PROMPT}, {"role": "user", "content": "\n\n".join(parts)}],
            max_tokens=self._compute_summary_budget(turns),
        )
        text = (getattr(result, "text", "") or "").strip()
        if not text:
            raise RuntimeError("the summariser returned an empty summary")
        return text

    def _build_static_fallback_summary(self, turns_to_summarize: Sequence[Mapping[str, Any]],
                                       reason: str | None = None) -> str:
        """A summary without an LLM: the previous summary and a line per message (the first and
        the latest ones when there are many), saying why."""
        turns, previous = turns_to_summarize, self._previous_summary or ""
        lines = [f"(The summariser failed — {reason or 'no reason given'} — so this summary was extracted "
                 "from the messages.)"]
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


CompressorEngine = ContextCompressor  # the name it had before it took Hermes' shape
