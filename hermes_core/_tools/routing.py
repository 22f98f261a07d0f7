"""Where a tool call by name runs: a plugin's tool in the plugins' registry, an active engine's
tool in the registry of the session that holds the engine; the lifecycle hooks around either."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from .._errors import HermesError
from . import call

if TYPE_CHECKING:
    from .._hooks.calls import LifecycleHooks
    from .registry import ToolRegistry

__all__ = ["EngineTools", "ToolRouter"]

log = logging.getLogger("hermes_core.tools")


class EngineTools(Protocol):
    """A session's view of the tools its engines offer (an `AgentSession`)."""

    session_id: str

    def has_tool(self, name: str) -> bool: ...

    def registry_for(self, name: str) -> ToolRegistry: ...


class ToolRouter:
    """Runs tools by name for a host: `plugins()` is the plugins' registry, `hooks()` the lifecycle
    hooks, `engines()` the session whose engines' tools are reachable outside any conversation
    (the manager's default session; it may raise `HermesError` when an engine cannot start)."""

    __slots__ = ("_plugins", "_hooks", "_engines")

    def __init__(self, plugins: Callable[[], ToolRegistry], hooks: Callable[[], LifecycleHooks],
                 engines: Callable[[], EngineTools]) -> None:
        self._plugins, self._hooks, self._engines = plugins, hooks, engines

    def _route(self, name: str, session_id: str, tool_call_id: str) -> tuple[call.Tools, call.ToolCallIds]:
        """The registry that answers tool `name`, and the ids its hooks see."""
        registry: call.Tools = self._plugins()
        if registry.entry(name) is None:
            try:
                engines = self._engines()
            except HermesError as exc:
                log.warning("engine tools are unavailable: %s", exc)
            else:
                if engines.has_tool(name):
                    registry, session_id = engines.registry_for(name), engines.session_id
        ids = call.ToolCallIds(session_id, tool_call_id=tool_call_id) if session_id or tool_call_id else call.NO_IDS
        return registry, ids

    def dispatch(self, name: str, args: Any, *, session_id: str = "", tool_call_id: str = "",
                 kwargs: Mapping[str, Any]) -> str:
        """Run tool `name` from sync code, hooks around it; never raises."""
        registry, ids = self._route(name, session_id, tool_call_id)
        return call.dispatch(registry, self._hooks(), name, args, ids=ids, kwargs=kwargs)

    async def adispatch(self, name: str, args: Any, *, session_id: str = "", tool_call_id: str = "",
                        kwargs: Mapping[str, Any]) -> str:
        """`dispatch` from a coroutine."""
        registry, ids = self._route(name, session_id, tool_call_id)
        return await call.adispatch(registry, self._hooks(), name, args, ids=ids, kwargs=kwargs)

    async def arun(self, name: str, args: Any, *, session_id: str = "", tool_call_id: str = "",
                   kwargs: Mapping[str, Any]) -> call.ToolOutcome:
        """`adispatch`, telling a blocked call from one that ran."""
        registry, ids = self._route(name, session_id, tool_call_id)
        return await call.arun(registry, self._hooks(), name, args, ids=ids, kwargs=kwargs)
