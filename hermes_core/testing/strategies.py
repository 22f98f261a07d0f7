"""Hypothesis strategies for testing plugins: texts that break naive search, JSON tool
arguments, and (for context engines) valid OpenAI message lists and usage dicts.

>>> from hypothesis import given
>>> from hermes_core.testing import strategies as hs
>>> @given(hs.memory_texts())
... def test_saving_any_text(text): ...
"""

from __future__ import annotations

import json
from typing import Any

from . import _hypothesis  # noqa: F401 - first: a clear error when hypothesis is missing

# isort: split
from hypothesis import strategies as st

__all__ = [
    "json_values", "memory_texts", "message_lists", "search_queries", "tool_arguments", "tool_schemas", "usage_dicts",
]

# Fragments that are syntax to a full-text engine or a shell, and text that tokenizers split oddly.
TRICKY_FRAGMENTS = (
    '"', "'", '""', "*", "^", ":", "-", "+", "(", ")", "{", "}", "[", "]", "AND", "OR", "NOT", "NEAR",
    "NEAR(", "content:", "tags:", "\\", "%", "_", ";", "--", "/*", "\x00", "naïve café", "Ünïcödé", "中文测试",
    "日本語", "😀🎉", "👩‍👩‍👧", "\u0301", "\u200b", "\t", "\n", "e\u0301", "ǅ", "ß", "İ", "%s", "{}", "null",
)


def memory_texts(*, max_size: int = 200) -> st.SearchStrategy[str]:
    """Text a user might ask to remember, biased towards what breaks search engines: FTS5
    operators, quotes, unicode (combining marks, emoji, CJK), control characters, NULs.
    Never blank (a memory has content)."""
    word = st.one_of(
        st.sampled_from(TRICKY_FRAGMENTS),
        st.text(st.characters(codec="utf-8"), min_size=1, max_size=12),
        st.from_regex(r"[A-Za-z]{1,10}", fullmatch=True),
    )
    return st.one_of(
        st.lists(word, min_size=1, max_size=12).map(" ".join),
        st.lists(word, min_size=1, max_size=6).map("".join),
        st.text(st.characters(codec="utf-8"), min_size=1, max_size=max_size),
    ).filter(lambda text: bool(text.strip()) and len(text) <= max_size)


def search_queries() -> st.SearchStrategy[str]:
    """Any text as a search query, blank ones included."""
    return st.one_of(memory_texts(), st.text(st.characters(codec="utf-8"), max_size=50), st.just(""), st.just("   "))


def json_values(*, max_leaves: int = 8) -> st.SearchStrategy[Any]:
    """Any JSON value (what a model may send as an argument)."""
    leaves = st.one_of(
        st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False, allow_infinity=False),
        st.text(st.characters(codec="utf-8"), max_size=30),
    )
    return st.recursive(
        leaves,
        lambda inner: st.one_of(
            st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=10), inner, max_size=3)
        ),
        max_leaves=max_leaves,
    )


def tool_arguments(schema: dict[str, Any] | None = None, *, strict: bool = False) -> st.SearchStrategy[dict[str, Any]]:
    """Argument objects for a tool, as a host sends them: objects valid against the schema's
    `parameters` (hermes-core validates arguments before any handler runs), any object for a
    schema without them. With `strict`, near-misses too: any object, and objects using the
    parameters' names with values of any type — what a host that does not validate (Hermes
    Agent) can send. Raises `SchemaNotSupported` for parameters beyond what can be generated."""
    from ._schema_values import valid_values

    parameters = (schema or {}).get("parameters") or {"type": "object"}
    valid = valid_values(parameters)
    if not strict:
        return valid
    names = list(parameters.get("properties") or {}) if isinstance(parameters, dict) else []
    keys = st.one_of(st.sampled_from(names), st.text(max_size=10)) if names else st.text(max_size=10)
    return st.one_of(valid, st.dictionaries(keys, json_values(), max_size=4))


# -- conversations --------------------------------------------------------------------------------

_TEXT = st.text(st.characters(codec="utf-8"), max_size=40)
_NAMES = st.from_regex(r"[a-z][a-z0-9_]{0,15}", fullmatch=True)


# Built once: hypothesis validates every new strategy object, and a conversation draws hundreds.
_LONG_TEXT = st.builds(lambda word, n: (word + " ") * n, st.sampled_from(["lorem", "data", "日本語", "ok"]),
                       st.integers(200, 1_500))  # a pasted file, a big tool output, without drawing each character
_CONTENT = st.one_of(_TEXT, _TEXT, _TEXT, _LONG_TEXT)
_IMAGE = st.fixed_dictionaries({"type": st.just("image_url"), "image_url": st.fixed_dictionaries(
    {"url": st.sampled_from(["data:image/png;base64,iVBORw0KGgo=", "https://example.com/cat.png"])})})
_USER_MESSAGE = st.fixed_dictionaries({"role": st.just("user"), "content": st.one_of(
    _CONTENT, _CONTENT, st.lists(st.one_of(st.fixed_dictionaries({"type": st.just("text"), "text": _TEXT}), _IMAGE),
                                 min_size=1, max_size=3))})
_ARGUMENTS = st.dictionaries(_NAMES, st.one_of(st.integers(), _TEXT), max_size=2)
_MAYBE_TEXT = st.one_of(st.none(), _TEXT)
_CALLS = st.integers(1, 3)


@st.composite
def _assistant_turn(draw: st.DrawFn, counter: list[int]) -> list[dict[str, Any]]:
    """An assistant reply: text, or 1-3 tool calls followed by their results (and maybe text)."""
    if draw(st.booleans()):
        return [{"role": "assistant", "content": draw(_CONTENT)}]
    calls = []
    for _ in range(draw(_CALLS)):
        counter[0] += 1
        calls.append({"id": f"call_{counter[0]}", "type": "function",
                      "function": {"name": draw(_NAMES), "arguments": json.dumps(draw(_ARGUMENTS))}})
    turn: list[dict[str, Any]] = [{"role": "assistant", "content": draw(_MAYBE_TEXT), "tool_calls": calls}]
    turn += [{"role": "tool", "tool_call_id": c["id"], "content": draw(_CONTENT)} for c in calls]
    if draw(st.booleans()):
        turn.append({"role": "assistant", "content": draw(_TEXT)})
    return turn


@st.composite
def message_lists(draw: st.DrawFn, *, min_turns: int = 1, max_turns: int = 24) -> list[dict[str, Any]]:
    """A valid OpenAI message list (SPEC §8): an optional system prompt, then turns of a user
    message (text or multimodal parts) and an assistant reply (text, or several tool calls
    with their results). Contents are sometimes long. Always has a user message."""
    messages: list[dict[str, Any]] = []
    if draw(st.booleans()):
        messages.append({"role": "system", "content": draw(_TEXT)})
    counter = [0]
    for _ in range(draw(st.integers(min_turns, max_turns))):
        messages.append(draw(_USER_MESSAGE))
        if draw(st.integers(0, 9)):  # mostly answered; the last turn may await its reply
            messages += draw(_assistant_turn(counter))
    return messages


def usage_dicts() -> st.SearchStrategy[dict[str, Any]]:
    """`usage` as providers send it: OpenAI's names (sometimes with cached-token details),
    Anthropic's `input_tokens`/`output_tokens`, or a partial dict."""
    count = st.integers(0, 2_000_000)
    openai = st.builds(
        lambda p, c, cached: {"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c,
                              **({"prompt_tokens_details": {"cached_tokens": min(cached, p)}} if cached else {})},
        count, count, st.integers(0, 1_000))
    anthropic = st.builds(lambda p, c: {"input_tokens": p, "output_tokens": c}, count, count)
    partial = st.dictionaries(st.sampled_from(["prompt_tokens", "completion_tokens", "total_tokens"]), count)
    return st.one_of(openai, anthropic, partial)


def tool_schemas() -> st.SearchStrategy[dict[str, Any]]:
    """Valid OpenAI function objects with small JSON Schemas for their parameters."""
    kinds = st.sampled_from([{"type": "string"}, {"type": "integer"}, {"type": "number"}, {"type": "boolean"},
                             {"type": "array", "items": {"type": "string"}}])
    return st.builds(
        lambda name, description, properties, required: {
            "name": name, "description": description,
            "parameters": {"type": "object", "properties": properties,
                           "required": sorted(set(required) & set(properties))}},
        _NAMES, _TEXT, st.dictionaries(_NAMES, kinds, max_size=4), st.lists(_NAMES, max_size=2))
