"""`PluginContext`: the one object a plugin uses to talk to the host, bound to its id."""

from __future__ import annotations

import logging
import types
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._plugin_record import tagged
from ._records import Command, Tool

if TYPE_CHECKING:
    from ._llm.client import PluginLlm
    from ._manager import PluginManager, PluginRecord

__all__ = ["PluginContext", "freeze"]


def freeze(value: Any) -> Any:
    """A read-only deep view: mappings become `MappingProxyType`, lists become tuples."""
    if isinstance(value, Mapping):
        return types.MappingProxyType({str(k): freeze(v) for k, v in value.items()})
    if isinstance(value, (list, tuple)):
        return tuple(freeze(v) for v in value)
    return value


class PluginContext:
    """What a plugin may do, always under its own id.

    Registration methods record what they add, so that a plugin whose loading fails leaves
    nothing behind. `ctx.config` is the read-only `plugins.entries.<id>.settings` mapping.
    """

    __slots__ = ("_manager", "_record", "_llm", "plugin_id", "logger", "config", "hermes_home", "__weakref__")

    def __init__(self, manager: PluginManager, record: PluginRecord, settings: Mapping[str, Any], home: Path) -> None:
        self._manager = manager
        self._record = record
        self.plugin_id: str = record.spec.id
        self.logger = logging.getLogger(f"hermes.plugins.{self.plugin_id}")
        self.config: Mapping[str, Any] = freeze(settings)
        self.hermes_home: Path = home
        self._llm: PluginLlm | None = None

    def __repr__(self) -> str:
        return f"<PluginContext plugin_id={self.plugin_id!r}>"

    @property
    def llm(self) -> PluginLlm:
        """This plugin's gated LLM client (`complete`, `complete_structured`, and their async forms)."""
        if self._llm is None:
            from ._llm.client import PluginLlm

            self._llm = PluginLlm(self.plugin_id, self._manager._llm_host())
        return self._llm

    def _call(self, label: str, action: Callable[[], Any]) -> Any:
        return tagged(label, action)

    def register_tool(
        self,
        name: str,
        toolset: str,
        schema: Mapping[str, Any],
        handler: Callable[..., Any],
        check_fn: Callable[[], Any] | None = None,
        requires_env: list[str] | tuple[str, ...] | None = None,
        is_async: bool = False,
        description: str = "",
        emoji: str = "",
        override: bool = False,
    ) -> None:
        """Register a tool; its schema is checked now, its arguments on every call."""
        tool = Tool(
            name, toolset, schema, handler, check_fn, requires_env or (), is_async, description, emoji, override,
            plugin_id=self.plugin_id,
        )
        self._call(f"ctx.register_tool({name!r})", lambda: self._manager._add_tool(self._record, tool))

    def register_command(self, name: str, handler: Callable[..., Any], description: str = "", args_hint: str = "") -> None:
        """Register a slash command; a clash with another command is a warning and this one is dropped."""
        command = Command(name, handler, description, args_hint, plugin_id=self.plugin_id)
        self._call(f"ctx.register_command({name!r})", lambda: self._manager._add_command(self._record, command))

    def register_hook(self, hook_name: str, callback: Callable[..., Any]) -> None:
        """Add `callback` to the lifecycle hook `hook_name`."""
        self._call(
            f"ctx.register_hook({hook_name!r})", lambda: self._manager._add_hook(self._record, hook_name, callback)
        )

    def register_provider(self, slot: str, provider: Any, *, name: str | None = None) -> None:
        """Offer `provider` (a class, factory or instance) in `slot`; only the config activates it."""
        self._call(
            f"ctx.register_provider({slot!r})",
            lambda: self._manager._add_provider(self._record, slot, provider, name),
        )

    def register_context_engine(self, engine: Any) -> None:
        """Offer a context engine; `context.engine` in config selects it by its `name`."""
        self.register_provider("context_engine", engine)

    def register_memory_provider(self, provider: Any) -> None:
        """Offer a memory provider; `memory.provider` in config selects it by its `name`."""
        self.register_provider("memory", provider)

    def dispatch_tool(self, name: str, args: Any, **kwargs: Any) -> str:
        """Run any registered tool, with the lifecycle hooks around it; returns its JSON string."""
        return self._manager.dispatch_tool(name, args, **kwargs)
