"""Which of the plugins' tools a host offers: `ToolSelection`, by tool name, toolset or plugin.

>>> selection = ToolSelection(tools=("web_*",), plugins=("notes",))
>>> [info.name for info in manager.tool_infos() if selection.wants(info)]
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import attrs

if TYPE_CHECKING:
    from hermes_core import Config, ToolInfo

__all__ = ["ToolSelection"]


def _patterns(value: Iterable[str]) -> tuple[str, ...]:
    return (value,) if isinstance(value, str) else tuple(value)


def _matches(value: str | None, patterns: tuple[str, ...]) -> bool:
    return any(fnmatch.fnmatchcase(value or "", pattern) for pattern in patterns)


@attrs.frozen
class ToolSelection:
    """The tools a host offers: all of them when nothing is given, else each tool whose name
    matches a pattern of `tools`, whose toolset matches one of `toolsets` or whose plugin matches
    one of `plugins` (shell-style globs: `*`, `?`, `[...]`; a plain name matches itself)."""

    tools: tuple[str, ...] = attrs.field(default=(), converter=_patterns)
    toolsets: tuple[str, ...] = attrs.field(default=(), converter=_patterns)
    plugins: tuple[str, ...] = attrs.field(default=(), converter=_patterns)

    @property
    def everything(self) -> bool:
        """Whether nothing narrows it: every tool is offered."""
        return not (self.tools or self.toolsets or self.plugins)

    def wants(self, info: ToolInfo) -> bool:
        """Whether the tool `info` describes is offered."""
        return self.everything or _matches(info.name, self.tools) or _matches(info.toolset, self.toolsets) \
            or _matches(info.plugin, self.plugins)

    @classmethod
    def of_key(cls, config: Config, name: str) -> ToolSelection | None:
        """The tools the API server's named key `name` offers its agent (`api_server.keys.<name>.tools`
        and `.plugins`), None when no such key is configured: what a cron job that key made may use."""
        from hermes_core import config_keys as keys

        named: Mapping[str, Any] = config.read(keys.API_SERVER_KEYS)
        if name not in [str(key) for key in named]:
            return None
        tools: list[str] = config.read(keys.API_KEY_TOOLS, name)
        plugins: list[str] = config.read(keys.API_KEY_PLUGINS, name)
        return cls(tools=tuple(tools), plugins=tuple(plugins))

    def names(self, infos: Iterable[ToolInfo]) -> frozenset[str] | None:
        """The names of the tools of `infos` it offers; None when it offers every tool."""
        return None if self.everything else frozenset(info.name for info in infos if self.wants(info))

    def unmatched(self, infos: Iterable[ToolInfo]) -> list[str]:
        """What was asked for that no tool of `infos` has, one phrase each (`tool 'x'`, `toolset 'y'`,
        `plugin 'z'`): a host refuses or warns with it."""
        infos = list(infos)
        missing = [f"tool {p!r}" for p in self.tools if not any(_matches(i.name, (p,)) for i in infos)]
        missing += [f"toolset {p!r}" for p in self.toolsets if not any(_matches(i.toolset, (p,)) for i in infos)]
        missing += [f"plugin {p!r}" for p in self.plugins if not any(_matches(i.plugin, (p,)) for i in infos)]
        return missing
