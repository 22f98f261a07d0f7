"""What the built-in context engines share: token counters from `usage`, the threshold test,
and reading their settings from config when a session starts."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hermes_core import ContextEngine

__all__ = ["ThresholdEngine", "tokens"]


def tokens(value: Any) -> int:
    """A token count from a usage dict: a positive number, else 0."""
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0 else 0


class ThresholdEngine(ContextEngine):
    """Compress once the prompt reaches `threshold_percent` of the context window.

    `settings` names the config section (`compression`, `lcm`) whose numeric keys of the
    same names as the instance's attributes override them when a session starts.
    """

    settings = ""
    numbers: tuple[str, ...] = ("threshold", "protect_first_n", "protect_last_n")
    protect_first_n = 3
    protect_last_n = 20

    @property
    def threshold(self) -> float:
        return self.threshold_percent

    @threshold.setter
    def threshold(self, value: float) -> None:
        self.threshold_percent = float(value)

    def on_session_start(self, session_id: str, **kwargs: Any) -> None:
        config = kwargs.get("config")
        if config is not None and self.settings:
            for key in self.numbers:
                value = config.number(f"{self.settings}.{key}", getattr(self, key))
                setattr(self, key, int(value) if key.startswith("protect_") else value)
        self.update_model(str(kwargs.get("model") or ""), int(kwargs.get("context_length") or self.context_length))

    def update_from_response(self, usage: Mapping[str, Any]) -> None:
        usage = usage if isinstance(usage, Mapping) else {}
        prompt = tokens(usage.get("prompt_tokens", usage.get("input_tokens")))
        completion = tokens(usage.get("completion_tokens", usage.get("output_tokens")))
        self.last_prompt_tokens, self.last_completion_tokens = prompt, completion
        self.last_total_tokens = tokens(usage.get("total_tokens")) or prompt + completion

    def should_compress(self, prompt_tokens: int | None = None) -> bool:
        count = self.last_prompt_tokens if prompt_tokens is None else tokens(prompt_tokens)
        return self.threshold_tokens > 0 and count >= self.threshold_tokens
