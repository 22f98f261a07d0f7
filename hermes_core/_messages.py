"""OpenAI-format message lists: what "valid" means (SPEC §8), repairing tool pairing, a cheap
token estimate, and where a list can be cut without splitting a tool call from its results.

Every engine, the session and the contract kit use these, so "valid" has one definition.
`storable_json` and `storable_text` put a model's or a tool's text where UTF-8 is required (a
file, SQLite, the wire), whatever it holds: `json.loads` gives strings with lone surrogates.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = [
    "ROLES", "Message", "Messages", "estimate_tokens", "message_problems", "message_text", "repair_tool_pairing",
    "split_for_compression", "storable_json", "storable_text", "utf8_encodable",
]

# One OpenAI-format chat message (`{"role": ..., "content": ...}`, and `tool_calls` / `tool_call_id`),
# and a conversation of them: what every signature that takes or returns messages says.
Message = dict[str, Any]
Messages = list[Message]

ROLES = frozenset({"system", "user", "assistant", "tool"})
# The result given to a tool call left unanswered: the turn was stopped (Ctrl-C, its caller), the
# process died, or compression dropped the result.
STUB_RESULT = '{"error": "no result: the turn ended before this tool answered, or its result was dropped"}'


_SURROGATE = re.compile("[\ud800-\udfff]")


def utf8_encodable(text: str) -> bool:
    """Whether `text` can be written as UTF-8 (it holds no lone surrogate such as "\\ud800")."""
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def storable_json(value: Any, **options: Any) -> str:
    """`value` as compact-where-asked JSON (`options` go to `json.dumps`) that UTF-8 can take: its
    text as it is, or, when it holds a lone surrogate, with every non-ASCII character escaped (it
    reads back exactly the same).

    >>> storable_json({"text": "half \\ud800"})
    '{"text": "half \\\\ud800"}'
    """
    text = json.dumps(value, ensure_ascii=False, **options)
    return text if utf8_encodable(text) else json.dumps(value, ensure_ascii=True, **options)


def storable_text(text: Any) -> Any:
    """`text` for a plain text column or line: a lone surrogate replaced by U+FFFD (anything that
    is not a string as it is)."""
    if not isinstance(text, str) or utf8_encodable(text):
        return text
    return _SURROGATE.sub("\ufffd", text)


def _call_ids(message: Mapping[str, Any]) -> list[Any]:
    calls = message.get("tool_calls") or []
    return [c.get("id") for c in calls if isinstance(c, Mapping)] if isinstance(calls, list) else []


def message_problems(messages: Any) -> list[str]:
    """Why `messages` is not a valid list (empty when it is): roles are system/user/assistant/
    tool; every tool message answers a `tool_calls` id of an earlier assistant message, once;
    every assistant tool call has its result."""
    if not isinstance(messages, list):
        return [f"not a list but {type(messages).__name__}"]
    problems: list[str] = []
    open_calls: dict[str, int] = {}
    answered: set[str] = set()
    for index, message in enumerate(messages):
        if not isinstance(message, Mapping):
            problems.append(f"[{index}] is not a dict but {type(message).__name__}")
            continue
        role = message.get("role")
        if role not in ROLES:
            problems.append(f"[{index}] has role {role!r}")
        elif role == "assistant":
            for call_id in _call_ids(message):
                if not isinstance(call_id, str) or not call_id:
                    problems.append(f"[{index}] has a tool call without an id")
                elif call_id in open_calls or call_id in answered:
                    problems.append(f"[{index}] repeats tool call id {call_id!r}")
                else:
                    open_calls[call_id] = index
        elif role == "tool":
            answers = message.get("tool_call_id")
            if answers in answered:
                problems.append(f"[{index}] answers tool call {answers!r} a second time")
            elif answers not in open_calls:
                problems.append(f"[{index}] is a tool result for {answers!r}, which no earlier assistant message called")
            else:
                del open_calls[answers]
                answered.add(answers)
    problems += [f"[{index}] tool call {call_id!r} has no result" for call_id, index in open_calls.items()]
    return problems


def repair_tool_pairing(messages: Sequence[Mapping[str, Any]]) -> Messages:
    """Drop tool results that answer no earlier call (or answer one twice), and add a stub
    result right after the results of an assistant message whose call lost its result."""
    out: Messages = []
    pending: list[str] = []  # calls of the latest assistant message still unanswered
    called: set[str] = set()
    answered: set[str] = set()

    def close_pending() -> None:
        for call_id in pending:
            out.append({"role": "tool", "tool_call_id": call_id, "content": STUB_RESULT})
            answered.add(call_id)
        pending.clear()

    for message in messages:
        role = message.get("role")
        if role == "tool":
            call_id = message.get("tool_call_id")
            if call_id in called and call_id not in answered:
                answered.add(call_id)
                if call_id in pending:
                    pending.remove(call_id)
                out.append(dict(message))
            continue
        close_pending()
        message = dict(message)
        if role == "assistant" and message.get("tool_calls"):
            ids = [i for i in _call_ids(message) if isinstance(i, str) and i and i not in called]
            calls = [c for c in message["tool_calls"] if isinstance(c, Mapping) and c.get("id") in ids]
            if calls:
                message["tool_calls"] = calls
            else:
                message.pop("tool_calls")
            called.update(ids)
            pending.extend(ids)
        out.append(message)
    close_pending()
    return out


def message_text(message: Mapping[str, Any]) -> str:
    """The readable text of a message: its content (text parts of a multimodal one) and the
    names and arguments of its tool calls."""
    content = message.get("content")
    if isinstance(content, str):
        text = content
    elif isinstance(content, list):
        text = " ".join(str(p.get("text", "")) for p in content if isinstance(p, Mapping) and p.get("type") == "text")
    else:
        text = ""
    calls = message.get("tool_calls")
    if isinstance(calls, list):
        for call in calls:
            function = call.get("function") if isinstance(call, Mapping) else None
            if isinstance(function, Mapping):
                text += f" {function.get('name', '')}({function.get('arguments', '')})"
    return text


def _chars(message: Mapping[str, Any]) -> int:
    content = message.get("content")
    size = 0
    if isinstance(content, str):
        size = len(content)
    elif isinstance(content, list):
        for part in content:
            if isinstance(part, Mapping):
                size += len(part.get("text") or "") if part.get("type") == "text" else 3_000  # an image ~ 765 tokens
    calls = message.get("tool_calls")
    if isinstance(calls, list):
        for call in calls:
            function = call.get("function") if isinstance(call, Mapping) else None
            if isinstance(function, Mapping):
                arguments = function.get("arguments")
                size += len(str(function.get("name", ""))) + (
                    len(arguments) if isinstance(arguments, str) else len(json.dumps(arguments, default=str)))
    return size


def estimate_tokens(messages: Sequence[Mapping[str, Any]]) -> int:
    """A cheap estimate of the prompt tokens of `messages`: ~4 characters a token, plus a few
    tokens of framing per message. Linear, and no tokenizer needed."""
    return sum(_chars(m) for m in messages) // 4 + 4 * len(messages)


def split_for_compression(
    messages: Sequence[Mapping[str, Any]], protect_first_n: int, protect_last_n: int
) -> tuple[int, int]:
    """Where to cut: `(head_end, tail_start)` so that `messages[:head_end]` (the system prompt
    and the first `protect_first_n` messages) and `messages[tail_start:]` (at least the last
    `protect_last_n`, always including the last user message) are kept, and neither cut
    separates an assistant message from its tool results. Nothing to compress when
    `head_end >= tail_start`."""
    count = len(messages)
    head_end = min(count, max(protect_first_n, 0))
    while head_end < count and messages[head_end].get("role") == "system":
        head_end += 1
    while head_end < count and messages[head_end].get("role") == "tool":
        head_end += 1  # the results of a call in the head stay with it
    tail_start = max(count - max(protect_last_n, 0), 0)
    last_user = next((i for i in range(count - 1, -1, -1) if messages[i].get("role") == "user"), None)
    if last_user is not None:
        tail_start = min(tail_start, last_user)
    while tail_start > 0 and messages[tail_start].get("role") == "tool":
        tail_start -= 1  # back to the assistant message that made the call
    return head_end, max(tail_start, head_end)
