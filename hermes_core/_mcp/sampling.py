"""Sampling: an MCP server asks the host's model for a completion (`sampling/createMessage`).

Off unless the operator turns it on for that server (`mcp_servers.<name>.sampling: true`, or a
mapping with `enabled` and `max_tokens`); a server it is off for is not told the client can
sample, as the spec has it. When on, the request is answered by the host's model through the
gates every plugin's `ctx.llm` call goes through, as the caller `mcp:<server>`: its budgets
(`plugins.llm_budget`, `plugins.entries."mcp:<server>".llm_budget`), the audit and the usage
ledger; the server's model preferences are not followed (the operator chooses the model), and
its `max_tokens` is capped at the configured `max_tokens`.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

__all__ = ["callback"]

log = logging.getLogger("hermes_core.mcp")


def _messages(params: Any) -> list[dict[str, Any]]:
    """The request's messages as the OpenAI chat messages `ctx.llm` takes (text and images)."""
    messages: list[dict[str, Any]] = []
    if params.system_prompt:
        messages.append({"role": "system", "content": params.system_prompt})
    for message in params.messages:
        blocks = message.content if isinstance(message.content, list) else [message.content]
        parts: list[dict[str, Any]] = []
        for block in blocks:
            kind = getattr(block, "type", "")
            if kind == "text":
                parts.append({"type": "text", "text": block.text})
            elif kind == "image":
                parts.append({"type": "image_url", "image_url": {"url": f"data:{block.mime_type};base64,{block.data}"}})
            else:
                parts.append({"type": "text", "text": f"[{kind or 'content'} not supported by this client]"})
        content: Any = parts[0]["text"] if len(parts) == 1 and parts[0]["type"] == "text" else parts
        messages.append({"role": message.role, "content": content})
    return messages


def callback(server: str, max_tokens: int, llm: Callable[[str], Any]) -> Callable[..., Awaitable[Any]]:
    """The SDK's `sampling_callback` for `server`: the host's model answers, as caller `mcp:<server>`
    (`llm(caller)` makes its `PluginLlm`); a refusal or failure is an `ErrorData` the server reads."""
    caller = f"mcp:{server}"

    async def sample(context: Any, params: Any) -> Any:
        import mcp.types as types

        try:
            answer = await llm(caller).acomplete(_messages(params), max_tokens=min(int(params.max_tokens), max_tokens),
                                                 temperature=params.temperature, purpose="mcp_sampling")
        except Exception as exc:  # noqa: BLE001 - the server is told why, the host goes on
            log.warning("MCP server %r: a sampling request was not answered: %s: %s", server, type(exc).__name__, exc)
            return types.ErrorData(code=-1, message=f"the client's model did not answer: {str(exc).splitlines()[0]}")
        return types.CreateMessageResult(role="assistant", content=types.TextContent(type="text", text=answer.text),
                                         model=answer.model, stop_reason="endTurn")

    return sample
