"""A tool call with the lifecycle hooks around it, for any tool registry.

`pre_tool_call` (block/modify), the handler, `post_tool_call`, `transform_tool_result`:
the same path whether the tool is a plugin's or an active engine's.
"""

from __future__ import annotations

from typing import Any

from ._hooks import HookRunner
from ._tools import ToolRegistry, error_result, parse_arguments

__all__ = ["dispatch", "adispatch"]


def _prepare(registry: ToolRegistry, name: str, args: Any) -> tuple[dict[str, Any] | None, str]:
    if registry.get(name) is None:
        return None, error_result(f"Unknown tool: {name}")
    parsed, problem = parse_arguments(args)
    if parsed is None:
        return None, error_result(f"Invalid arguments for tool {name!r}: {problem}")
    return parsed, ""


def dispatch(
    hooks: HookRunner, registry: ToolRegistry, name: str, args: Any, session_id: str, tool_call_id: str,
    kwargs: dict[str, Any],
) -> str:
    """Run tool `name` of `registry` with the hooks around it; never raises."""
    parsed, error = _prepare(registry, name, args)
    if parsed is None:
        return error
    ids = {"session_id": session_id, "tool_call_id": tool_call_id}
    decision = hooks.pre_tool_call(name, parsed, **ids)
    result = decision.message if decision.blocked else registry.dispatch(name, decision.args, **kwargs)
    hooks.fire("post_tool_call", tool_name=name, args=dict(decision.args), result=result, **ids)
    changed = hooks.transform(
        "transform_tool_result", tool_name=name, args=dict(decision.args), result=result, session_id=session_id
    )
    return changed if changed is not None else result


async def adispatch(
    hooks: HookRunner, registry: ToolRegistry, name: str, args: Any, session_id: str, tool_call_id: str,
    kwargs: dict[str, Any],
) -> str:
    """`dispatch` for async hosts."""
    parsed, error = _prepare(registry, name, args)
    if parsed is None:
        return error
    ids = {"session_id": session_id, "tool_call_id": tool_call_id}
    decision = await hooks.apre_tool_call(name, parsed, **ids)
    result = decision.message if decision.blocked else await registry.adispatch(name, decision.args, **kwargs)
    await hooks.afire("post_tool_call", tool_name=name, args=dict(decision.args), result=result, **ids)
    changed = await hooks.atransform(
        "transform_tool_result", tool_name=name, args=dict(decision.args), result=result, session_id=session_id
    )
    return changed if changed is not None else result
