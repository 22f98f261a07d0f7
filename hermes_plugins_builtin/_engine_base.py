"""What the built-in context engines share: token counters from `usage`, the threshold test,
and reading their settings from config when a session starts."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hermes_core import ContextEngine, config_keys

__all__ = ["ThresholdEngine", "tokens"]


def tokens(value: Any) -> int:
    """A token count from a usage dict: a positive number, else 0."""
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0 else 0


class ThresholdEngine(ContextEngine):
    """Compress once the prompt reaches `threshold_percent` of the context window.

    `settings` are the engine's config keys (`compression.*`, `lcm.*` in `config_keys`, where
    their defaults are): when the host starts a session, each sets the attribute named like
    the key's last part.
    """

    settings: tuple[config_keys.Key[Any], ...] = ()

    @property
    def threshold(self) -> float:
        return self.threshold_percent

    @threshold.setter
    def threshold(self, value: float) -> None:
        self.threshold_percent = self._config_threshold_percent = float(value)

    def on_session_start(self, session_id: str, **kwargs: Any) -> None:
        config = kwargs.get("config")
        if config is not None:
            for key in self.settings:
                setattr(self, key.parts[-1], config.read(key))
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
