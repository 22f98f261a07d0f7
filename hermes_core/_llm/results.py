"""What a `ctx.llm` call hands back: text, who answered, usage and cost, and the audit facts."""

from __future__ import annotations

import types
from collections.abc import Mapping
from typing import Any

import attrs

__all__ = ["PluginLlmCompleteResult", "PluginLlmStructuredResult", "PluginLlmUsage", "freeze"]


def freeze(value: Any) -> Any:
    """A read-only deep view: mappings become `MappingProxyType`, lists become tuples (a result's
    `audit`, a plugin's `ctx.config`)."""
    if isinstance(value, Mapping):
        return types.MappingProxyType({str(k): freeze(v) for k, v in value.items()})
    if isinstance(value, (list, tuple)):
        return tuple(freeze(v) for v in value)
    return value


@attrs.frozen
class PluginLlmUsage:
    """Token counts as the provider reported them; `cost_usd` is None when unknown."""

    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost_usd: float | None = None


@attrs.frozen
class PluginLlmCompleteResult:
    """The answer of `complete()`: `provider` and `model` are the ones that actually answered
    (after any fallback); `audit` holds `plugin_id`, `purpose` and `profile`."""

    text: str
    provider: str
    model: str
    agent_id: str
    usage: PluginLlmUsage
    audit: Mapping[str, Any] = attrs.field(converter=freeze)


@attrs.frozen
class PluginLlmStructuredResult(PluginLlmCompleteResult):
    """The answer of `complete_structured()`: `parsed` is the JSON value when
    `content_type == "json"`, else None and `text` is the raw reply."""

    parsed: Any = None
    content_type: str = "text"
