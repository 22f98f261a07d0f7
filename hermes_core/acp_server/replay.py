"""A stored conversation as the `session/update` notifications `session/load` replays: the user's
messages, the agent's, and each tool call with its result."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from hermes_core import Messages

__all__ = ["replayed"]


def replayed(messages: Messages) -> Iterator[Any]:
    """The updates that show `messages` as they happened (system messages are not shown)."""
    from acp import (
        start_tool_call, text_block, tool_content, update_agent_message, update_tool_call, update_user_message,
    )

    for message in messages:
        role = message.get("role")
        text = _content_text(message.get("content"))
        if role == "user" and text:
            yield update_user_message(text_block(text))
        elif role == "assistant":
            if text:
                yield update_agent_message(text_block(text))
            for call in message.get("tool_calls") or []:
                function = call.get("function") if isinstance(call, dict) else None
                name = str((function or {}).get("name", "tool"))
                yield start_tool_call(str(call.get("id") or name), name, kind="other", status="in_progress",
                                      raw_input=(function or {}).get("arguments"))
        elif role == "tool":
            call_id = str(message.get("tool_call_id") or "")
            yield update_tool_call(call_id, status="completed", content=[tool_content(text_block(text))])


def _content_text(content: Any) -> str:
    """A message's content as text (the text parts of a multimodal one)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict) and p.get("type") == "text")
    return ""
