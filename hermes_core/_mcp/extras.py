"""A server's resources and prompts, where it offers them: for the agent, Hermes' utility tools
`mcp__<server>__list_resources`, `read_resource`, `list_prompts` and `get_prompt`; for plugins,
`ctx.list_mcp_resources`, `ctx.read_mcp_resource`, `ctx.list_mcp_prompts` and
`ctx.get_mcp_prompt` (each a dict: `{"ok": True, ...}` or `{"ok": False, "error": ...}`)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Mapping
from typing import Any

from .connection import Connection, why

__all__ = ["UTILITIES", "handler", "offered", "run"]

_NO_ARGUMENTS = {"type": "object", "properties": {}, "additionalProperties": False}

# utility: (the capability it needs, its description, its parameters)
UTILITIES: dict[str, tuple[str, str, dict[str, Any]]] = {
    "list_resources": ("resources", "List the resources (and resource templates) of MCP server {server}.",
                       _NO_ARGUMENTS),
    "read_resource": ("resources", "Read a resource of MCP server {server} by its URI.", {
        "type": "object", "properties": {"uri": {"type": "string", "description": "The resource's URI"}},
        "required": ["uri"], "additionalProperties": False}),
    "list_prompts": ("prompts", "List the prompts of MCP server {server}, with their arguments.", _NO_ARGUMENTS),
    "get_prompt": ("prompts", "Get a prompt of MCP server {server}: its messages, for the arguments given.", {
        "type": "object", "properties": {
            "name": {"type": "string", "description": "The prompt's name"},
            "arguments": {"type": "object", "additionalProperties": {"type": "string"},
                          "description": "The prompt's arguments, by name"}},
        "required": ["name"], "additionalProperties": False}),
}


def offered(connection: Connection) -> list[str]:
    """The utilities `connection`'s server offers (by its capabilities), less the names its own tools take."""
    capabilities = connection.capabilities
    own = {tool.name for tool in connection.tools}
    return [name for name, (needs, _, _) in UTILITIES.items()
            if getattr(capabilities, needs, None) is not None and name not in own]


def _dumped(model: Any) -> Any:
    return model.model_dump(mode="json", by_alias=True, exclude_none=True, exclude={"meta"})


async def _do(client: Any, utility: str, args: Mapping[str, Any]) -> dict[str, Any]:
    if utility == "list_resources":
        listed = await client.list_resources(cache_mode="bypass")
        try:
            templates = (await client.list_resource_templates(cache_mode="bypass")).resource_templates
        except Exception:  # noqa: BLE001 - a server with resources but no templates
            templates = []
        return {"resources": [_dumped(r) for r in listed.resources],
                "resourceTemplates": [_dumped(t) for t in templates]}
    if utility == "read_resource":
        read = await client.read_resource(str(args["uri"]), cache_mode="bypass")
        return {"contents": [_dumped(c) for c in read.contents]}
    if utility == "list_prompts":
        return {"prompts": [_dumped(p) for p in (await client.list_prompts(cache_mode="bypass")).prompts]}
    got = await client.get_prompt(str(args["name"]), {str(k): str(v) for k, v in (args.get("arguments") or {}).items()})
    return {"description": got.description, "messages": [_dumped(m) for m in got.messages]}


async def run(connection: Connection, utility: str, args: Mapping[str, Any]) -> dict[str, Any]:
    """One utility on `connection`'s server: `{"ok": True, ...}` or `{"ok": False, "error": ...}`."""
    try:
        answer = await asyncio.wait_for(
            connection.ause(lambda client: _do(client, utility, args), f"{utility} of {connection.server.name!r}"),
            connection.server.timeout)
    except asyncio.TimeoutError:
        return {"ok": False, "error": f"MCP server {connection.server.name!r} did not answer {utility} within "
                                      f"{connection.server.timeout:g} s (mcp_servers.{connection.server.name}.timeout)"}
    except Exception as exc:  # noqa: BLE001 - the envelope says what went wrong
        return {"ok": False, "error": f"MCP server {connection.server.name!r}: {why(exc)}"}
    return {"ok": True, **answer}


def handler(connection: Connection, utility: str) -> Callable[..., Any]:
    """The agent's tool for `utility`: its answer as JSON, or `{"error": ...}`."""
    async def call(args: dict[str, Any], **_: Any) -> str:
        answer = await run(connection, utility, args)
        if not answer.pop("ok"):
            return json.dumps({"error": answer["error"]}, ensure_ascii=False)
        return json.dumps(answer, ensure_ascii=False, default=str)

    call.__qualname__ = f"mcp:{connection.server.name}:{utility}"
    return call
