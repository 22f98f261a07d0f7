"""Loading plugins: importing one and running its registration as one transaction.

The `Loader` owns what loading produces: the record of every plugin, the pluggy instance, and
the registries (tools, commands, hooks, slots). A plugin registers through its `ctx`, which
talks to the plugin's `Registrar`: everything added is noted on the plugin's record with the
function that undoes it, so a plugin whose import or registration fails leaves nothing
behind. The `PluginManager` is the host's facade over a loader.
"""

from __future__ import annotations

import functools
import inspect
import logging
import time
import types
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Protocol

import attrs
import pluggy

from .. import config_keys as keys
from .. import hookspecs
from .._commands.cli import CliCommands
from .._commands.command import Command
from .._commands.registry import CommandRegistry
from .._config.config import Config
from .._ctx.auxiliary import AuxiliaryTasks
from .._ctx.capabilities import Capabilities
from .._ctx.context import PluginContext
from .._ctx.events import EventBus
from .._ctx.grants import granted
from .._ctx.prompt import PromptSections
from .._ctx.platforms import Platforms
from .._ctx.skills import Skills
from .._ctx.state import PluginState, state_url_of
from .._discovery.spec import Discovery, PluginSpec
from .._errors import PluginNotFoundError, RegistrationError, owner
from .._hermes import model_providers
from .._hermes import names as hermes_names
from .._hooks import hermes_api
from .._hooks.kept import HookCallLog
from .._hooks.runner import HookRunner
from .._runtime import interrupts, leftovers
from .._runtime.invoke import contained, describe_error, tagged
from .._slots.declarations import SlotDecl
from .._slots.registry import SlotRegistry
from .._store import StateUrl
from .._tools.checked import SchemaMemory
from .._tools.registry import ToolRegistry, time_limits
from .._tools.tool import Tool
from .._version import __version__
from .collector import MemoryCollector
from .importer import forget_module, import_plugin, module_label
from .record import LoadFailure, PluginRecord, discovery_failure, failure_of
from .registrar import Registrar

if TYPE_CHECKING:
    from .._llm.host import LlmHost

__all__ = ["Loader", "StandIns"]

log = logging.getLogger("hermes_core.plugins")


class StandIns(Protocol):
    """What stands in for a loader's plugins: lazy activation (`start` a plugin deferred or imported,
    `activate_all` the deferred ones) and process isolation (`isolate`). A host gives its loader
    hermes-core's (`_standins.StandIns`); without one, every plugin is imported at start, here."""

    def start(self, spec: PluginSpec) -> PluginRecord: ...
    def save(self) -> None: ...
    def activate_all(self, which: Callable[[dict[str, Any]], bool] = ...) -> None: ...
    def would_defer(self, record: PluginRecord) -> bool: ...
    def isolate(self, record: PluginRecord, config: Config) -> None: ...


class _Imported:
    """No stand-ins: each plugin imported at start, in this process (an isolated plugin's own process)."""

    def __init__(self, loader: Loader) -> None:
        self._loader = loader

    def start(self, spec: PluginSpec) -> PluginRecord:
        return self._loader.load(spec)

    def save(self) -> None:
        pass

    def activate_all(self, which: Callable[[dict[str, Any]], bool] = lambda remembered: True) -> None:
        pass

    def would_defer(self, record: PluginRecord) -> bool:
        return False

    def isolate(self, record: PluginRecord, config: Config) -> None:
        raise RegistrationError(f"{owner(record.id)} is to run in a process of its own (plugins.entries.{record.id}"
                                ".isolation: process), which this host does not do", plugin_id=record.id)


def _takes_ctx(function: Callable[..., Any]) -> bool:
    """Whether `function` has a parameter `ctx` that pluggy leaves out (one with a default)."""
    try:
        return "ctx" in inspect.signature(function).parameters
    except (TypeError, ValueError):
        return False


class _Pluggy(pluggy.PluginManager):
    """pluggy's manager, taught that a plain `register` function is a `register` hookimpl."""

    def parse_hookimpl_opts(self, plugin: Any, name: str) -> Any:
        opts = super().parse_hookimpl_opts(plugin, name)
        if opts is None and name == "register":
            method = getattr(plugin, name, None)
            if inspect.isfunction(method) or inspect.ismethod(method):
                return {}
        return opts


class Loader:
    """Loads plugins transactionally and owns what they registered.

    `config()` is the config loading reads (plugin settings, tool-override grants),
    `current_config()` the file as it is now;
    `dispatch` and `llm_host` are what a plugin's `ctx.dispatch_tool` and `ctx.llm` reach.
    `standins(loader)` makes what stands in for its plugins (`StandIns`): through it `sync` may
    defer a plugin until it is first needed, and `load` runs an isolated plugin in its process.
    """

    def __init__(
        self,
        *,
        home: Any,
        slots: Iterable[SlotDecl],
        config: Callable[[], Config],
        current_config: Callable[[], Config] | None = None,
        hook_timeout: Callable[[], float],
        dispatch: Callable[..., str],
        llm_host: Callable[[], LlmHost],
        standins: Callable[[Loader], StandIns] = _Imported,
    ) -> None:
        interrupts.install()  # so that a plugin raising KeyboardInterrupt is told from the user's Ctrl-C
        self.home = home
        self.records: dict[str, PluginRecord] = {}
        self.pluggy = _Pluggy(hookspecs.PROJECT_NAME)
        self.pluggy.add_hookspecs(hookspecs)
        self.slots = SlotRegistry(tuple(slots))
        self.tools = ToolRegistry(self.may_override, time_limits(config), SchemaMemory.of(home), gives_way=self.is_builtin)
        self.commands = CommandRegistry(lambda: config().read(keys.COMMANDS_TIMEOUT) or None)
        self.cli_commands = CliCommands()
        self.sections = PromptSections()
        self.skills = Skills()
        self.platforms = Platforms()
        self.events = EventBus()
        self.aux_tasks = AuxiliaryTasks()
        self.capabilities = Capabilities()
        self.hooks = HookRunner(hook_timeout, kept=HookCallLog(home) if home is not None else None)
        hermes_api.serving(self.hooks)  # what Hermes' module-level invoke_hook / has_hook reach
        self.dispatch = dispatch
        self.llm_host = llm_host
        self.config = config
        self.current_config = current_config or config  # config.yaml as it is now (ctx.get_config)
        self._registrars: dict[str, Registrar] = {}
        self._states: dict[str, PluginState] = {}
        self._state_url: StateUrl | None = None  # the home's state.url, read on the first ctx.state
        self._state_url_read = False
        self.standins = standins(self)
        self.standing_by: list[PluginSpec] = []  # Discovery.standing_by

    # -- loading and unloading -----------------------------------------------------------

    def load(self, spec: PluginSpec) -> PluginRecord:
        """Import a discovered plugin and run its registration; the record says how it went."""
        hermes_api.serving(self.hooks)
        record, _ = self.new_record(spec)
        known = discovery_failure(spec)
        if known is not None:
            record.status = "failed"
            record.failure = known
            return record
        problem = spec.incompatibility(__version__)
        if problem:
            record.status = "incompatible"
            record.failure = LoadFailure("IncompatibleError", problem, "requires_hermes")
            return record

        config = self.config()
        if spec.isolation_in(config) == "process":
            return self._transaction(record, "isolated", lambda: self.standins.isolate(record, config))

        def load() -> None:
            started = time.perf_counter()
            def keep(undo: Callable[[], None]) -> None:  # a change through Hermes' registry: its code's alone
                record.undos.append(undo)
                record.eager.append("Hermes' tool registry")

            loading = hermes_names.Loading(record.id, lambda: self._context(record), self.tools, keep, self.platforms)
            record.undos.append(lambda: model_providers.forget(record.id))
            with hermes_names.recording(loading) as used:
                try:
                    obj, module_name = import_plugin(spec)
                    record.import_ms = round((time.perf_counter() - started) * 1000, 3)
                    if module_name:
                        record.undos.append(lambda: forget_module(module_name))
                    self._register_object(record, obj)
                finally:
                    record.hermes_names = list(dict.fromkeys(used))

        hermes_names.install()
        return self._transaction(record, module_label(spec), load)

    def sync(self, specs: Iterable[PluginSpec], wanted: Callable[[PluginSpec], bool], *, retry: bool = False) -> None:
        """Load every wanted plugin of `specs` not loaded yet. With `retry`, first unload the
        plugins that failed or are no longer wanted, so they load afresh (host-added ones stay)."""
        specs = list(specs)
        if retry:
            keep = {spec.id for spec in specs if wanted(spec)}
            for record in list(self.records.values()):
                if record.status == "ok" and record.spec.source == "host":
                    continue
                if record.status != "ok" or record.id not in keep:
                    self.unload(record)
        for spec in specs:
            if spec.id not in self.records and wanted(spec):
                self.standins.start(spec)
        self.standins.save()

    def sync_discovery(self, discovery: Discovery, config: Config, *, retry: bool = False) -> list[str]:
        """`sync` what `config` enables of `discovery`; returns the problems to report: discovery's,
        and each name in `plugins.enabled` / `plugins.disabled` that no plugin has."""
        problems = list(discovery.problems)
        known = {name for spec in discovery.plugins for name in (spec.id, spec.name)}
        for key in (keys.PLUGINS_ENABLED, keys.PLUGINS_DISABLED):
            problems += [f"{key.name} names {name!r}, but no plugin has that id "
                         f"(discovered: {', '.join(sorted(discovery.ids)) or 'none'})"
                         for name in config.read(key) if name not in known]
        self.sync(discovery.plugins, lambda spec: spec.enablement(config, self.slots.declared)[0], retry=retry)
        self.standing_by = [spec for spec in discovery.standing_by(config) if spec.id not in self.records]
        return problems

    def add(self, plugin: Any, plugin_id: str, *, builtin: bool = False) -> PluginRecord:
        """Load an object the host holds (a module, a namespace, a `register(ctx)` function)."""
        if plugin_id in self.records:
            raise RegistrationError(f"a plugin with id {plugin_id!r} is already loaded; give this one another id",
                                    plugin_id=plugin_id)
        record, _ = self.new_record(PluginSpec(id=plugin_id, name=plugin_id, source="builtin" if builtin else "host"))
        return self._transaction(record, "add_plugin", lambda: self._register_object(record, plugin))

    def record(self, plugin_id: str) -> PluginRecord:
        """The record of plugin `plugin_id`; `PluginNotFoundError` when it was never loaded."""
        try:
            return self.records[plugin_id]
        except KeyError:
            raise PluginNotFoundError(
                f"plugin {plugin_id!r} was not loaded (loaded: {', '.join(self.records) or 'none'}); "
                "see `hermes plugins doctor`"
            ) from None

    def unload(self, record: PluginRecord) -> None:
        """Undo everything `record`'s plugin registered and forget it."""
        record.rollback()
        if record.module is not None and self.pluggy.is_registered(record.module):
            self.pluggy.unregister(record.module)
        self.records.pop(record.id, None)
        self._registrars.pop(record.id, None)

    def registrar(self, plugin_id: str) -> Registrar:
        """The registrar plugin `plugin_id`'s `ctx` talks to (stand-ins register through it too)."""
        return self._registrars[plugin_id]

    def new_record(self, spec: PluginSpec) -> tuple[PluginRecord, Registrar]:
        """A fresh record for `spec` (in the place of an earlier one of its id) and its registrar."""
        record = self.records[spec.id] = PluginRecord(spec)
        registrar = self._registrars[spec.id] = Registrar(self, record)
        return record, registrar

    def _transaction(self, record: PluginRecord, phase: str, action: Callable[[], None]) -> PluginRecord:
        """Run `action` for `record`: on any failure, undo everything it registered and
        record the failure (type, message, the call that failed); never raise but Ctrl-C."""
        try:
            with leftovers.noting(record.id):  # a thread it starts and leaves is named at exit
                action()
        except BaseException as exc:
            record.rollback()
            record.status = "failed"
            record.failure = failure_of(exc, phase)
            log.warning("%s failed to load: %s", owner(record.id), record.failure)
            contained(exc)  # the user's Ctrl-C goes on up, the plugin left failed
            return record
        record.status = "ok"
        if record.spec.source != "host":
            leftovers.note_module(record.id, getattr(record.module, "__name__", None))
        return record

    # -- registering a plugin object ------------------------------------------------------

    def _context(self, record: PluginRecord) -> PluginContext:
        if record.ctx is None:
            settings = self.config().read(keys.PLUGIN_SETTINGS, record.id)
            record.ctx = PluginContext(record.id, settings, self.home, self._registrars[record.id])
        return record.ctx

    def impls(self, hook: str, plugin: Any) -> list[Any]:
        """The implementations of `hook` that `plugin` (a registered object) provides."""
        return [impl for impl in getattr(self.pluggy.hook, hook).get_hookimpls() if impl.plugin is plugin]

    def _register_object(self, record: PluginRecord, obj: Any) -> None:
        if inspect.isfunction(obj):
            obj = types.SimpleNamespace(register=obj, __name__=getattr(obj, "__module__", record.id))
        record.module = obj
        ctx = self._context(record)
        if inspect.isclass(obj):
            self._register_slot_classes(record, [obj])
            return
        if isinstance(obj, types.ModuleType) and "register" not in vars(obj) and "__getattr__" in vars(obj):
            lazy = tagged("register", lambda: getattr(obj, "register", None))  # Hermes looks it up with getattr too
            if callable(lazy):
                obj.register = lazy  # type: ignore[attr-defined]  # where pluggy, which reads dir(), sees it
        tagged("pluggy.register", lambda: self.pluggy.register(obj, name=record.id))
        record.undos.append(lambda: self.pluggy.unregister(obj) if self.pluggy.is_registered(obj) else None)
        for caller in self.pluggy.get_hookcallers(obj) or []:
            if not caller.has_spec():
                record.warnings.append(f"plugin {record.id!r} implements unknown hook {caller.name!r}; it is never called")
        registrar = self._registrars[record.id]
        if self._slot_of(record) == "memory":  # registered as Hermes' memory loader lets it (see collector)
            ctx = MemoryCollector(ctx, record.id, record.warnings)  # type: ignore[assignment]
        for hook in hookspecs.REGISTRATION_HOOKS:
            for impl in self.impls(hook, obj):
                call = functools.partial(impl.function, *[{"ctx": ctx}[name] for name in impl.argnames])
                if "ctx" not in impl.argnames and _takes_ctx(impl.function):
                    call = functools.partial(impl.function, ctx=ctx)  # `register(ctx=None)`: Hermes passes ctx
                result = tagged(f"{hook}(ctx)", call)
                self._take_returned(record, registrar, hook, result)
        for hook in hookspecs.LIFECYCLE_HOOKS:
            for impl in self.impls(hook, obj):
                registrar.add_hook(hook, impl.function)
        if self._slot_of(record) and not record.registered.get("providers") \
                and not (record.spec.kind_guessed and record.registered):  # a guessed kind promises nothing
            members = [v for v in vars(obj).values() if inspect.isclass(v)] if isinstance(obj, types.ModuleType) else []
            own = [c for c in members if c.__module__ == obj.__name__ or c.__module__.startswith(obj.__name__ + ".")]
            self._register_slot_classes(record, own)
        profiles = model_providers.owned_by(record.id)  # `providers.register_provider(...)`, Hermes' way
        if profiles:
            record.registered["model_providers"] = profiles
        if not record.registered:
            hooked = bool(self.pluggy.get_hookcallers(obj))  # any @hookimpl: a plugin of hermes-core's own kind
            discovered = record.spec.path is not None or bool(record.spec.entry_point)  # as Hermes' loader finds one
            if discovered and isinstance(obj, types.ModuleType) and not callable(getattr(obj, "register", None)) \
                    and not hooked:
                raise RegistrationError(f"no register() function: plugin {record.id!r} defines no register(ctx) "
                                        "(nor a hook) and registered nothing at import; Hermes' loader needs one")
            if record.spec.source != "builtin":  # a built-in registers what the config asks for, maybe nothing
                record.warnings.append(f"plugin {record.id!r} loaded but registered nothing")

    def _slot_of(self, record: PluginRecord) -> str | None:
        """The slot `record`'s kind names, if its kind is a slot."""
        return record.spec.kind if any(d.name == record.spec.kind for d in self.slots.declared) else None

    def _register_slot_classes(self, record: PluginRecord, classes: list[type]) -> None:
        """A category plugin without `register`: the classes it defines that are its slot's providers."""
        slot = self._slot_of(record)
        bases = [(d, d.base_class()) for d in self.slots.declared if d.base is not None
                 and (slot is None or d.name == slot)]
        found = False
        for cls in classes:
            for decl, base in bases:
                if base is not None and issubclass(cls, base) and cls is not base and not inspect.isabstract(cls):
                    self._registrars[record.id].add_provider(decl.name, cls, None)
                    found = True
        if not found:
            raise RegistrationError(
                f"plugin {record.id!r} registered no {slot or 'slot'} provider: define register(ctx), "
                "or export a subclass of the slot's base class",
                plugin_id=record.id,
            )

    def _take_returned(self, record: PluginRecord, registrar: Registrar, hook: str, result: Any) -> None:
        """What a registration hook returned, registered as its spec says (`hookspecs.HOOKS`)."""
        returns = hookspecs.HOOKS[hook].returns
        if result is None or returns is None:
            return
        if returns not in ("tools", "commands"):
            tagged(f"{hook} → {returns} provider", lambda: registrar.add_provider(returns, result, None))
            return
        expected: type[Tool | Command] = Tool if returns == "tools" else Command
        items = [result] if isinstance(result, expected) or not isinstance(result, Iterable) else list(result)
        for item in items:
            if not isinstance(item, expected):
                raise RegistrationError(
                    f"{hook} of plugin {record.id!r} returned {item!r}; expected a {expected.__name__}, "
                    f"an iterable of them, or None",
                    plugin_id=record.id,
                )
            mine = attrs.evolve(item, plugin_id=record.id)
            add = functools.partial(registrar.add_tool, mine) if isinstance(mine, Tool) else \
                functools.partial(registrar.add_command, mine)
            tagged(f"{hook} → {expected.__name__}({mine.name!r})", add)

    # -- grants and the command line -------------------------------------------------------

    def state(self, plugin_id: str) -> PluginState:
        """Plugin `plugin_id`'s `ctx.state` (one object per plugin, so that its writes are serialised)."""
        if plugin_id not in self._states:
            if not self._state_url_read:  # read once: every plugin's state is in one place
                self._state_url, self._state_url_read = state_url_of(self.home, plugin_id), True
            self._states[plugin_id] = PluginState(self.home / "plugin-data" / plugin_id / "state.json", plugin_id,
                                                  url=self._state_url)
        return self._states[plugin_id]

    def is_builtin(self, plugin_id: str | None) -> bool:
        """Whether `plugin_id` ships with hermes-core (its tools give way to an enabled plugin's)."""
        record = self.records.get(plugin_id or "")
        return record is not None and record.spec.source == "builtin"

    def may_override(self, plugin_id: str | None) -> bool:
        """Whether `plugin_id` may replace another's tool: the host and built-ins may; a
        plugin needs `plugins.entries.<id>.allow_tool_override: true` (or `tools.override` in its
        `granted_capabilities`)."""
        record = self.records.get(plugin_id or "")
        if plugin_id is None or (record is not None and record.spec.source == "builtin"):
            return True
        return granted(self.config(), plugin_id, "tools.override")

    def granted(self, plugin_id: str, capability: str) -> bool:
        """Whether the operator granted `plugin_id` one of Hermes' capability ids."""
        return self.may_override(plugin_id) if capability == "tools.override" else granted(
            self.config(), plugin_id, capability)

    def extend_cli(self, cli: Any) -> list[str]:
        """Let loaded plugins add click commands to the group `cli` (`register_cli_commands`);
        returns warnings. A plugin whose hook raises keeps none of the commands it added."""
        self.standins.activate_all(lambda remembered: bool(remembered["cli_hooks"]))
        problems = []
        for record in list(self.records.values()):
            if record.status != "ok" or record.module is None:
                continue
            for hook in hookspecs.CLI_HOOKS:
                for impl in self.impls(hook, record.module):
                    before = set(cli.commands)
                    try:
                        impl.function(*[{"cli": cli, "ctx": record.ctx}[n] for n in impl.argnames])
                    except BaseException as exc:  # a plugin never takes the CLI down
                        contained(exc)
                        for name in set(cli.commands) - before:
                            cli.commands.pop(name, None)
                        problems.append(f"{hook} of {owner(record.id)} failed: {describe_error(exc)}")
        return problems

