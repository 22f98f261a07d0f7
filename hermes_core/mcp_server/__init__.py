"""For host authors: `hermes mcp serve`, the host's tools served to any MCP client, as a host
like the others, on hermes-core's public names and `hermes_core.hosting`.

    server = build_server(manager, ToolSelection(plugins=("notes",)), prompts=True,
                          resources=Resources([SessionResources(SessionStore(manager.home, url=state_url(manager.home)))]))
    anyio.run(serve_stdio, server, sys.stdin.buffer, sys.stdout.buffer)     # or serve_http

Every call takes the path the agent's calls take (`PluginManager.arun_tool`): validation,
`pre_tool_call`, the time limit, `post_tool_call`, `transform_tool_result`. It needs the official
MCP SDK (`pip install 'hermes-core[mcp]'`), imported only when a server is built or served.
"""

from .server import Host, build_server
from .http import serve_http
from .resources import ResourceSource, Resources, SessionResources, SkillResources
from .stdio import serve_stdio

__all__ = ["Host", "ResourceSource", "Resources", "SessionResources", "SkillResources", "build_server", "serve_http",
           "serve_stdio"]
