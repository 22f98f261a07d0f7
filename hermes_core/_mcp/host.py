"""The host's MCP servers wired to what they need of the host: its tool registry and config, its
model for a server's sampling requests (through `ctx.llm`'s gates, as the caller `mcp:<server>`),
and the servers the loaded portable packages declare (their mcp.json). The LLM client and the
mcp.json reader are imported when the servers start, never on a manager's import."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .servers import McpServers

if TYPE_CHECKING:
    from .._config.config import Config
    from .._llm.host import LlmHost
    from .._tools.registry import ToolRegistry

__all__ = ["host_servers"]


def host_servers(tools: Callable[[], ToolRegistry], config: Callable[[], Config], home: Path,
                 llm_host: Callable[[], LlmHost], records: Callable[[], Iterable[Any]]) -> McpServers:
    """The MCP servers of a host (`mcp_servers:` in config.yaml, then the portable packages'
    among `records()`, the plugin records), their tools joining `tools()`."""

    def caller_llm(caller: str) -> Any:
        """A client with `ctx.llm`'s gates for a caller that is no plugin (a server's sampling)."""
        from .._llm.client import PluginLlm

        return PluginLlm(caller, llm_host())

    def package_servers() -> list[tuple[str, list[dict[str, Any]]]]:
        from .._skills.portable_mcp import package_servers as read

        return read(records(), home)

    return McpServers(tools, config, home, caller_llm, package_servers)
