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

from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from .lazy import Deferrals

if TYPE_CHECKING:
    from .._config.config import Config
    from .._loading.record import PluginRecord
    from .isolated import Isolates
    from .lazy import Loads

    class Loader(Loads, Isolates, Protocol):
        """What the stand-ins reach of their loader: lazy activation's part and isolation's."""

__all__ = ["StandIns"]


class StandIns(Deferrals):
    """A loader's stand-ins: lazy activation (`Deferrals`: with `lazy`, a plugin deferred until
    first needed), and a plugin set to `isolation: process` run in its process (`isolated`)."""

    def __init__(self, loader: Loader, home: Path, lazy: bool) -> None:
        super().__init__(loader, home, lazy)
        self._isolating = loader

    def save(self) -> None:
        """Write what was remembered of the plugins loaded since the last save."""
        self.memory.save()

    def isolate(self, record: PluginRecord, config: Config) -> None:
        """Run `record`'s plugin in a process of its own, stand-ins in the host (`isolated` is
        imported only then)."""
        from .isolated import isolate

        isolate(self._isolating, record, config)
