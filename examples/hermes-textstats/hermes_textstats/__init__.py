"""Example hermes-core plugin: word, line and character counts of a text (the `text_stats` tool
and the `/wc` command), and a `post_tool_call` hook counting the agent's tool calls (`/toolstats`)."""

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

    def count_tool_call(tool_name: str, **_: Any) -> None:
        """After every tool call the agent makes: count it, in the plugin's durable ctx.state."""
        counts = dict(ctx.state.get("tool_calls", {}))
        counts[tool_name] = counts.get(tool_name, 0) + 1
        ctx.state["tool_calls"] = counts

    def toolstats(raw_args: str) -> str:
        counts = ctx.state.get("tool_calls", {})
        if not counts:
            return "no tool calls counted yet"
        return ", ".join(f"{name} {n}" for name, n in sorted(counts.items(), key=lambda item: (-item[1], item[0])))

    ctx.register_hook("post_tool_call", count_tool_call)
    ctx.register_command("toolstats", toolstats, description="How often each tool was called (a post_tool_call hook counts)")


@hookimpl
def register_command(ctx: Any) -> Command:
    def wc(raw_args: str) -> str:
        result = stats(raw_args, 0)
        return f"{result['words']} words, {result['lines']} lines, {result['characters']} characters"

    return Command("wc", wc, description="Count the words of the text after the command", args_hint="TEXT")
