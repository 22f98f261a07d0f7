"""Where a host finds its plugins and its config: `HostSources`, the inputs of every load."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import attrs

from .._config.config import Config
from .._config.file import load_config
from .._slots.declarations import SlotDecl
from .discover import discover
from .spec import Discovery

__all__ = ["HostSources"]


@attrs.frozen
class HostSources:
    """A host's `home`; its `fixed` config (None: config.yaml under `home`, read afresh on each
    load); `cwd` and `project_plugins` for project plugins (None: the environment's flag);
    `discovering=False` for a host that adds its plugins itself (`add_plugin`)."""

    home: Path
    fixed: Config | None = None
    cwd: Path | None = None
    project_plugins: bool | None = None
    discovering: bool = True

    def config(self) -> Config:
        """The config a load reads now."""
        return self.fixed or load_config(self.home)

    def discover(self, slots: Iterable[SlotDecl]) -> Discovery:
        """Every plugin of these sources (imports nothing); the same pass `hermes plugins list` uses."""
        if not self.discovering:
            return Discovery(())
        return discover(home=self.home, cwd=self.cwd, slots=slots, project_plugins=self.project_plugins)
