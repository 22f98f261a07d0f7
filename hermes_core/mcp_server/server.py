"""The MCP server of `hermes mcp serve`: the host's tools (and slash commands, as prompts) as the
SDK's low-level `Server`, which takes tools with raw JSON Schemas, as plugins have them.

Every call takes the path the agent's calls take (`arun_tool`: validation, `pre_tool_call`, the
time limit, `post_tool_call`, `transform_tool_result`); a blocked or failed call (invalid
arguments too) is an `isError` result with the message the model would read; an unknown tool is
JSON-RPC error -32602, as the spec has it. Plugin slash commands may be offered as prompts
(`prompts.py`), and stored sessions and skills as resources (`resources.py`).
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from typing import Any, Protocol

from hermes_core import Command, HermesError, ToolInfo, ToolOutcome, storable_text
from hermes_core.hosting import ToolSelection, in_thread

from .content import mcp_content
from .notify import Levels, notifying
from .prompts import arguments, command_text
from .resources import MIME, Resources

__all__ = ["Host", "build_server"]

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

    return types.Prompt(name=command.name, description=command.description or None, arguments=[
        types.PromptArgument(name=a.name, description=a.description or None, required=a.required)
        for a in arguments(command)])


def build_server(host: Host, selection: ToolSelection = ToolSelection(), *, prompts: bool = False,
                 resources: Resources | None = None, name: str = "hermes-core", version: str = "") -> Any:
    """The SDK's low-level `Server` answering with the available tools of `host` that `selection`
    offers; with `prompts`, its slash commands as prompts (their arguments from `args_hint`,
    completed from its choices); with `resources`, what they read (stored sessions, skills)."""
    import mcp.types as types
    from mcp.server.lowlevel import Server
    from mcp.shared.exceptions import MCPError

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
            raise MCPError(types.INVALID_PARAMS, f"Unknown tool: {params.name}")  # a protocol error, as the spec has it
        async with notifying(ctx, levels):
            outcome = await host.arun_tool(params.name, dict(params.arguments or {}),
                                           tool_call_id=f"mcp-{getattr(ctx, 'request_id', '')}")
        if outcome.status != "ok":
            return text(outcome.message, error=True)
        return types.CallToolResult(content=mcp_content(outcome.result), is_error=False)

    def commands() -> dict[str, Command]:
        return {c.name: c for c in host.commands}

    async def list_prompts(ctx: Any, params: Any) -> Any:
        return types.ListPromptsResult(prompts=[_prompt(c) for c in commands().values()])

    async def get_prompt(ctx: Any, params: Any) -> Any:
        command = commands().get(params.name)
        if command is None:
            raise MCPError(types.INVALID_PARAMS, f"Unknown prompt: {params.name}")
        try:
            raw = command_text(command, params.arguments or {})
        except ValueError as exc:
            raise MCPError(types.INVALID_PARAMS, str(exc)) from None
        try:
            answer = await host.arun_command(params.name, raw, platform="mcp")
        except HermesError as exc:
            raise MCPError(types.INTERNAL_ERROR, str(exc)) from None
        return types.GetPromptResult(description=command.description or None, messages=[
            types.PromptMessage(role="user", content=types.TextContent(type="text", text=storable_text(answer or "")))])

    async def list_resources(ctx: Any, params: Any) -> Any:
        assert resources is not None
        return types.ListResourcesResult(resources=await in_thread(resources.listing))

    async def list_templates(ctx: Any, params: Any) -> Any:
        assert resources is not None
        return types.ListResourceTemplatesResult(resource_templates=resources.templates())

    async def read_resource(ctx: Any, params: Any) -> Any:
        assert resources is not None
        uri = str(params.uri)
        found = resources.parse(uri)
        body = await in_thread(found[0].read, found[1]) if found is not None else None
        if body is None:
            raise MCPError(-32002, "Resource not found", data={"uri": uri})  # the spec's code
        return types.ReadResourceResult(contents=[types.TextResourceContents(uri=uri, mime_type=MIME,
                                                                             text=storable_text(body))])

    async def complete(ctx: Any, params: Any) -> Any:
        ref, argument = params.ref, params.argument
        values: list[str] = []
        if getattr(ref, "type", "") == "ref/prompt" and prompts and ref.name in commands():
            wanted = {a.name: a for a in arguments(commands()[ref.name])}.get(argument.name)
            values = [v for v in (wanted.choices if wanted else ()) if v.startswith(argument.value)]
        elif getattr(ref, "type", "") == "ref/resource" and resources is not None:
            values = await in_thread(resources.complete, str(ref.uri), argument.value)
        return types.CompleteResult(completion=types.Completion(values=values[:100], total=len(values),
                                                                has_more=len(values) > 100))

    async def set_level(ctx: Any, params: Any) -> Any:
        levels.set(str(params.level))
        return types.EmptyResult()

    handlers: dict[str, Any] = {"on_list_tools": list_tools, "on_call_tool": call_tool,
                                "on_set_logging_level": set_level}
    if prompts:
        handlers.update(on_list_prompts=list_prompts, on_get_prompt=get_prompt)
    if resources is not None:
        handlers.update(on_list_resources=list_resources, on_list_resource_templates=list_templates,
                        on_read_resource=read_resource)
    if prompts or resources is not None:
        handlers["on_completion"] = complete
    with warnings.catch_warnings():  # logging/setLevel is deprecated by 2026-07-28, and older clients use it
        warnings.simplefilter("ignore")
        return Server(name, version=version, **handlers)
