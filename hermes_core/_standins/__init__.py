"""What stands in for a real registration, in one place.

- lazy activation: a plugin whose last import registered only tools and commands is not imported
  at start; its tools and commands are registered from what was remembered (`remembered`) with
  `Deferred` handlers (`deferred`), and the first call imports it (`lazy`);
- process isolation: a plugin runs in a child process (`child`, run as `python -m
  hermes_core._standins.child`), and the host registers stand-ins that send each call there
  (`isolated`);
- MCP servers: each tool a server lists is registered as a stand-in whose call goes to the server
  (`hermes_core._mcp.servers`, built from `fields`).

`kinds` is the one table of which registration kinds lazy activation and isolation can stand in
for; `fields` turns a registered tool or command into plain data and back into a stand-in, and
holds `Unavailable`, a stand-in's "cannot run now, because". `StandIns` is what a host's loader
is given (`_loading.loader.StandIns`): the manager gives every loader one.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from .._config.config import Config
    from .._discovery.spec import PluginSpec
    from .._loading.record import PluginRecord
    from .isolated import Isolates
    from .lazy import Loads

    class Loader(Loads, Isolates, Protocol):
        """What the stand-ins reach of their loader: lazy activation's part and isolation's."""

__all__ = ["StandIns"]


class StandIns:
    """A loader's stand-ins: with `lazy`, plugins deferred until first needed (`lazy.Deferrals`);
    plugins set to `isolation: process`, run in their processes (`isolated.isolate`)."""

    def __init__(self, loader: Loader, home: Path, lazy: bool) -> None:
        from .lazy import Deferrals

        self._loader = loader
        self.deferrals = Deferrals(loader, home, lazy)

    def start(self, spec: PluginSpec) -> PluginRecord:
        """Load `spec`, or stand in for it until it is first needed."""
        return self.deferrals.start(spec)

    def save(self) -> None:
        """Write what was remembered of the plugins loaded since the last save."""
        self.deferrals.memory.save()

    def activate_all(self, which: Callable[[dict[str, Any]], bool] = lambda remembered: True) -> None:
        """Import every deferred plugin whose remembered registrations are `which`."""
        self.deferrals.activate_all(which)

    def would_defer(self, record: PluginRecord) -> bool:
        """Whether a start would import `record`'s plugin (imported now) only when first needed."""
        return self.deferrals.would_defer(record)

    def isolate(self, record: PluginRecord, config: Config) -> None:
        """Run `record`'s plugin in a process of its own, stand-ins in the host."""
        from .isolated import isolate

        isolate(self._loader, record, config)
