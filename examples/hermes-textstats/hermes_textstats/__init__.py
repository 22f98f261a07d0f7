"""Example hermes-core plugin: word, line and character counts of a text."""

from __future__ import annotations

import json
import re
from collections import Counter
from typing import Any

from hermes_core import Command, hookimpl

SCHEMA = {
    "name": "text_stats",
    "description": "Count the words, lines and characters of a text and report its most frequent words.",
    "parameters": {
        "type": "object",
        "properties": {
            "text": {"type": "string", "description": "The text to measure."},
            "top": {"type": "integer", "minimum": 0, "maximum": 50, "description": "How many frequent words."},
        },
        "required": ["text"],
        "additionalProperties": False,
    },
}

_WORD = re.compile(r"[\w']+")


def stats(text: str, top: int) -> dict[str, Any]:
    words = [w.lower() for w in _WORD.findall(text)]
    return {
        "words": len(words),
        "lines": len(text.splitlines()),
        "characters": len(text),
        "top_words": [[word, count] for word, count in Counter(words).most_common(top)],
    }


def register(ctx: Any) -> None:
    default_top = int(ctx.config.get("top", 3))

    def text_stats(args: dict[str, Any], **_: Any) -> str:
        return json.dumps(stats(args["text"], args.get("top", default_top)))

    ctx.register_tool("text_stats", "textstats", SCHEMA, text_stats, emoji="📊")


@hookimpl
def register_command(ctx: Any) -> Command:
    def wc(raw_args: str) -> str:
        result = stats(raw_args, 0)
        return f"{result['words']} words, {result['lines']} lines, {result['characters']} characters"

    return Command("wc", wc, description="Count the words of the text after the command", args_hint="TEXT")
