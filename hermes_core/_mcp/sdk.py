"""The official MCP SDK, imported only when MCP is used: it is the optional extra `hermes-core[mcp]`."""

from __future__ import annotations

from .._errors import McpError

__all__ = ["EXTRA", "require"]

EXTRA = "pip install 'hermes-core[mcp]'"


def require(what: str) -> None:
    """Import the SDK, or `McpError` saying in one line which extra `what` needs."""
    try:
        import mcp  # noqa: F401
    except ImportError as exc:
        raise McpError(f"{what} needs the MCP extra, which is not installed ({exc}): {EXTRA}") from None
