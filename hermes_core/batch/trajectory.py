"""One finished conversation as training data: the OpenAI `messages`, Hermes' ShareGPT form, and
Hermes' tool statistics.

The ShareGPT form is the one Hermes Agent's batch runner writes, so pipelines that read its
trajectories read these: `conversations` of `{"from": "system" | "human" | "gpt" | "tool", "value"}`.
The system entry lists the offered tools between `<tools>` tags. Each assistant message becomes
one `gpt` entry: a `<think>` block (the reasoning, when there was any, else empty), its text,
and each tool call as `<tool_call>{"name", "arguments"}</tool_call>`. The results of one round of
calls become one `tool` entry of `<tool_response>{"tool_call_id", "name", "content"}</tool_response>`
blocks.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

__all__ = ["failed", "sharegpt", "tool_stats"]


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts: the text ones, an image as a placeholder
        return "\n".join(part.get("text", "") if part.get("type") == "text" else "[image]"
                         for part in content if isinstance(part, Mapping))
    return "" if content is None else str(content)


def _arguments(raw: Any) -> Any:
    if isinstance(raw, str):
        try:
            return json.loads(raw) if raw.strip() else {}
        except ValueError:
            return {}
    return raw if raw is not None else {}


def _system(prompt: str, tools: Iterable[Mapping[str, Any]]) -> str:
    listed = [{"name": t["function"]["name"], "description": t["function"].get("description", ""),
               "parameters": t["function"].get("parameters", {})} for t in tools]
    if not listed:
        return prompt
    return (f"{prompt}\n\nYou can call these tools. Put each call in <tool_call></tool_call> tags as a JSON object "
            f"with its \"name\" and \"arguments\":\n<tools>\n{json.dumps(listed, ensure_ascii=False)}\n</tools>")


def _gpt(message: Mapping[str, Any]) -> str:
    reasoning = message.get("reasoning") or message.get("reasoning_content") or ""
    parts = [f"<think>\n{reasoning}\n</think>" if reasoning else "<think>\n</think>"]
    text = _text(message.get("content")).strip()
    if text:
        parts.append(text)
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {}
        body = {"name": function.get("name", ""), "arguments": _arguments(function.get("arguments"))}
        parts.append(f"<tool_call>\n{json.dumps(body, ensure_ascii=False)}\n</tool_call>")
    return "\n".join(parts)


def _response(message: Mapping[str, Any], name: str) -> str:
    content: Any = _text(message.get("content"))
    if content.lstrip().startswith(("{", "[")):
        try:
            content = json.loads(content)
        except ValueError:
            pass
    body = {"tool_call_id": message.get("tool_call_id", ""), "name": name, "content": content}
    return f"<tool_response>\n{json.dumps(body, ensure_ascii=False)}\n</tool_response>"


def sharegpt(messages: Sequence[Mapping[str, Any]], tools: Iterable[Mapping[str, Any]]) -> list[dict[str, str]]:
    """`messages` (the system message first) in Hermes' ShareGPT form, `tools` listed in the system entry."""
    entries: list[dict[str, str]] = []
    names: dict[str, str] = {}
    for message in messages:
        role = message.get("role")
        if role == "system":
            entries.append({"from": "system", "value": _system(_text(message.get("content")), tools)})
        elif role == "user":
            entries.append({"from": "human", "value": _text(message.get("content"))})
        elif role == "assistant":
            for call in message.get("tool_calls") or []:
                names[str(call.get("id", ""))] = str((call.get("function") or {}).get("name", ""))
            entries.append({"from": "gpt", "value": _gpt(message)})
        elif role == "tool":
            block = _response(message, names.get(str(message.get("tool_call_id", "")), "unknown"))
            if entries and entries[-1]["from"] == "tool":  # one round's results: one entry
                entries[-1]["value"] += "\n" + block
            else:
                entries.append({"from": "tool", "value": block})
    return entries


def failed(result: str) -> bool:
    """Whether a tool's result is a failure, as Hermes counts them: a JSON object with an `error`
    (or whose `content` has one) or `"success": false`; a text that is empty or starts `error:`."""
    try:
        value = json.loads(result)
    except ValueError:
        return not result.strip() or result.strip().lower().startswith("error:")
    if not isinstance(value, dict):
        return False
    content = value.get("content")
    return (value.get("error") is not None or value.get("success") is False
            or isinstance(content, dict) and content.get("error") is not None)


def tool_stats(messages: Sequence[Mapping[str, Any]], offered: Iterable[str]) -> dict[str, dict[str, int]]:
    """`{tool: {"count", "success", "failure"}}` over `messages`: every offered tool (0 when unused),
    and any other the model called."""
    stats = {name: {"count": 0, "success": 0, "failure": 0} for name in offered}
    names: dict[str, str] = {}
    for message in messages:
        for call in message.get("tool_calls") or [] if message.get("role") == "assistant" else []:
            name = str((call.get("function") or {}).get("name", ""))
            names[str(call.get("id", ""))] = name
            stats.setdefault(name, {"count": 0, "success": 0, "failure": 0})["count"] += 1
        if message.get("role") == "tool":
            called = names.get(str(message.get("tool_call_id", "")))
            if called is not None:
                stats[called]["failure" if failed(_text(message.get("content"))) else "success"] += 1
    return stats
