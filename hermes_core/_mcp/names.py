"""How Hermes names the tools of an MCP server: `mcp__<server>__<tool>`, toolset `mcp-<server>`."""

from __future__ import annotations

import hashlib
import re

__all__ = ["MAX_NAME", "tool_name", "toolset"]

MAX_NAME = 64
_UNSAFE = re.compile(r"[^A-Za-z0-9_]")


def tool_name(server: str, tool: str) -> str:
    """`mcp__<server>__<tool>`, each part with every character outside `[A-Za-z0-9_]` made `_`; a
    name over 64 characters is cut to 55 and ends in `_` and 8 hex digits of its SHA-256.

    >>> tool_name("git-hub", "search.issues")
    'mcp__git_hub__search_issues'
    """
    name = f"mcp__{_UNSAFE.sub('_', server)}__{_UNSAFE.sub('_', tool)}"
    if len(name) <= MAX_NAME:
        return name
    return f"{name[:55]}_{hashlib.sha256(name.encode()).hexdigest()[:8]}"


def toolset(server: str) -> str:
    """The toolset of server `server`'s tools."""
    return f"mcp-{server}"
