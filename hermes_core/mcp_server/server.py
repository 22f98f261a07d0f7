"""The MCP server of `hermes mcp serve`: the host's tools (and slash commands, as prompts) as the
SDK's low-level `Server`, which takes tools with raw JSON Schemas, as plugins have them.

Every call takes the path the agent's calls take (`arun_tool`: validation, `pre_tool_call`, the
time limit, `post_tool_call`, `transform_tool_result`); a blocked or failed call (invalid
arguments too) is an `isError` result with the message the model would read; an unknown tool is
JSON-RPC error -32602, as the spec has it. Plugin slash commands that take one text argument
may be offered as prompts.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from typing import Any, Protocol

from hermes_core import Command, HermesError, ToolInfo, ToolOutcome, storable_text
from hermes_core.hosting import ToolSelection

from .content import mcp_content
from .notify import Levels, notifying

__all__ = ["Host", "build_server"]

_TEXT_MODES = ("raw", "text", "required", "none")


class Host(Protocol):
    """What serving needs of a `PluginManager`."""

    def tool_infos(self) -> list[ToolInfo]: ...

    async def arun_tool(self, name: str, args: Any, *, session_id: str = "", tool_call_id: str = "") -> ToolOutcome: ...

    @property
    def commands(self) -> Iterable[Command]: ...

    async def arun_command(self, name: str, raw_args: str = "", *, session_key: str = "",
                           platform: str = "cli") -> str | None: ...


def _tool(info: ToolInfo) -> Any:
    import mcp.types as types

    hints = info.schema.get("annotations")
    return types.Tool(name=info.name, description=info.schema.get("description") or None,
                      input_schema=dict(info.schema.get("parameters") or {"type": "object"}),
                      annotations=types.ToolAnnotations.model_validate(dict(hints)) if hints else None)


def _prompt(command: Command) -> Any:
    import mcp.types as types

    arguments = [] if command.argument_mode == "none" else [types.PromptArgument(
        name="text", description=command.args_hint or "the command's text",
        required=command.argument_mode == "required")]
    return types.Prompt(name=command.name, description=command.description or None, arguments=arguments)


def build_server(host: Host, selection: ToolSelection = ToolSelection(), *, prompts: bool = False,
                 name: str = "hermes-core", version: str = "") -> Any:
    """The SDK's low-level `Server` answering with the available tools of `host` that `selection`
    offers (and, with `prompts`, its slash commands that take one text argument, as prompts)."""
    import mcp.types as types
    from mcp.server.lowlevel import Server

    names: set[str] = set()  # what was served at the last listing: a call of one of these skips listing again
    levels = Levels()

    def served() -> dict[str, ToolInfo]:
        tools = {info.name: info for info in host.tool_infos() if info.available and selection.wants(info)}
        names.clear()
        names.update(tools)
        return tools

    def text(value: str, *, error: bool = False) -> Any:  # a lone surrogate the SDK cannot encode: U+FFFD
        return types.CallToolResult(content=[types.TextContent(type="text", text=storable_text(value))],
                                    is_error=error)

    async def list_tools(ctx: Any, params: Any) -> Any:
        return types.ListToolsResult(tools=[_tool(info) for info in served().values()])

    async def call_tool(ctx: Any, params: Any) -> Any:
        if params.name not in names and params.name not in served():  # the call checks availability itself
            from mcp.shared.exceptions import MCPError

            raise MCPError(types.INVALID_PARAMS, f"Unknown tool: {params.name}")  # a protocol error, as the spec has it
        async with notifying(ctx, levels):
            outcome = await host.arun_tool(params.name, dict(params.arguments or {}),
                                           tool_call_id=f"mcp-{getattr(ctx, 'request_id', '')}")
        if outcome.status != "ok":
            return text(outcome.message, error=True)
        return types.CallToolResult(content=mcp_content(outcome.result), is_error=False)

    def commands() -> dict[str, Command]:
        return {c.name: c for c in host.commands if c.argument_mode in _TEXT_MODES}

    async def list_prompts(ctx: Any, params: Any) -> Any:
        return types.ListPromptsResult(prompts=[_prompt(c) for c in commands().values()])

    async def get_prompt(ctx: Any, params: Any) -> Any:
        from mcp.shared.exceptions import MCPError

        if params.name not in commands():
            raise MCPError(types.INVALID_PARAMS, f"Unknown prompt: {params.name}")
        try:
            answer = await host.arun_command(params.name, str((params.arguments or {}).get("text", "")), platform="mcp")
        except HermesError as exc:
            raise MCPError(types.INTERNAL_ERROR, str(exc)) from None
        return types.GetPromptResult(description=commands()[params.name].description or None, messages=[
            types.PromptMessage(role="user", content=types.TextContent(type="text", text=storable_text(answer or "")))])

    async def set_level(ctx: Any, params: Any) -> Any:
        levels.set(str(params.level))
        return types.EmptyResult()

    handlers: dict[str, Any] = {"on_list_tools": list_tools, "on_call_tool": call_tool,
                                "on_set_logging_level": set_level}
    if prompts:
        handlers.update(on_list_prompts=list_prompts, on_get_prompt=get_prompt)
    with warnings.catch_warnings():  # logging/setLevel is deprecated by 2026-07-28, and older clients use it
        warnings.simplefilter("ignore")
        return Server(name, version=version, **handlers)
