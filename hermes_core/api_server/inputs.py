"""What a request's messages mean to the agent: Hermes' rules, with an error naming the field.

Chat completions: every `system` message joins the caller's instructions (added to the agent's
own prompt, never replacing it); `user` and `assistant` messages are the conversation; the last
of them is the prompt and must be the user's. Responses: `input` is a string (the prompt) or a
list of strings and `{role, content}` items (the last is the prompt). Content is text or
OpenAI's content parts; text parts are joined, and a part the agent cannot take (an image, a
file) is refused rather than silently dropped.
"""

from __future__ import annotations

from typing import Any

import attrs

from hermes_core import Messages

from .http import ApiError

__all__ = ["Conversation", "chat_conversation", "responses_conversation", "text_of"]

_TEXT_PARTS = ("text", "input_text", "output_text")


@attrs.frozen
class Conversation:
    instructions: str
    history: Messages
    prompt: str


def text_of(content: Any, field: str) -> str:
    """The text of a message's `content` (a string or a list of content parts)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise ApiError(400, f"{field} must be a string or a list of content parts", param=field)
    texts = []
    for index, part in enumerate(content):
        where = f"{field}[{index}]"
        if isinstance(part, str):
            texts.append(part)
            continue
        if not isinstance(part, dict):
            raise ApiError(400, f"{where} must be a content part object", param=where)
        kind = part.get("type")
        if kind in _TEXT_PARTS and isinstance(part.get("text"), str):
            texts.append(part["text"])
        else:
            raise ApiError(400, f"{where}: content parts of type {kind!r} are not supported by this server "
                                "(text only)", param=where, code="unsupported_content_type")
    return "\n".join(texts)


def _split(turns: list[tuple[str, str]], field: str) -> tuple[Messages, str]:
    if not turns or turns[-1][0] != "user":
        raise ApiError(400, f"{field}: the last message must be the user's (the prompt)", param=field)
    if not turns[-1][1].strip():
        raise ApiError(400, f"{field}: the last user message has no text", param=field)
    history: Messages = [{"role": role, "content": text} for role, text in turns[:-1]]
    return history, turns[-1][1]


def chat_conversation(body: dict[str, Any]) -> Conversation:
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise ApiError(400, "Missing or invalid 'messages' field (a non-empty list of messages)", param="messages")
    system, turns = [], []
    for index, message in enumerate(messages):
        field = f"messages[{index}]"
        if not isinstance(message, dict):
            raise ApiError(400, f"{field} must be an object with role and content", param=field)
        role = message.get("role")
        if role in ("system", "developer"):
            system.append(text_of(message.get("content"), f"{field}.content"))
        elif role in ("user", "assistant"):
            turns.append((str(role), text_of(message.get("content"), f"{field}.content")))
        elif role not in ("tool", "function"):  # the client's own tool results: the agent runs its own tools
            raise ApiError(400, f"{field}.role must be system, user or assistant (got {role!r})",
                           param=f"{field}.role")
    history, prompt = _split(turns, "messages")
    return Conversation("\n".join(t for t in system if t), history, prompt)


def responses_conversation(body: dict[str, Any]) -> Conversation:
    given = body.get("input")
    instructions = body.get("instructions")
    if instructions is not None and not isinstance(instructions, str):
        raise ApiError(400, "instructions must be a string", param="instructions")
    if isinstance(given, str):
        if not given.strip():
            raise ApiError(400, "input is empty", param="input")
        return Conversation(instructions or "", [], given)
    if not isinstance(given, list) or not given:
        raise ApiError(400, "Missing or invalid 'input' field (a string, or a list of messages)", param="input")
    system, turns = [], []
    for index, item in enumerate(given):
        field = f"input[{index}]"
        if isinstance(item, str):
            turns.append(("user", item))
            continue
        if not isinstance(item, dict):
            raise ApiError(400, f"{field} must be a string or a message object", param=field)
        kind, role = item.get("type", "message"), item.get("role")
        if kind != "message":
            if kind in ("function_call", "function_call_output", "reasoning"):
                continue  # the server ran its own tools; their items are not the conversation
            raise ApiError(400, f"{field}.type {kind!r} is not supported (message items only)", param=f"{field}.type")
        if role in ("system", "developer"):
            system.append(text_of(item.get("content"), f"{field}.content"))
        elif role in ("user", "assistant"):
            turns.append((str(role), text_of(item.get("content"), f"{field}.content")))
        else:
            raise ApiError(400, f"{field}.role must be user, assistant, system or developer (got {role!r})",
                           param=f"{field}.role")
    history, prompt = _split(turns, "input")
    return Conversation("\n".join(t for t in [instructions or "", *system] if t), history, prompt)
