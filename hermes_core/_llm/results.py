"""What a `ctx.llm` call hands back: text, who answered, usage and cost, and the audit facts;
and the input blocks a structured call takes (Hermes' `PluginLlmTextInput`, `PluginLlmImageInput`)."""

from __future__ import annotations

import dataclasses
import types
from collections.abc import Mapping
from typing import Any, Union

import attrs

__all__ = [
    "PluginLlmCompleteResult",
    "PluginLlmImageInput",
    "PluginLlmInput",
    "PluginLlmStructuredResult",
    "PluginLlmTextInput",
    "PluginLlmUsage",
    "freeze",
]


@dataclasses.dataclass
class PluginLlmTextInput:
    """A text block of `complete_structured(input=[...])`; the same as `{"type": "text", "text": ...}`."""

    text: str
    type: str = "text"


@dataclasses.dataclass
class PluginLlmImageInput:
    """An image block of `complete_structured(input=[...])`: raw `data` (sent as a base64 `data:`
    URL with `mime_type`) or a `url`.

    >>> PluginLlmImageInput(data=png_bytes)                    # mime_type defaults to image/png
    >>> PluginLlmImageInput(url="https://example.com/cat.jpg")
    """

    data: bytes | None = None
    url: str | None = None
    mime_type: str = "image/png"
    file_name: str = ""
    type: str = "image"


PluginLlmInput = Union[PluginLlmTextInput, PluginLlmImageInput, dict[str, Any]]
"""One block of a structured call's input: one of the classes above, or a dict of the same shape."""


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
