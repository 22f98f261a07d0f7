"""How Hermes names the tools of an MCP server: `mcp__<server>__<tool>`, toolset `mcp-<server>`; and
what happens when two names become one (`a.b` and `a_b`): the first keeps it, the other is one
warning naming both."""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .config import ServerConfig

__all__ = ["MAX_NAME", "apart", "offered", "server_part", "tool_name", "toolset"]

log = logging.getLogger("hermes_core.mcp")

MAX_NAME = 64
_UNSAFE = re.compile(r"[^A-Za-z0-9_]")


def server_part(server: str) -> str:
    """Server `server`'s part of its tools' names (two servers with the same part would share them)."""
    return _UNSAFE.sub("_", server)


def tool_name(server: str, tool: str) -> str:
    """`mcp__<server>__<tool>`, each part with every character outside `[A-Za-z0-9_]` made `_`; a
    name over 64 characters is cut to 55 and ends in `_` and 8 hex digits of its SHA-256.

    >>> tool_name("git-hub", "search.issues")
    'mcp__git_hub__search_issues'
    """
    name = f"mcp__{server_part(server)}__{_UNSAFE.sub('_', tool)}"
    if len(name) <= MAX_NAME:
        return name
    return f"{name[:55]}_{hashlib.sha256(name.encode()).hexdigest()[:8]}"


def toolset(server: str) -> str:
    """The toolset of server `server`'s tools."""
    return f"mcp-{server}"


def offered(server: ServerConfig, tools: Iterable[Any], *, warn: bool = False) -> dict[str, Any]:
    """The `tools` (the SDK's, of a listing) of `server` its config offers, by Hermes' name. Two whose
    names are the same once made Hermes' keep the first the server listed; with `warn`, the other is
    one warning naming both."""
    found: dict[str, Any] = {}
    for tool in tools:
        if not server.offers(tool.name):
            continue
        name = tool_name(server.name, tool.name)
        first = found.setdefault(name, tool)
        if first is not tool and warn:
            log.warning("MCP server %r: tool %r is left out: its name %s is also tool %r's, which the server "
                        "listed first (names keep letters, digits and _ only); rename one on the server",
                        server.name, tool.name, name, first.name)
    return found


def apart(servers: list[ServerConfig], problems: list[str]) -> list[ServerConfig]:
    """`servers` less those whose tools would be named as an earlier one's (`a.b` and `a_b` are both
    `mcp__a_b__...`): the first (config.yaml's order, then the packages') keeps them, each other is a
    line in `problems` naming both."""
    kept: dict[str, ServerConfig] = {}
    for server in servers:
        first = kept.setdefault(server_part(server.name), server)
        if first is not server:
            problems.append(f"MCP server {server.name!r} is left out: its tools would be named as MCP server "
                            f"{first.name!r}'s (mcp__{server_part(server.name)}__...; names keep letters, digits "
                            "and _ only); rename one")
    return list(kept.values())
