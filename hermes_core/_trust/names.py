"""Typo-squatted names: a distribution named one typing slip away from a published Hermes plugin
or a package every plugin leans on (`hermes-plugn-guard`, `reqeusts`)."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

__all__ = ["canonical", "known_names", "squatted"]

# Packages that plugins depend on most and that squatters copy most.
POPULAR = ("requests", "httpx", "aiohttp", "urllib3", "openai", "anthropic", "pydantic", "numpy", "pyyaml", "click",
           "rich", "typer", "fastapi", "uvicorn", "starlette", "python-dotenv", "beautifulsoup4", "lxml", "pillow",
           "boto3", "cryptography", "pluggy", "attrs", "jinja2", "setuptools", "colorama", "tqdm", "websockets",
           "hermes-core", "hermes-agent", "mcp", "tiktoken", "langchain", "litellm", "playwright", "selenium")


def canonical(name: str) -> str:
    """A distribution name as PEP 503 compares them."""
    return re.sub(r"[-_.]+", "-", name).lower()


@cache
def known_names() -> frozenset[str]:
    """Published Hermes plugins (from the package index's list) and the popular packages above."""
    text = Path(__file__).with_name("known_plugins.txt").read_text(encoding="utf-8")
    return frozenset(canonical(n) for n in [*text.split(), *POPULAR])


def _distance(a: str, b: str, limit: int) -> int:
    """Damerau-Levenshtein distance (adjacent swaps count one), or `limit + 1` once above `limit`."""
    if abs(len(a) - len(b)) > limit:
        return limit + 1
    prev2: list[int] = []
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        row = [i] + [0] * len(b)
        for j, cb in enumerate(b, 1):
            row[j] = min(prev[j] + 1, row[j - 1] + 1, prev[j - 1] + (ca != cb))
            if i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                row[j] = min(row[j], prev2[j - 2] + 1)
        if min(row) > limit:
            return limit + 1
        prev2, prev = prev, row
    return prev[-1]


def squatted(name: str) -> str | None:
    """The known name that `name` imitates (one edit away, or the same once separators are dropped),
    None when it imitates none or is itself known."""
    name = canonical(name)
    known = known_names()
    if name in known or len(name) < 5:
        return None
    bare = name.replace("-", "")
    for other in sorted(known):
        if other.replace("-", "") == bare or _distance(name, other, 1) <= 1:
            return other
    return None
