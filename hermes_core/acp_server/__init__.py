"""`hermes acp`: the reference agent and its plugins in an editor, over the Agent Client Protocol
(stdio, JSON-RPC; the official SDK, `hermes-core[acp]`).

`serve(manager, stdin, stdout)` answers one editor until it closes the connection: `initialize`,
`session/new`, `session/load` (the stored conversation replayed), `session/resume` (not
replayed), `session/list`, `session/close`, `session/prompt` (the answer streamed, every tool
call shown as it starts and ends, a tool call a hook puts to a human asked with
`session/request_permission`) and `session/cancel` (the turn stops at once, `cancelled`).
When the editor closes its end, the requests it sent are answered first (`acp.end_grace`).
Sessions are the host's stored sessions. The other way round, `delegate` hands a task to another
ACP agent (`acp_agents:`; `read_agents`). See docs/acp.md.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, BinaryIO

from hermes_core import PluginManager, config_keys

if TYPE_CHECKING:
    from .delegates import DelegateConfig, delegate, read_agents, tool_name
    from .server import HermesAcp

__all__ = ["DelegateConfig", "HermesAcp", "delegate", "read_agents", "serve", "tool_name"]

_EXPORTS = {"HermesAcp": ".server", **dict.fromkeys(["DelegateConfig", "delegate", "read_agents", "tool_name"],
                                                   ".delegates")}


def __getattr__(name: str) -> Any:  # each name is imported on first use (the SDK only when it runs)
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'hermes_core.acp_server' has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


async def serve(manager: PluginManager, stdin: BinaryIO, stdout: BinaryIO, *, version: str = "") -> None:
    """Serve ACP on `stdin` / `stdout` (byte streams of their own) until the client closes them."""
    from acp import run_agent

    from .lines import open_lines
    from .server import HermesAcp

    agent = HermesAcp(manager, version)
    # every line answered as JSON-RPC says, and every request read before the end of input (lines.py)
    lines = await open_lines(stdin, stdout, grace=manager.config.read(config_keys.ACP_END_GRACE),
                             overdue=agent.stop_turns)
    try:  # a plain class on purpose: the SDK answers "method not found" for what it does not define
        await run_agent(agent, lines, use_unstable_protocol=True)  # type: ignore[arg-type]
    finally:
        await agent.close()
