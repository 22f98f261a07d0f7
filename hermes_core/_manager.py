"""`PluginManager`: discover, load transactionally, and give hosts one API over it all."""

from __future__ import annotations

import inspect
import logging
import threading
import time
import types
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs
import pluggy

from . import _dispatch, hookspecs
from ._commands import CommandRegistry
from ._config import Config, ConfigWatcher, load_config
from ._context import PluginContext
from ._discovery import Discovery, PluginSpec, discover
from ._doctor import DoctorReport, build_report
from ._errors import CommandConflictError, HermesError, PluginNotFoundError, ProviderConflictError, RegistrationError
from ._hooks import HookRunner
from ._loader import forget_module, import_plugin, module_label
from ._paths import hermes_home
from ._plugin_record import LoadFailure, PluginRecord, failure_of, tagged
from ._records import Command, Tool
from ._slots import SlotProvider, SlotRegistry
from ._slots_decl import BUILTIN_SLOTS, SlotDecl
from ._tools import ToolInfo, ToolRegistry
from ._version import __version__

if TYPE_CHECKING:
    from ._llm.auxiliary import AgentLlm, AuxiliaryLlm
    from ._llm.host import LlmHost
    from ._session import AgentSession

__all__ = ["PluginManager"]

log = logging.getLogger("hermes_core.plugins")
Undo = Callable[[], None]
_SLOT_HOOKS = {"register_context_engine": "context_engine", "register_memory_provider": "memory"}


class _Pluggy(pluggy.PluginManager):
    """pluggy's manager, taught that a plain `register` function is a `register` hookimpl."""

    def parse_hookimpl_opts(self, plugin: Any, name: str) -> Any:
        opts = super().parse_hookimpl_opts(plugin, name)
        if opts is None and name == "register":
            method = getattr(plugin, name, None)
            if inspect.isfunction(method) or inspect.ismethod(method):
                return {}
        return opts


class PluginManager:
    """Discovers plugins, loads the enabled ones transactionally, and runs what they offer.

    >>> manager = PluginManager()          # nothing is imported yet
    >>> manager.load()                     # explicit, idempotent; dispatch/hooks load on demand
    >>> manager.dispatch_tool("text_stats", {"text": "a b"})
    """

    def __init__(
        self,
        *,
        home: Path | None = None,
        cwd: Path | None = None,
        slots: Iterable[SlotDecl] = (),
        project_plugins: bool | None = None,
        config: Config | None = None,
        discover_plugins: bool = True,
    ) -> None:
        self.home = home if home is not None else hermes_home()
        self._cwd = cwd
        self._project_plugins = project_plugins
        self._fixed_config = config
        self._discover_plugins = discover_plugins
        self.config: Config = config or Config({})
        self._lock = threading.RLock()
        self._loaded = False
        self._records: dict[str, PluginRecord] = {}
        self._discovery: Discovery | None = None
        self._slots = SlotRegistry((*BUILTIN_SLOTS, *slots))
        self._tools = ToolRegistry(self._may_override)
        self._commands = CommandRegistry()
        self._hooks = HookRunner(lambda: self.config.number("plugins.hook_callback_timeout", 30.0))
        self.pluggy = _Pluggy(hookspecs.PROJECT_NAME)
        self.pluggy.add_hookspecs(hookspecs)
        self.problems: list[str] = []
        self._llm: LlmHost | None = None
        self._default_session: AgentSession | None = None

    # -- the registries (loading first) ---------------------------------------------------

    @property
    def tools(self) -> ToolRegistry:
        self._ensure_loaded()
        return self._tools

    @property
    def commands(self) -> CommandRegistry:
        self._ensure_loaded()
        return self._commands

    @property
    def hooks(self) -> HookRunner:
        self._ensure_loaded()
        return self._hooks

    @property
    def slots(self) -> SlotRegistry:
        self._ensure_loaded()
        return self._slots

    def _ensure_loaded(self) -> None:
        if not self._loaded:
            self.load()

    # -- discovery and loading ----------------------------------------------------------

    def discover(self) -> Discovery:
        """Find every plugin (imports nothing); the same pass `hermes plugins list` uses."""
        if not self._discover_plugins:
            return Discovery(())
        return discover(
            home=self.home, cwd=self._cwd, slots=self._slots.declared, project_plugins=self._project_plugins
        )

    def _refresh_config(self) -> None:
        """Read config and check the keys the manager uses, so a bad value is a clear error
        at load time rather than a surprise when a hook first fires."""
        config = self._fixed_config or load_config(self.home)
        config.number("plugins.hook_callback_timeout", 30.0)
        config.string_list("plugins.enabled")
        config.string_list("plugins.disabled")
        config.section("plugins", "entries")
        self.config = config

    def load(self) -> PluginManager:
        """Load every enabled plugin not loaded yet. Idempotent; failed plugins stay failed
        until `reload()`. Raises `ConfigError` only for a malformed `config.yaml`."""
        with self._lock:
            self._loaded = True
            if self._discovery is None:
                self._refresh_config()
                self._discovery = self.discover()
                self._load_discovered()
            return self

    def reload(self) -> PluginManager:
        """Re-read config and plugins: retry failed ones, load newly enabled ones, unload
        the ones now disabled or gone."""
        self.close()
        with self._lock:
            self._loaded = True
            self._refresh_config()
            self._discovery = self.discover()
            wanted = {spec.id for spec in self._discovery.plugins if self._enabled(spec)}
            for record in list(self._records.values()):
                if record.status == "ok" and record.spec.source == "host":
                    continue
                if record.status != "ok" or record.id not in wanted:
                    self._unload(record)
            self._load_discovered()
            return self

    def _enabled(self, spec: PluginSpec) -> bool:
        return spec.enablement(self.config, self._slots.declared)[0]

    def _load_discovered(self) -> None:
        assert self._discovery is not None
        self.problems = list(self._discovery.problems)
        known = {name for spec in self._discovery.plugins for name in (spec.id, spec.name)}
        for key in ("plugins.enabled", "plugins.disabled"):
            for name in self.config.string_list(key):
                if name not in known:
                    self.problems.append(
                        f"{key} names {name!r}, but no plugin has that id "
                        f"(discovered: {', '.join(sorted(self._discovery.ids)) or 'none'})"
                    )
        for spec in self._discovery.plugins:
            if spec.id in self._records or not self._enabled(spec):
                continue
            self._load_spec(spec)

    def _unload(self, record: PluginRecord) -> None:
        record.rollback()
        if record.module is not None and self.pluggy.is_registered(record.module):
            self.pluggy.unregister(record.module)
        self._records.pop(record.id, None)

    def _load_spec(self, spec: PluginSpec) -> PluginRecord:
        record = PluginRecord(spec)
        self._records[spec.id] = record
        if spec.error:
            record.status = "failed"
            record.failure = LoadFailure("ManifestError", spec.error, "discovery")
            return record
        problem = spec.incompatibility(__version__)
        if problem:
            record.status = "incompatible"
            record.failure = LoadFailure("IncompatibleError", problem, "requires_hermes")
            return record

        def load() -> None:
            started = time.perf_counter()
            obj, module_name = import_plugin(spec)
            record.import_ms = round((time.perf_counter() - started) * 1000, 3)
            if module_name:
                record.undos.append(lambda: forget_module(module_name))
            self._register_object(record, obj)

        return self._transaction(record, module_label(spec), load)

    def _transaction(self, record: PluginRecord, phase: str, action: Callable[[], None]) -> PluginRecord:
        """Run `action` for `record`: on any failure, undo everything it registered and
        record the failure (type, message, the call that failed); never raise but Ctrl-C."""
        try:
            action()
        except BaseException as exc:
            record.rollback()
            record.status = "failed"
            record.failure = failure_of(exc, phase)
            log.warning("plugin %r failed to load: %s", record.id, record.failure)
            if isinstance(exc, KeyboardInterrupt):
                raise
            return record
        record.status = "ok"
        return record

    def add_plugin(self, plugin: Any, plugin_id: str, *, builtin: bool = False) -> PluginRecord:
        """Load an object you already hold (a module, a namespace, or a `register(ctx)` function)
        as plugin `plugin_id`, transactionally, as if it had been discovered."""
        with self._lock:
            if not self._loaded:
                self.load()
            if plugin_id in self._records:
                raise RegistrationError(f"a plugin with id {plugin_id!r} is already loaded", plugin_id=plugin_id)
            spec = PluginSpec(id=plugin_id, name=plugin_id, source="builtin" if builtin else "host")
            record = self._records[plugin_id] = PluginRecord(spec)
            return self._transaction(record, "add_plugin", lambda: self._register_object(record, plugin))

    def _context(self, record: PluginRecord) -> PluginContext:
        if record.ctx is None:
            settings = self.config.section("plugins", "entries", record.id).get("settings") or {}
            if not isinstance(settings, Mapping):
                raise RegistrationError(
                    f"plugins.entries.{record.id}.settings must be a mapping, not {settings!r}", plugin_id=record.id
                )
            record.ctx = PluginContext(self, record, settings, self.home)
        return record.ctx

    def _register_object(self, record: PluginRecord, obj: Any) -> None:
        if inspect.isfunction(obj):
            obj = types.SimpleNamespace(register=obj, __name__=getattr(obj, "__module__", record.id))
        record.module = obj
        ctx = self._context(record)
        if inspect.isclass(obj):
            self._register_slot_classes(record, [obj])
            return
        tagged("pluggy.register", lambda: self.pluggy.register(obj, name=record.id))
        record.undos.append(lambda: self.pluggy.unregister(obj) if self.pluggy.is_registered(obj) else None)
        for caller in self.pluggy.get_hookcallers(obj) or []:
            if not caller.has_spec():
                record.warnings.append(f"plugin {record.id!r} implements unknown hook {caller.name!r}; it is never called")
        for hook in hookspecs.REGISTRATION_HOOKS:
            for impl in self._impls(hook, obj):
                args = [{"ctx": ctx}[name] for name in impl.argnames]
                result = tagged(f"{hook}(ctx)", lambda impl=impl, args=args: impl.function(*args))
                if hook != "register":
                    self._take_returned(record, ctx, hook, result)
        for hook in hookspecs.LIFECYCLE_HOOKS:
            for impl in self._impls(hook, obj):
                record.note("hooks", hook, self._hooks.add(hook, impl.function, record.id))
        if record.spec.kind != "standalone" and not record.registered.get("providers"):
            members = [v for v in vars(obj).values() if inspect.isclass(v)] if isinstance(obj, types.ModuleType) else []
            self._register_slot_classes(record, [c for c in members if c.__module__ == obj.__name__])
        if not record.registered:
            record.warnings.append(f"plugin {record.id!r} loaded but registered nothing")

    def _impls(self, hook: str, plugin: Any) -> list[Any]:
        return [impl for impl in getattr(self.pluggy.hook, hook).get_hookimpls() if impl.plugin is plugin]

    def _register_slot_classes(self, record: PluginRecord, classes: list[type]) -> None:
        """A category plugin without `register`: the classes it defines that are its slot's providers."""
        slot = record.spec.kind if record.spec.kind != "standalone" else None
        decls = [d for d in self._slots.declared if d.base is not None and (slot is None or d.name == slot)]
        found = False
        for cls in classes:
            for decl in decls:
                if issubclass(cls, decl.base) and cls is not decl.base and not inspect.isabstract(cls):  # type: ignore[arg-type]
                    self._add_provider(record, decl.name, cls, None)
                    found = True
        if not found:
            raise RegistrationError(
                f"plugin {record.id!r} registered no {slot or 'slot'} provider: define register(ctx), "
                "or export a subclass of the slot's base class",
                plugin_id=record.id,
            )

    def _take_returned(self, record: PluginRecord, ctx: PluginContext, hook: str, result: Any) -> None:
        if result is None:
            return
        if hook in _SLOT_HOOKS:
            ctx.register_provider(_SLOT_HOOKS[hook], result)
            return
        expected = Tool if hook == "register_tool" else Command
        items = [result] if isinstance(result, expected) or not isinstance(result, Iterable) else list(result)
        for item in items:
            if not isinstance(item, expected):
                raise RegistrationError(
                    f"{hook} of plugin {record.id!r} returned {item!r}; expected a {expected.__name__}, "
                    f"an iterable of them, or None",
                    plugin_id=record.id,
                )
            item = attrs.evolve(item, plugin_id=record.id)
            if isinstance(item, Tool):
                ctx._call(f"{hook} → Tool({item.name!r})", lambda item=item: self._add_tool(record, item))
            else:
                ctx._call(f"{hook} → Command({item.name!r})", lambda item=item: self._add_command(record, item))

    # -- what ctx.register_* lands on -------------------------------------------------------

    def _may_override(self, plugin_id: str | None) -> bool:
        record = self._records.get(plugin_id or "")
        if record is not None and record.spec.source == "builtin":
            return True
        if plugin_id is None:
            return True
        return self.config.section("plugins", "entries", plugin_id).get("allow_tool_override") is True

    def _add_tool(self, record: PluginRecord, tool: Tool) -> None:
        record.note("tools", tool.name, self._tools.add(tool))

    def _add_command(self, record: PluginRecord, command: Command) -> None:
        try:
            record.note("commands", command.name, self._commands.add(command))
        except CommandConflictError as exc:
            log.warning("%s", exc)
            record.problems.append(str(exc))

    def _add_hook(self, record: PluginRecord, hook: str, callback: Callable[..., Any]) -> None:
        record.note("hooks", hook, self._hooks.add(hook, callback, record.id))

    def _add_provider(self, record: PluginRecord, slot: str, provider: Any, name: str | None) -> None:
        try:
            undo = self._slots.add(slot, provider, record.id, name=name)
        except ProviderConflictError as exc:
            log.warning("%s", exc)
            record.problems.append(str(exc))
            return
        label = next(p.name for p in self._slots.providers(slot) if p.provider is provider)
        record.note("providers", f"{slot}:{label}", undo)

    def _is_builtin(self, plugin_id: str | None) -> bool:
        record = self._records.get(plugin_id or "")
        return record is not None and record.spec.source == "builtin"

    def _llm_host(self) -> LlmHost:
        """The host side of every plugin's `ctx.llm`; it reads config.yaml afresh on each call."""
        with self._lock:
            if self._llm is None:
                from ._llm.host import LlmHost

                fixed = self._fixed_config
                read = (lambda: fixed) if fixed is not None else ConfigWatcher(self.home).current
                self._llm = LlmHost(self.home, read)
            return self._llm

    def auxiliary_llm(self, task: str) -> AuxiliaryLlm:
        """The host's LLM client for a side task (`auxiliary.<task>` in config, else the main
        model): what the built-in compressor summarises with. Not for plugins (they have `ctx.llm`)."""
        from ._llm.auxiliary import AuxiliaryLlm

        return AuxiliaryLlm(self._llm_host(), task)

    def agent_llm(self) -> AgentLlm:
        """The host's client for the agent loop's own requests (main model, fallback, tools)."""
        from ._llm.auxiliary import AgentLlm

        return AgentLlm(self._llm_host())

    # -- records ------------------------------------------------------------------------

    @property
    def records(self) -> list[PluginRecord]:
        """Every plugin the manager tried to load, in load order."""
        self._ensure_loaded()
        return list(self._records.values())

    def record(self, plugin_id: str) -> PluginRecord:
        self._ensure_loaded()
        try:
            return self._records[plugin_id]
        except KeyError:
            raise PluginNotFoundError(
                f"plugin {plugin_id!r} was not loaded (loaded: {', '.join(self._records) or 'none'})"
            ) from None

    def failures(self) -> dict[str, LoadFailure]:
        """The plugins that failed or are incompatible, with why."""
        return {r.id: r.failure for r in self.records if r.failure is not None}

    # -- running things -------------------------------------------------------------------

    def open_session(
        self, session_id: str | None = None, *, model: str | None = None, context_length: int | None = None,
        **kwargs: Any,
    ) -> AgentSession:
        """A new agent session: fresh instances of the selected context engine and memory
        provider, their tools next to the plugins', the calls a loop makes around each turn.

        `model` and `context_length` default to `model.model` and `model.context_length`
        (128,000). Raises `UnknownProviderError` when the config names an engine nothing
        provides. `kwargs` go to the engines' `on_session_start` / `initialize`.
        """
        from ._session import AgentSession

        return AgentSession(self, session_id, model=model, context_length=context_length, **kwargs)

    def default_session(self) -> AgentSession:
        """The session for tool calls made outside any agent session (`hermes tools call`, a
        plugin's `ctx.dispatch_tool` from a command): opened on first use, closed by `close()`
        and `reload()`. It is not a conversation: the plugins' session hooks do not fire for it."""
        with self._lock:
            self._ensure_loaded()
            if self._default_session is None:
                from ._session import AgentSession

                self._default_session = AgentSession(self, "default", announce=False)
            return self._default_session

    def close(self) -> None:
        """Close the default session (its engines' `on_session_end` and `shutdown`), if open."""
        with self._lock:
            session, self._default_session = self._default_session, None
        if session is not None:
            session.close()

    def tool_infos(self) -> list[ToolInfo]:
        """Every tool: the plugins' and the active engines' (see `default_session`)."""
        return self.default_session().tool_infos()

    def tool_schemas(self) -> list[dict[str, Any]]:
        """The OpenAI `tools` list of every available tool."""
        return self.default_session().tool_schemas()

    def dispatch_tool(self, name: str, args: Any, *, session_id: str = "", tool_call_id: str = "", **kwargs: Any) -> str:
        """Run a tool with the lifecycle hooks around it: `pre_tool_call` (block/modify),
        the handler, `post_tool_call`, `transform_tool_result`. Never raises.

        A plugin's tool runs here; an engine's tool runs in the default session.
        """
        if self.tools.get(name) is None:
            session = self._session_for(name)
            if session is not None:
                return session.dispatch_tool(name, args, tool_call_id=tool_call_id, **kwargs)
        return _dispatch.dispatch(self.hooks, self.tools, name, args, session_id, tool_call_id, kwargs)

    async def adispatch_tool(
        self, name: str, args: Any, *, session_id: str = "", tool_call_id: str = "", **kwargs: Any
    ) -> str:
        """`dispatch_tool` for async hosts."""
        if self.tools.get(name) is None:
            session = self._session_for(name)
            if session is not None:
                return await session.adispatch_tool(name, args, tool_call_id=tool_call_id, **kwargs)
        return await _dispatch.adispatch(self.hooks, self.tools, name, args, session_id, tool_call_id, kwargs)

    def _session_for(self, name: str) -> AgentSession | None:
        """The default session, if one of its engines has tool `name` (it is not a plugin's)."""
        try:
            session = self.default_session()
        except HermesError as exc:
            log.warning("engine tools are unavailable: %s", exc)
            return None
        return session if session.has_tool(name) else None

    def run_command(self, name: str, raw_args: str = "") -> str | None:
        """Run a slash command; raises `UnknownCommandError` or `CommandFailedError`."""
        return self.commands.run(name, raw_args)

    async def arun_command(self, name: str, raw_args: str = "") -> str | None:
        return await self.commands.arun(name, raw_args)

    def select(self, slot: str) -> SlotProvider | None:
        """The provider the config selects for `slot` (see `SlotRegistry.select`)."""
        return self.slots.select(slot, self.config)

    def create_provider(self, slot: str) -> Any:
        """A fresh instance of the selected provider of `slot`, for one agent session."""
        return self.slots.create(slot, self.config)

    def extend_cli(self, cli: Any) -> list[str]:
        """Let loaded plugins add click commands (`register_cli_commands`); returns warnings.

        A plugin whose hook raises keeps none of the commands it added.
        """
        problems = []
        for record in self.records:
            if record.status != "ok" or record.module is None:
                continue
            for impl in self._impls("register_cli_commands", record.module):
                before = set(cli.commands)
                try:
                    impl.function(*[{"cli": cli, "ctx": record.ctx}[n] for n in impl.argnames])
                except Exception as exc:  # noqa: BLE001 - a plugin never takes the CLI down
                    for name in set(cli.commands) - before:
                        cli.commands.pop(name, None)
                    problems.append(f"register_cli_commands of plugin {record.id!r} failed: {type(exc).__name__}: {exc}")
        return problems

    def doctor(self) -> DoctorReport:
        """Load everything enabled and report on it, as `hermes plugins doctor` does."""
        return build_report(self.records, self._slots, self.config, self.problems)
