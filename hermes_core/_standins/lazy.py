"""Lazy activation: a plugin imported when one of its tools or commands is first needed.

A lazy loader remembers what each plugin registered (`remembered`). At the next start, a plugin
whose remembered registrations are only tools, slash commands and CLI commands, under the same
key, is not imported: its tools (with their schemas) and commands are registered with `Deferred`
handlers, so listings, completions and the model's requests carry them as before. The first call
of one imports the plugin (`activate`) and runs it as if it had loaded at start: its real
registrations replace the stand-ins, with the same override gate, and the call goes on through
the same hooks. A plugin that fails to import then, or registers other than it did when
remembered, is left failed with its one-line failure, and forgotten: the next start imports it at
start. Everything else (hooks, providers, `ctx.spawn_task`, ...) needs the plugin imported at
start, and is.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from .. import config_keys as keys
from .. import hookspecs
from .._errors import PluginLoadError, owner
from .._loading.record import LoadFailure, PluginRecord, discovery_failure
from .._loading.registrar import Loaded, Registrar
from .._version import __version__
from .deferred import Deferred
from .fields import stand_in_command, stand_in_tool
from .remembered import RegistrationMemory, plugin_key, registrations

if TYPE_CHECKING:
    from .._config.config import Config
    from .._discovery.spec import PluginSpec

__all__ = ["Deferrals"]

log = logging.getLogger("hermes_core.plugins")


class Loads(Loaded, Protocol):
    """What lazy activation reaches of its loader (a `Loader`): its registries, and loading."""

    @property
    def config(self) -> Callable[[], Config]: ...
    def load(self, spec: PluginSpec) -> PluginRecord: ...
    def impls(self, hook: str, plugin: Any) -> list[Any]: ...
    def new_record(self, spec: PluginSpec) -> tuple[PluginRecord, Registrar]: ...


class Deferrals:
    """The lazy side of one loader: `start` a plugin (deferred or imported), `activate` a deferred one."""

    def __init__(self, loader: Loads, home: Path, enabled: bool) -> None:
        self._loader = loader
        self.enabled = enabled
        self.memory = RegistrationMemory(home if enabled else None)
        self._activating = threading.RLock()

    def may_defer(self, spec: PluginSpec) -> bool:
        """Whether `spec` may be imported when first needed: a lazy loader, and `plugins.lazy` and
        `plugins.entries.<id>.lazy` allow it."""
        config = self._loader.config()
        return self.enabled and config.read(keys.PLUGINS_LAZY) and config.read(keys.PLUGIN_LAZY, spec.id)

    def start(self, spec: PluginSpec) -> PluginRecord:
        """Load `spec`; or, when it may be deferred and its registrations are remembered under
        its key, register stand-ins for them and import it when one is first needed."""
        loader = self._loader
        if not self.enabled or discovery_failure(spec) is not None or spec.incompatibility(__version__):
            return loader.load(spec)
        key = plugin_key(spec, loader.config().read(keys.PLUGIN_SETTINGS, spec.id))
        remembered = self.memory.get(spec.id, key) if self.may_defer(spec) else None
        if remembered is not None and not remembered["at_start"]:
            deferred = self._defer(spec, remembered)
            if deferred is not None:
                return deferred
        record = loader.load(spec)  # (in the place of stand-ins that could not register, if any)
        self.memory.keep(spec.id, key, self.remembered(record))
        return record

    def remembered(self, record: PluginRecord) -> dict[str, Any] | None:
        """What `record`'s plugin registered, as it is remembered (None when it did not load)."""
        loader = self._loader
        cli_hooks = record.module is not None and any(loader.impls(hook, record.module) for hook in hookspecs.CLI_HOOKS)
        return registrations(record, loader.tools, loader.commands, cli_hooks)

    def would_defer(self, record: PluginRecord) -> bool:
        """Whether a start of this loader would import `record`'s plugin (imported now) when first needed."""
        remembered = self.remembered(record)
        return self.may_defer(record.spec) and remembered is not None and not remembered["at_start"]

    def _defer(self, spec: PluginSpec, remembered: dict[str, Any]) -> PluginRecord | None:
        """A record of `spec` whose stand-ins are registered; None when they could not be (a tool name
        another plugin has now, an override the operator no longer grants): it is imported instead."""
        loader = self._loader
        record, registrar = loader.new_record(spec)
        activate = functools.partial(self.activate, spec.id)

        def real_tool(name: str) -> Callable[..., Any]:
            tool = loader.tools.get(name)
            if tool is None or tool.plugin_id != spec.id:
                raise PluginLoadError(f"{owner(spec.id)} no longer registers tool {name!r}", plugin_id=spec.id)
            return tool.handler

        def real_command(name: str) -> Callable[..., Any]:
            command = loader.commands.get(name)
            if command is None or command.plugin_id != spec.id:
                raise PluginLoadError(f"{owner(spec.id)} no longer registers /{name}", plugin_id=spec.id)
            return command.handler

        def stand_in() -> None:
            for t in remembered["tools"]:
                handler = Deferred(activate, functools.partial(real_tool, t["name"]))
                registrar.add_tool(stand_in_tool(t, handler, spec.id, is_async=t["is_async"]))
            for c in remembered["commands"]:
                handler = Deferred(activate, functools.partial(real_command, c["name"]))
                registrar.add_command(stand_in_command(c, handler, spec.id))
            if remembered["cli_commands"]:
                record.registered["cli_commands"] = list(remembered["cli_commands"])
            record.warnings[:], record.hermes_names = list(remembered["warnings"]), list(remembered["hermes_names"])
            record.deferred = remembered

        try:
            stand_in()
        except Exception:  # noqa: BLE001 - the import that follows meets the same and says it
            record.problems.append("stand-ins refused")
        if record.problems:  # a command name another plugin has now, likewise
            record.rollback()
            return None
        record.status = "ok"
        return record

    def activate(self, plugin_id: str) -> None:
        """Import plugin `plugin_id` if it is lazy (once, whoever asks first); `PluginLoadError` when it
        fails to load or registers other than it did when remembered, which leaves it failed and
        forgotten, so that the next start imports it at start."""
        with self._activating:
            record = self._loader.records.get(plugin_id)
            if record is not None and record.deferred is None and record.status == "ok":
                return
            if record is None or record.deferred is None:
                why = f"failed to load: {record.failure}" if record is not None else "is not loaded"
                raise PluginLoadError(f"{owner(plugin_id)} {why}", plugin_id=plugin_id)
            remembered, record.deferred = record.deferred, None
            record.rollback()
            fresh = self._loader.load(record.spec)  # in the same place of `records`
            now = self.remembered(fresh) if fresh.status == "ok" else None
            if fresh.status == "ok" and now != remembered and fresh.spec.source == "builtin":
                # a built-in's tool gave its name to a plugin's since: hermes-core's own code did not change
                key = plugin_key(fresh.spec, self._loader.config().read(keys.PLUGIN_SETTINGS, plugin_id))
                self.memory.keep(plugin_id, key, now)
                self.memory.save()
            elif fresh.status == "ok" and now != remembered:
                fresh.rollback()
                fresh.status = "failed"
                fresh.failure = LoadFailure("RegistrationChanged", _changed(remembered, now), "lazy import")
                log.warning("%s failed to load: %s", owner(plugin_id), fresh.failure)
            if fresh.status != "ok":
                self.memory.forget(plugin_id)
                self.memory.save()
                raise PluginLoadError(f"{owner(plugin_id)} failed to load: {fresh.failure}", plugin_id=plugin_id)

    def activate_all(self, which: Callable[[dict[str, Any]], bool] = lambda remembered: True) -> None:
        """Import every lazy plugin whose remembered registrations are `which` (a failure stays on its record)."""
        for record in list(self._loader.records.values()):
            if record.deferred is not None and which(record.deferred):
                with contextlib.suppress(PluginLoadError):
                    self.activate(record.id)


def _changed(remembered: dict[str, Any], now: dict[str, Any] | None) -> str:
    """What a lazily imported plugin registered differently from its last import, in a line."""
    if now is None or now["at_start"]:
        why = "; ".join(now["at_start"]) if now is not None else "it failed"
        return f"unlike at its last import, it must now be imported at start ({why}); it is from now on"

    def names(memory: dict[str, Any]) -> list[str]:
        return sorted([t["name"] for t in memory["tools"]] + ["/" + c["name"] for c in memory["commands"]]
                      + [f"hermes {c}" for c in memory["cli_commands"]])

    before, after = names(remembered), names(now)
    if before == after:
        return "its tools' schemas, its commands' help or its warnings differ from its last import; it is imported " \
            "at start from now on"
    return f"it registered {', '.join(after) or 'nothing'} where its last import registered " \
        f"{', '.join(before) or 'nothing'}; it is imported at start from now on"
