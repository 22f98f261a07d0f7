"""Hypothesis strategies for testing plugins: texts that break naive search, JSON tool
arguments, and (for context engines) valid OpenAI message lists and usage dicts.

>>> from hypothesis import given
>>> from hermes_core.testing import strategies as hs
>>> @given(hs.memory_texts())
... def test_saving_any_text(text): ...
"""

from __future__ import annotations

from typing import Any

from . import _kit  # noqa: F401 - first: a clear error when hypothesis is missing

# isort: split
from hypothesis import strategies as st

__all__ = ["json_values", "memory_texts", "search_queries", "tool_arguments"]

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


def tool_arguments(schema: dict[str, Any] | None = None) -> st.SearchStrategy[dict[str, Any]]:
    """Argument objects for a tool: any JSON object, mixed with objects that use the names of
    the schema's `properties` (with values of any type), so handlers see near-misses too."""
    names = list(((schema or {}).get("parameters") or {}).get("properties") or {})
    keys = st.one_of(st.sampled_from(names), st.text(max_size=10)) if names else st.text(max_size=10)
    return st.dictionaries(keys, json_values(), max_size=4)
