"""What one plugin's `ctx` asks of the host, done under that plugin's id and noted on its record.

Every registration goes to the loader's registries with the function that undoes it, kept on
the plugin's record, so a plugin whose load fails (or that is unloaded) leaves nothing behind.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from .. import _redact
from .. import config_keys as keys
from .._commands.cli import CliCommand
from .._commands.command import Command
from .._ctx.auxiliary import AuxiliaryTask
from .._ctx.grants import VALID_CAPABILITY_IDS
from .._ctx.manifest import PluginManifest
from .._ctx.prompt import PromptSection
from .._ctx.state import PluginState
from .._errors import CommandConflictError, ProviderConflictError
from .._runtime.invoke import contained
from .._tools.tool import Tool
from .record import PluginRecord

if TYPE_CHECKING:
    from .._commands.cli import CliCommands
    from .._commands.registry import CommandRegistry
    from .._config.config import Config
    from .._ctx.auxiliary import AuxiliaryTasks
    from .._ctx.capabilities import Capabilities
    from .._ctx.events import EventBus
    from .._ctx.prompt import PromptSections
    from .._ctx.platforms import PlatformEntry, Platforms
    from .._ctx.skills import Skills
    from .._hooks.runner import HookRunner
    from .._llm.host import LlmHost
    from .._skills.library import SkillLibrary
    from .._slots.registry import SlotRegistry
    from .._tools.registry import ToolRegistry

__all__ = ["Loaded", "Registrar"]

log = logging.getLogger("hermes_core.plugins")


class Loaded(Protocol):
    """What a registrar reaches of its loader (a `Loader`): the registries it adds to, and the host
    services a ctx uses. Nothing else: in particular no other plugin's registrar."""

    @property
    def home(self) -> Path: ...
    @property
    def records(self) -> Mapping[str, PluginRecord]: ...
    @property
    def tools(self) -> ToolRegistry: ...
    @property
    def commands(self) -> CommandRegistry: ...
    @property
    def hooks(self) -> HookRunner: ...
    @property
    def slots(self) -> SlotRegistry: ...
    @property
    def cli_commands(self) -> CliCommands: ...
    @property
    def sections(self) -> PromptSections: ...
    @property
    def skills(self) -> Skills: ...
    @property
    def platforms(self) -> Platforms: ...
    @property
    def events(self) -> EventBus: ...
    @property
    def aux_tasks(self) -> AuxiliaryTasks: ...
    @property
    def capabilities(self) -> Capabilities: ...
    @property
    def dispatch(self) -> Callable[..., str]: ...
    @property
    def llm_host(self) -> Callable[[], LlmHost]: ...
    @property
    def current_config(self) -> Callable[[], Config]: ...
    def state(self, plugin_id: str) -> PluginState: ...
    def may_override(self, plugin_id: str | None) -> bool: ...
    def granted(self, plugin_id: str, capability: str) -> bool: ...


class Registrar:
    """What one plugin's `ctx` may ask of the host, always under that plugin's id; the
    `Registrar` protocol a `PluginContext` talks to."""

    __slots__ = ("_loader", "_record", "__weakref__")

    def __init__(self, loader: Loaded, record: PluginRecord) -> None:
        self._loader, self._record = loader, record

    def add_tool(self, tool: Tool) -> None:
        self._record.note("tools", tool.name, self._loader.tools.add(tool))

    def add_command(self, command: Command) -> None:
        try:
            self._record.note("commands", command.name, self._loader.commands.add(command))
        except CommandConflictError as exc:
            log.warning("%s", exc)
            self._record.problems.append(str(exc))

    def add_hook(self, hook: str, callback: Callable[..., Any]) -> None:
        self._record.note("hooks", hook, self._loader.hooks.add(hook, callback, self._record.id))

    def add_provider(self, slot: str, provider: Any, name: str | None) -> None:
        slots = self._loader.slots
        try:
            spec = self._record.spec
            undo = slots.add(slot, provider, self._record.id, name=name, builtin=spec.source == "builtin",
                             folder=spec.path.name if spec.path is not None else None)
        except ProviderConflictError as exc:
            log.warning("%s", exc)
            self._record.problems.append(str(exc))
            return
        label = next(p.name for p in slots.providers(slot) if p.provider is provider)
        self._record.note("providers", f"{slot}:{label}", undo)

    def dispatch_tool(self, name: str, args: Any, **kwargs: Any) -> str:
        return self._loader.dispatch(name, args, **kwargs)

    def llm_host(self) -> LlmHost:
        return self._loader.llm_host()

    def manifest(self) -> PluginManifest:
        spec = self._record.spec
        return PluginManifest({
            "key": spec.id, "name": spec.name, "version": spec.version, "description": spec.description,
            "author": spec.author, "kind": spec.kind, "source": spec.source,
            "path": str(spec.path) if spec.path is not None else None, "entry_point": spec.entry_point,
            "requires_env": list(spec.requires_env), "requires_hermes": spec.requires_hermes,
            **{f"provides_{kind}": list(names) for kind, names in spec.provides.items()},
        })

    def has_plugin(self, plugin_id: str) -> bool:
        record = self._loader.records.get(plugin_id)
        return record is not None and record.status in ("ok", "pending")

    def settings(self) -> Mapping[str, Any]:
        settings: Mapping[str, Any] = self._loader.current_config().read(keys.PLUGIN_SETTINGS, self._record.id)
        return settings

    def set_setting(self, key: str, value: Any) -> None:
        from .._ctx.settings import write_setting

        write_setting(self._loader.home, self._record.id, key, value)

    def state(self) -> PluginState:
        return self._loader.state(self._record.id)

    def add_cli_command(self, command: CliCommand) -> None:
        self._record.note("cli_commands", command.name, self._loader.cli_commands.add(command))

    def add_section(self, section: PromptSection) -> None:
        self._record.note("prompt_sections", section.id, self._loader.sections.add(section))

    def add_skill(self, name: str, path: Any, description: str) -> None:
        namespace = self._record.id
        if self._record.spec.portable:  # Hermes' namespace of a portable package's skills
            from .._skills.portable import skill_namespace

            namespace = skill_namespace(self._record.id)
        self._record.note("skills", f"{namespace}:{name}",
                          self._loader.skills.add(self._record.id, name, path, description, namespace=namespace))

    def skill_library(self, platform: str | None) -> SkillLibrary:
        from .._llm.request_hooks import current_turn
        from .._skills.library import SkillLibrary as Library

        if platform is None:
            platform = current_turn().platform
        return Library(self._loader.home, self._loader.current_config(), self._loader.skills.all(), platform=platform)

    def add_redaction_patterns(self, patterns: Iterable[Any]) -> None:
        patterns = list(patterns)
        undo = _redact.add_patterns(patterns, self._record.id)
        self._record.note("redaction_patterns", str(len(patterns)), undo)

    def subscribe(self, event: str, callback: Callable[..., Any]) -> None:
        self._record.note("subscriptions", event, self._loader.events.subscribe(self._record.id, event, callback))

    def emit(self, event: str, payload: Any) -> bool:
        return self._loader.events.emit(self._record.id, event, payload)

    def add_auxiliary_task(self, task: AuxiliaryTask) -> None:
        self._record.note("auxiliary_tasks", task.key, self._loader.aux_tasks.add(task))

    def add_platform(self, entry: PlatformEntry) -> None:
        self._record.note("platforms", entry.name, self._loader.platforms.add(entry))

    def add_slack_action(self, constraint: Any, callback: Callable[..., Any]) -> None:
        undo = self._loader.platforms.slack_actions.add(constraint, callback, self._record.id)
        self._record.note("slack_actions", repr(constraint), undo)

    def on_unload(self, callback: Callable[[], Any]) -> None:
        plugin_id = self._record.id

        def run() -> None:
            try:
                callback()
            except BaseException as exc:  # noqa: BLE001 - an unload callback never stops the unload
                contained(exc)
                log.warning("on_unload callback of plugin %r failed: %s: %s", plugin_id, type(exc).__name__, exc)

        self._record.undos.append(run)

    def spawn_task(self, coro: Any, *, name: str | None = None) -> Any:
        from .._ctx.tasks import spawn

        task, cancel = spawn(self._record.id, coro, name=name)
        self._record.undos.append(cancel)
        self._record.eager.append("ctx.spawn_task")
        return task

    def has_capability(self, capability: str) -> bool:
        if capability in VALID_CAPABILITY_IDS:  # a grant, by Hermes' id
            return self._loader.granted(self._record.id, capability)
        return self._loader.capabilities.served(capability) is not None

    def host_call(self, member: str, *args: Any, **kwargs: Any) -> Any:
        return self._loader.capabilities.call(self._record.id, member, *args, **kwargs)
