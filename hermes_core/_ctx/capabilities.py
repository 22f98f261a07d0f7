"""What only some hosts serve (a messaging gateway, an approval UI, ...): the ctx members that need
one, and the host objects that serve them (`PluginManager.serve`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .._errors import HostCapabilityError

__all__ = ["Capabilities", "UNSERVED", "Unserved", "unserved"]


# ctx member → (capability, what a host needs to serve it)
UNSERVED: Mapping[str, tuple[str, str]] = {
    "register_platform_handler": ("gateway", "a messaging gateway"),
    "register_telegram_handler": ("gateway", "a messaging gateway"),
    "platform_actions": ("gateway", "a messaging gateway"),
    "inject_message": ("conversation", "a running conversation that accepts injected messages"),
    "register_approval_transport": ("approval", "a human-approval UI"),
    "register_dashboard_auth_provider": ("dashboard", "a web dashboard"),
    "call_mcp": ("mcp", "MCP server connections"),
    "subagent_lifecycle": ("subagents", "subagent machinery"),
    "register_middleware": ("middleware", "tool and LLM middleware chains"),
    "register_context_reference": ("context_references", "`@prefix:` references in user messages"),
}


class Capabilities:
    """What the host serves beyond hermes-core: capability name → the host's object, whose
    method named like the ctx member is called with the plugin's id first."""

    def __init__(self) -> None:
        self._served: dict[str, Any] = {}

    def serve(self, capability: str, implementation: Any) -> None:
        self._served[capability] = implementation

    def served(self, capability: str) -> Any:
        return self._served.get(capability)

    def names(self) -> list[str]:
        return sorted(self._served)

    def call(self, plugin_id: str, member: str, *args: Any, **kwargs: Any) -> Any:
        implementation = self._served.get(UNSERVED[member][0])
        if implementation is None:
            raise unserved(plugin_id, member)
        return getattr(implementation, member)(plugin_id, *args, **kwargs)


def unserved(plugin_id: str, member: str) -> HostCapabilityError:
    capability, what = UNSERVED[member]
    return HostCapabilityError(
        f"ctx.{member} of plugin {plugin_id!r} needs a host with {what} (capability {capability!r}); this host "
        f"does not serve it. A host that has one declares it with PluginManager.serve({capability!r}, ...)"
    )


class Unserved:
    """What `ctx.platform_actions` / `ctx.subagent_lifecycle` are on a host that does not serve
    them: false in a test (`if ctx.platform_actions:`), and any use raises the one clear error."""

    __slots__ = ("_plugin_id", "_member")

    def __init__(self, plugin_id: str, member: str) -> None:
        self._plugin_id, self._member = plugin_id, member

    def __bool__(self) -> bool:
        return False

    def __repr__(self) -> str:
        return f"<ctx.{self._member}: not served by this host>"

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        raise unserved(self._plugin_id, self._member)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise unserved(self._plugin_id, self._member)
