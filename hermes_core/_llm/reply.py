"""Reading a chat completion: the text, who answered, token usage and cost.

The host reads the response body as plain JSON: it needs three fields, not the SDK's typed
model (whose construction costs more than everything else `ctx.llm` does per call).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import attrs

from .results import PluginLlmUsage

__all__ = ["LlmAnswer", "answer_of", "usage_of"]


@attrs.define
class LlmAnswer:
    """What came back, as plain data: the reply text, the tool calls (OpenAI format, as the model
    sent them), who gave it, its token usage and why the model stopped (`finish_reason`).
    `api_request_id` names the agent's request in its hooks (`""` outside a turn)."""

    text: str
    provider: str
    model: str
    agent_id: str
    usage: PluginLlmUsage
    tool_calls: list[dict[str, Any]] = attrs.field(factory=list)
    finish_reason: str | None = None
    api_request_id: str = ""


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def _price(pricing: Mapping[str, Any], *models: str) -> Mapping[str, Any] | None:
    wanted = {m.casefold() for m in models}
    for name, entry in pricing.items():
        if str(name).casefold() in wanted and isinstance(entry, Mapping):
            return entry
    return None


def answer_of(body: bytes, provider: str, model: str, agent_id: str, pricing: Mapping[str, Any]) -> LlmAnswer:
    """The answer in a chat completion's JSON body; `ValueError` when the body is not one
    (a malformed response, which the host treats like a 5xx)."""
    data = json.loads(body)
    choices = data.get("choices") if isinstance(data, dict) else None
    choice = choices[0] if isinstance(choices, list) and choices and isinstance(choices[0], dict) else {}
    message = choice.get("message")
    if not isinstance(message, dict):
        raise ValueError("the response has no choices[0].message")
    text = message.get("content")
    served = data.get("model")
    served = served if isinstance(served, str) and served else model
    calls = message.get("tool_calls")
    calls = [c for c in calls if isinstance(c, dict)] if isinstance(calls, list) else []
    finish_reason = choice.get("finish_reason")
    return LlmAnswer(text if isinstance(text, str) else "", provider, served, agent_id,
                     usage_of(data.get("usage"), pricing, served, model), calls,
                     finish_reason if isinstance(finish_reason, str) else None)


def _count(value: Any) -> int:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0 else 0


def _priced(price: Mapping[str, Any], fresh: int, output: int, cache_read: int, cache_write: int) -> float | None:
    """USD for the tokens at `price` (per million); cached tokens at the input rate unless priced."""
    rate_in, rate_out = _number(price.get("input")), _number(price.get("output"))
    if rate_in is None or rate_out is None:
        return None
    rate_read = _number(price.get("cache_read"))
    rate_write = _number(price.get("cache_write"))
    return (fresh * rate_in + output * rate_out + cache_read * (rate_in if rate_read is None else rate_read)
            + cache_write * (rate_in if rate_write is None else rate_write)) / 1_000_000


def usage_of(usage: Any, pricing: Mapping[str, Any], *models: str) -> PluginLlmUsage:
    """Token counts and cost from a completion's `usage` object: the provider's own `cost`
    (OpenRouter reports one) when present, else the price table (USD per million tokens),
    else None. Cache counts are read in the OpenAI and the Anthropic spellings."""
    if not isinstance(usage, Mapping):
        return PluginLlmUsage()
    details = usage.get("prompt_tokens_details")
    details = details if isinstance(details, Mapping) else {}
    input_tokens = _count(usage.get("prompt_tokens"))
    output_tokens = _count(usage.get("completion_tokens"))
    total = _count(usage.get("total_tokens")) or input_tokens + output_tokens
    cache_read = _count(details.get("cached_tokens")) or _count(usage.get("cache_read_input_tokens"))
    cache_write = _count(details.get("cache_write_tokens")) or _count(usage.get("cache_creation_input_tokens"))
    cost = _number(usage.get("cost"))
    price = _price(pricing, *models) if cost is None and pricing else None
    if price is not None:
        cost = _priced(price, max(0, input_tokens - cache_read - cache_write), output_tokens, cache_read, cache_write)
    return PluginLlmUsage(input_tokens, output_tokens, total, cache_read, cache_write, cost)
