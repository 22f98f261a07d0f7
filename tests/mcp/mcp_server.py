"""A small MCP server written with the official SDK's low-level `Server`, run as a subprocess by
the tests (`python mcp_server.py [--hang | --fail] [--marker PATH] [--sse URLFILE] [--extras]`): tools echo,
add, structured, big, slow, crash, fails, picture, sample (a sampling request) and env; `--hang` never answers, `--fail` exits at once;
`--marker PATH` appends a line to PATH each time the server starts (to count restarts); `--sse
URLFILE` serves the older SSE transport on 127.0.0.1 (a free port) instead of stdio and writes its
URL to URLFILE; `--extras` adds a resource (memo://notes), a template (memo://items/{id}) and a
prompt (review: code, language)."""

from __future__ import annotations

import os
import sys
import time

import anyio
import mcp.types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

TOOLS = [
    types.Tool(name="echo", description="Say the text back.", annotations=types.ToolAnnotations(read_only_hint=True),
               input_schema={"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
    types.Tool(name="add", description="Add two numbers.",
               input_schema={"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}}),
    types.Tool(name="structured", description="Structured content.", input_schema={"type": "object"}),
    types.Tool(name="big", description="70,000 characters.", input_schema={"type": "object"}),
    types.Tool(name="slow", description="Sleep.", input_schema={"type": "object",
                                                                 "properties": {"seconds": {"type": "number"}}}),
    types.Tool(name="crash", description="The server dies.", input_schema={"type": "object"}),
    types.Tool(name="fails", description="An error result.", input_schema={"type": "object"}),
    types.Tool(name="picture", description="A picture, a sound and a link.", input_schema={"type": "object"}),
    types.Tool(name="sample", description="Ask the client's model.", input_schema={"type": "object",
                                                                                  "properties": {"q": {"type": "string"}}}),
    types.Tool(name="env", description="An environment variable.", input_schema={"type": "object",
                                                                                  "properties": {"name": {"type": "string"}}}),
]


DOT = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC"  # 1x1 red PNG


def text(value: str, error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=value)], is_error=error)


async def list_tools(ctx, params):
    return types.ListToolsResult(tools=TOOLS)


async def call_tool(ctx, params):
    args = params.arguments or {}
    if params.name == "echo":
        return text(f"echo: {args['text']}")
    if params.name == "add":
        return text(str(args.get("a", 0) + args.get("b", 0)))
    if params.name == "structured":
        return types.CallToolResult(content=[types.TextContent(type="text", text="two fields")],
                                    structured_content={"x": 1, "y": [2, 3]})
    if params.name == "picture":
        return types.CallToolResult(content=[
            types.TextContent(type="text", text="a red dot"),
            types.ImageContent(type="image", data=DOT, mime_type="image/png"),
            types.AudioContent(type="audio", data="UklGRg==", mime_type="audio/wav"),
            types.ResourceLink(type="resource_link", uri="file:///docs/guide.md", name="guide.md", title="The guide",
                               mime_type="text/markdown")])
    if params.name == "sample":
        return await sample(ctx, params, str(args.get("q", "?")))
    if params.name == "big":
        return text("z" * 70_000)
    if params.name == "slow":
        await anyio.sleep(float(args.get("seconds", 1)))
        return text("slept")
    if params.name == "crash":
        os._exit(3)
    if params.name == "fails":
        return text("the tool could not do it", error=True)
    if params.name == "env":
        return text(os.environ.get(args.get("name", ""), "<unset>"))
    return text(f"no tool {params.name}", error=True)


async def sample(ctx, params, question):
    """A sampling request to the client: as an input request (2026-07-28), or a request of its own."""
    import warnings

    asked = types.CreateMessageRequestParams(messages=[types.SamplingMessage(
        role="user", content=types.TextContent(type="text", text=question))], max_tokens=50000,
        system_prompt="Answer briefly.")
    if ctx.protocol_version == "2026-07-28":
        answers = params.input_responses or {}
        if "llm" not in answers:
            return types.InputRequiredResult(input_requests={"llm": types.CreateMessageRequest(params=asked)},
                                             request_state="asked")
        answer = answers["llm"]
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            answer = await ctx.session.create_message(asked.messages, max_tokens=asked.max_tokens,
                                                      system_prompt=asked.system_prompt,
                                                      related_request_id=ctx.request_id)
    if isinstance(answer, types.ErrorData) or getattr(answer, "code", None) is not None:
        return text(f"refused: {answer.message}", error=True)
    return text(f"the model said: {answer.content.text} ({answer.model})")


async def list_resources(ctx, params):
    return types.ListResourcesResult(resources=[types.Resource(uri="memo://notes", name="notes", title="The notes",
                                                               mime_type="text/plain")])


async def list_templates(ctx, params):
    return types.ListResourceTemplatesResult(resource_templates=[
        types.ResourceTemplate(uri_template="memo://items/{id}", name="item")])


async def read_resource(ctx, params):
    uri = str(params.uri)
    if uri == "memo://notes" or uri.startswith("memo://items/"):
        return types.ReadResourceResult(contents=[types.TextResourceContents(uri=uri, mime_type="text/plain",
                                                                             text=f"the text of {uri}")])
    from mcp.shared.exceptions import MCPError

    raise MCPError(-32002, "Resource not found", data={"uri": uri})


async def list_prompts(ctx, params):
    return types.ListPromptsResult(prompts=[types.Prompt(name="review", description="Review code", arguments=[
        types.PromptArgument(name="code", required=True), types.PromptArgument(name="language")])])


async def get_prompt(ctx, params):
    args = params.arguments or {}
    return types.GetPromptResult(description="Review code", messages=[types.PromptMessage(
        role="user", content=types.TextContent(type="text",
                                               text=f"Review this {args.get('language', 'code')}: {args['code']}"))])


def main() -> None:
    if "--marker" in sys.argv:
        with open(sys.argv[sys.argv.index("--marker") + 1], "a") as marker:
            marker.write("started\n")
    if "--fail" in sys.argv:
        sys.exit("this server cannot start")
    if "--hang" in sys.argv:
        time.sleep(3600)
    extras = {"on_list_resources": list_resources, "on_list_resource_templates": list_templates,
              "on_read_resource": read_resource, "on_list_prompts": list_prompts,
              "on_get_prompt": get_prompt} if "--extras" in sys.argv else {}
    server = Server("test-server", on_list_tools=list_tools, on_call_tool=call_tool, **extras)
    if "--sse" in sys.argv:
        serve_sse(server, sys.argv[sys.argv.index("--sse") + 1])
        return

    async def run() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    anyio.run(run)


def serve_sse(server: Server, url_file: str) -> None:
    import socket

    import uvicorn
    from mcp.server.sse import SseServerTransport
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import PlainTextResponse, Response
    from starlette.routing import Mount, Route

    sse = SseServerTransport("/messages/")

    async def handle_sse(request: Request) -> Response:
        if request.headers.get("x-test") != "from-config":  # the headers of mcp_servers: reach the server
            return PlainTextResponse("missing header", status_code=403)
        async with sse.connect_sse(request.scope, request.receive, request._send) as (read, write):
            await server.run(read, write, server.create_initialization_options())
        return Response()

    app = Starlette(routes=[Route("/sse", endpoint=handle_sse, methods=["GET"]),
                            Mount("/messages/", app=sse.handle_post_message)])
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    with open(url_file + ".tmp", "w") as out:
        out.write(f"http://127.0.0.1:{sock.getsockname()[1]}/sse")
    os.replace(url_file + ".tmp", url_file)
    uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[sock])


if __name__ == "__main__":
    main()
