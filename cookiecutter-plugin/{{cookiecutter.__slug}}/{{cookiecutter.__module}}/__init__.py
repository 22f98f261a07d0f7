"""{{ cookiecutter.plugin_name }}: {{ cookiecutter.description }}"""

from __future__ import annotations

import json
{%- if cookiecutter.kind == "memory_provider" %}
import os
import tempfile
from pathlib import Path
{%- endif %}
from typing import Any
{% if cookiecutter.kind == "tool" %}
TOOL = "{{ cookiecutter.__name }}_count"
SCHEMA = {
    "name": TOOL,
    "description": "Count the words and characters of a text.",
    "parameters": {
        "type": "object",
        "properties": {"text": {"type": "string", "description": "The text to count."}},
        "required": ["text"],
        "additionalProperties": False,
    },
}


def count(args: dict[str, Any], **kwargs: Any) -> str:
    """The tool: its arguments were checked against SCHEMA before it runs."""
    text = args["text"]
    return json.dumps({"words": len(text.split()), "characters": len(text)})


def summarise(ctx: Any):
    """The command `/{{ cookiecutter.__slug }} TEXT`: a one-sentence summary from the operator's model."""

    def handler(raw_args: str) -> str:
        if not raw_args.strip():
            return "usage: /{{ cookiecutter.__slug }} TEXT"
        result = ctx.llm.complete(
            [
                {"role": "system", "content": "Summarise the user's text in one sentence."},
                {"role": "user", "content": raw_args},
            ],
            max_tokens=200,
            purpose="summary",
        )
        return result.text.strip()

    return handler


def register(ctx: Any) -> None:
    ctx.register_tool(TOOL, "{{ cookiecutter.__slug }}", SCHEMA, count, emoji="🔢")
    ctx.register_command("{{ cookiecutter.__slug }}", summarise(ctx), description="Summarise TEXT in one sentence",
                         args_hint="TEXT")
{%- elif cookiecutter.kind == "context_engine" %}
from hermes_core import ContextEngine, repair_tool_pairing, split_for_compression


class {{ cookiecutter.__class }}Engine(ContextEngine):
    """Keeps the first `keep_first` messages (the system prompt and the first question) and
    the last `keep_last`; the middle is dropped and a note says how much. Selected by
    `context.engine: {{ cookiecutter.__slug }}`."""

    name = "{{ cookiecutter.__slug }}"
    keep_first = 2
    keep_last = 20

    def update_from_response(self, usage: dict[str, Any]) -> None:
        self.last_prompt_tokens = int(usage.get("prompt_tokens") or usage.get("input_tokens") or 0)
        self.last_completion_tokens = int(usage.get("completion_tokens") or usage.get("output_tokens") or 0)
        self.last_total_tokens = int(usage.get("total_tokens") or self.last_prompt_tokens + self.last_completion_tokens)

    def should_compress(self, prompt_tokens: int | None = None) -> bool:
        tokens = self.last_prompt_tokens if prompt_tokens is None else prompt_tokens
        return self.threshold_tokens > 0 and tokens >= self.threshold_tokens

    def compress(self, messages: list[dict[str, Any]], current_tokens: int | None = None,
                 focus_topic: str | None = None) -> list[dict[str, Any]]:
        head_end, tail_start = split_for_compression(messages, self.keep_first, self.keep_last)
        if head_end >= tail_start:
            return list(messages)
        self.compression_count += 1
        note = {"role": "user", "content": f"[{tail_start - head_end} earlier messages were dropped to save room]"}
        return repair_tool_pairing([*messages[:head_end], note, *messages[tail_start:]])


def register(ctx: Any) -> None:
    ctx.register_context_engine({{ cookiecutter.__class }}Engine)
{%- elif cookiecutter.kind == "memory_provider" %}
from hermes_core import MemoryProvider

SCHEMAS = [
    {"name": "memory_save", "description": "Remember a fact for later conversations; returns its id.",
     "parameters": {"type": "object", "properties": {"content": {"type": "string", "minLength": 1}},
                    "required": ["content"], "additionalProperties": False}},
    {"name": "memory_search", "description": "Find saved facts containing the words of a query.",
     "parameters": {"type": "object", "properties": {"query": {"type": "string"},
                                                     "limit": {"type": "integer", "minimum": 1, "maximum": 50}},
                    "required": ["query"], "additionalProperties": False}},
    {"name": "memory_forget", "description": "Delete a saved fact by its id.",
     "parameters": {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"],
                    "additionalProperties": False}},
]


def _error(message: str) -> str:
    return json.dumps({"error": message})


class {{ cookiecutter.__class }}Memory(MemoryProvider):
    """Memories in a JSON file under $HERMES_HOME, searched by words. Selected by
    `memory.provider: {{ cookiecutter.__slug }}`."""

    name = "{{ cookiecutter.__slug }}"

    def __init__(self) -> None:
        self.path: Path | None = None
        self.items: dict[str, str] = {}
        self.next_id = 1

    def is_available(self) -> bool:
        return True  # nothing to check; never touch the network here

    def initialize(self, session_id: str, **kwargs: Any) -> None:
        home = Path(kwargs.get("hermes_home") or os.environ.get("HERMES_HOME") or Path.home() / ".hermes")
        self.path = home / "{{ cookiecutter.__slug }}-memories.json"
        if self.path.exists():
            data = json.loads(self.path.read_text(encoding="utf-8"))
            self.items, self.next_id = data["items"], data["next_id"]

    def get_tool_schemas(self) -> list[dict[str, Any]]:
        return SCHEMAS

    def handle_tool_call(self, name: str, args: dict[str, Any], **kwargs: Any) -> str:
        if name == "memory_save":
            content = args.get("content")
            if not isinstance(content, str) or not content.strip():
                return _error("'content' must be a non-empty string")
            memory_id = self.next_id
            self.items[str(memory_id)] = content
            self.next_id += 1
            self._write()
            return json.dumps({"id": memory_id})
        if name == "memory_search":
            query, limit = args.get("query"), args.get("limit", 5)
            if not isinstance(query, str) or not isinstance(limit, int):
                return _error("'query' must be a string and 'limit' an integer")
            found = self._search(query)[: max(limit, 0)]
            return json.dumps({"results": [{"id": int(i), "content": c} for i, c in found]})
        if name == "memory_forget":
            memory_id = args.get("id")
            if self.items.pop(str(memory_id), None) is None:
                return _error(f"no memory with id {memory_id!r}")
            self._write()
            return json.dumps({"id": memory_id, "forgotten": True})
        return _error(f"unknown tool {name!r}")

    def _search(self, query: str) -> list[tuple[str, str]]:
        """The memories containing the whole query first, then those sharing most of its words."""
        wanted = query.casefold()
        words = set(wanted.split())
        scored = []
        for memory_id, content in self.items.items():
            text = content.casefold()
            score = (wanted in text, len(words & set(text.split())))
            if score[0] or score[1]:
                scored.append((score, memory_id, content))
        scored.sort(key=lambda entry: entry[0], reverse=True)
        return [(memory_id, content) for _, memory_id, content in scored]

    def _write(self) -> None:
        """Write the file atomically: a crash never leaves it half-written."""
        assert self.path is not None, "initialize() first"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, temporary = tempfile.mkstemp(dir=self.path.parent, suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            json.dump({"items": self.items, "next_id": self.next_id}, file)
        os.replace(temporary, self.path)

    def system_prompt_block(self) -> str:
        return f"You have {len(self.items)} saved memories: use memory_search to look them up."

    def prefetch(self, query: str, *, session_id: str = "") -> str:
        found = self._search(query)[:3] if query.strip() else []
        return "\n".join(f"- {content}" for _, content in found)


def register(ctx: Any) -> None:
    ctx.register_memory_provider({{ cookiecutter.__class }}Memory)
{%- endif %}
