"""`PluginManager`: the host's one API over discovery, loading and everything plugins offer."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pluggy

from . import _telemetry, config_keys as keys
from ._commands.cli import CliCommand
from ._commands.registry import CommandRegistry
from ._config.config import Config
from ._ctx.auxiliary import AuxiliaryTask
from ._ctx.events import EventBus
from ._ctx.platforms import Platforms
from ._ctx.skills import Skills
from ._discovery.sources import HostSources
from ._discovery.spec import Discovery
from ._hooks.calls import LifecycleHooks
from ._hooks.runner import HookRunner
from ._llm.clients import HostClients
from ._loading.doctor import DoctorReport, lifecycle_hooks, loader_report
from ._loading.facade import LoaderPart
from ._loading.loader import Loader
from ._loading.record import LoadFailure, PluginRecord
from ._mcp.host import host_servers
from ._paths import hermes_home
from ._session.default import DefaultSession
from ._slots.declarations import BUILTIN_SLOTS, SlotDecl
from ._slots.registry import SlotProvider, SlotRegistry
from ._standins import StandIns
from ._tools.registry import ToolRegistry
from ._tools.call import ToolOutcome
from ._tools.routing import ToolRouter
from ._tools.tool import ToolInfo

if TYPE_CHECKING:
    from ._llm.auxiliary import AgentLlm, AuxiliaryLlm
    from ._session.session import AgentSession
    from ._skills.library import SkillLibrary

__all__ = ["PluginManager"]


class PluginManager:
    """Discovers plugins, loads the enabled ones transactionally, and runs what they offer.

    >>> manager = PluginManager()          # nothing is imported yet
    >>> manager.load()                     # explicit, idempotent; dispatch/hooks load on demand
    >>> manager.dispatch_tool("text_stats", {"text": "a b"})

    With `lazy=True`, a plugin whose registrations at its last import were only tools and commands
    is imported when one of them is first needed (`plugins.lazy`; docs/writing-plugins.md).
    """

    def __init__(
        self, *, home: Path | None = None, cwd: Path | None = None, slots: Iterable[SlotDecl] = (),
        project_plugins: bool | None = None, config: Config | None = None, discover_plugins: bool = True,
        fired_hooks: Iterable[str] | None = None, lazy: bool = False,
    ) -> None:
        self.home = home if home is not None else hermes_home()
        self._sources = HostSources(self.home, config, cwd, project_plugins, discover_plugins)
        self.config: Config = config or Config({})
        self._hook_timeout = keys.HOOK_CALLBACK_TIMEOUT.default
        self._lock = threading.RLock()
        self._loaded = False
        self._discovery: Discovery | None = None
        self._llm = HostClients(self.home, config, lambda: self._lifecycle)
        self._loader = Loader(
            home=self.home, slots=(*BUILTIN_SLOTS, *slots), config=lambda: self.config,
            current_config=self._sources.config,
            hook_timeout=lambda: self._hook_timeout, dispatch=self.dispatch_tool, llm_host=self._llm.host,
            standins=lambda loader: StandIns(loader, self.home, lazy))
        self._lifecycle = LifecycleHooks(self._loader.hooks)
        self.mcp = host_servers(lambda: self._loader.tools, lambda: self.config, self.home, self._llm.host,
                                lambda: self.records)
        self._loader.capabilities.serve("mcp", self.mcp)
        self._router = ToolRouter(lambda: self.tools, lambda: self.lifecycle, self.default_session)
        self.problems: list[str] = []
        self._default = DefaultSession(lambda: self.load().open_session("default", announce=False))
        self._fired = lifecycle_hooks(fired_hooks) if fired_hooks is not None else None

    # -- the registries (loading first) ---------------------------------------------------

    @property
    def pluggy(self) -> pluggy.PluginManager:
        """The pluggy instance plugin objects are registered with (project name `hermes`)."""
        return self._loader.pluggy

    @property
    def tools(self) -> ToolRegistry:
        """Every tool: the plugins' and, once each has answered or failed once, the MCP servers'."""
        self._ensure_loaded()
        self.mcp.settle()
        return self._loader.tools

    commands = LoaderPart[CommandRegistry]("commands", "Every slash command plugins registered.")
    hooks = LoaderPart[HookRunner]("hooks", "The lifecycle hook callbacks of every plugin.")

    @property
    def lifecycle(self) -> LifecycleHooks:
        """The typed calls into the lifecycle hooks: `manager.lifecycle.post_llm_call(...).run()`."""
        self._ensure_loaded()
        return self._lifecycle

    slots = LoaderPart[SlotRegistry]("slots", "The single-select slots and the providers plugins registered.")

    def _ensure_loaded(self) -> None:
        if not self._loaded:
            self.load()

    def declare_fired_hooks(self, *hooks: str) -> None:
        """Say that this host fires the lifecycle hooks `hooks` (calls add up), so `doctor()` names registered
        hooks it never fires (see `hermes_core.agent.FIRED_HOOKS`); an unknown name is a `ValueError`."""
        self._fired = (self._fired or frozenset()) | lifecycle_hooks(hooks)

    @property
    def fired_hooks(self) -> frozenset[str] | None:
        """The lifecycle hooks this host declared it fires; None until it declares any."""
        return self._fired

    # -- discovery and loading ----------------------------------------------------------

    def discover(self) -> Discovery:
        """Find every plugin (imports nothing); the same pass `hermes plugins list` uses."""
        return self._sources.discover(self._loader.slots.declared)

    def load(self) -> PluginManager:
        """Load every enabled plugin not loaded yet. Idempotent; failed plugins stay failed
        until `reload()`. Raises `ConfigError` only for a malformed `config.yaml`."""
        with self._lock:
            self._loaded = True
            if self._discovery is None:
                self._sync(retry=False)
            return self

    def reload(self) -> PluginManager:
        """Re-read config and plugins: retry failed ones, load new ones, unload those now disabled or gone."""
        self.close()
        with self._lock:
            self._loaded = True
            self._sync(retry=True)
            return self

    def _sync(self, *, retry: bool) -> None:
        """Read config (a bad value of a key the manager uses is an error now), discover, load."""
        config = self._sources.config()
        self._hook_timeout = config.read(keys.HOOK_CALLBACK_TIMEOUT)
        config.read(keys.TOOLS_TIMEOUT), config.read(keys.COMMANDS_TIMEOUT), config.read(keys.PLUGIN_ENTRIES)
        self.config = config
        _telemetry.configure(config)
        self.mcp.configure(config)
        self._discovery = self.discover()
        self.problems = self._loader.sync_discovery(self._discovery, config, retry=retry)

    def add_plugin(self, plugin: Any, plugin_id: str, *, builtin: bool = False) -> PluginRecord:
        """Load an object you hold (a module, a namespace, a `register(ctx)`) as plugin `plugin_id`."""
        with self._lock:
            self._ensure_loaded()
            return self._loader.add(plugin, plugin_id, builtin=builtin)

    def remove_plugin(self, plugin_id: str) -> None:
        """Unload plugin `plugin_id` (its registrations, `ctx.on_unload` callbacks, tasks); `PluginNotFoundError`."""
        with self._lock:
            self._loader.unload(self.record(plugin_id))

    # -- what plugins add besides tools and engines ---------------------------------------

    def serve(self, capability: str, implementation: Any) -> None:
        """Declare that this host serves `capability` ("conversation", "approval", "subagents", ...; "mcp": `mcp`
        unless the host serves its own): ctx members needing it call `implementation.<member>(plugin_id, ...)`."""
        self._loader.capabilities.serve(capability, implementation)

    def prompt_sections(self, *, named: bool = False) -> dict[str, list[Any]]:
        """The plugins' prompt sections, rendered now, by position (once a session); `named`: (plugin, id, text)."""
        self._ensure_loaded()
        return self._loader.sections.render_named() if named else self._loader.sections.render()

    skills = LoaderPart[Skills]("skills", "The skill documents plugins registered (`<plugin>:<name>`).")

    def skill_library(self, platform: str = "") -> SkillLibrary:
        """The skills offered to an agent on `platform`: the home's and the plugins', less the disabled."""
        from ._skills.library import SkillLibrary

        self._ensure_loaded()
        return SkillLibrary(self.home, self.config, self.skills.all(), platform=platform)

    platforms = LoaderPart[Platforms]("platforms", "The messaging platforms plugins registered "
                                      "(`ctx.register_platform`; `hermes_core.gateway`).")
    events = LoaderPart[EventBus]("events", "The plugins' event bus (`manager.events.emit(None, "
                                  "\"hermes:...\", payload)` from the host).")

    auxiliary_tasks = LoaderPart[list[AuxiliaryTask]]("aux_tasks", "The `auxiliary.<key>` tasks plugins declared.",
                                                      lambda tasks: tasks.all())

    def get_slack_action_handlers(self) -> list[tuple[Any, Callable[..., Any], str]]:
        """`(action_id, callback, plugin id)` of each `ctx.register_slack_action_handler`, in order
        (Hermes' shape, for an adapter that wires them itself; the gateway's adapters get them
        through `BasePlatformAdapter.handle_slack_action`)."""
        return self.platforms.slack_actions.handlers()

    def auxiliary_llm(self, task: str) -> AuxiliaryLlm:
        """The host's LLM client for a side task (`auxiliary.<task>`, else the main model); not for plugins."""
        return self._llm.auxiliary(task)

    def agent_llm(self) -> AgentLlm:
        """The host's client for the agent loop's own requests (main model, fallback, tools)."""
        return self._llm.agent()

    records = LoaderPart[list[PluginRecord]]("records", "Every plugin the manager tried to load, in load order.",
                                             lambda records: list(records.values()))

    def record(self, plugin_id: str) -> PluginRecord:
        """What happened to plugin `plugin_id`; `PluginNotFoundError` when it was never loaded."""
        self._ensure_loaded()
        return self._loader.record(plugin_id)

    def failures(self) -> dict[str, LoadFailure]:
        """The plugins that failed or are incompatible, with why."""
        return {r.id: r.failure for r in self.records if r.failure is not None}

    # -- running things -------------------------------------------------------------------

    def open_session(self, session_id: str | None = None, *, model: str | None = None,
                     context_length: int | None = None, memory: bool = True, **kwargs: Any) -> AgentSession:
        """A new agent session with fresh instances of the selected engines (`model`, `context_length`: from config
        unless given; `memory=False`: none of the memory provider; `kwargs` go to their `on_session_start`)."""
        from ._session.session import AgentSession

        return AgentSession(self, session_id, model=model, context_length=context_length, memory=memory, **kwargs)

    def default_session(self) -> AgentSession:
        """The session of tool calls outside any agent session (opened on first use; no session hooks)."""
        return self._default.get()

    def close(self) -> None:
        """Close the default session (its engines' `on_session_end` and `shutdown`), if open."""
        self._default.close()

    def tool_infos(self) -> list[ToolInfo]:
        """Every tool: the plugins' and the active engines' (see `default_session`)."""
        return self.default_session().tool_infos()

    def tool_schemas(self) -> list[dict[str, Any]]:
        """The OpenAI `tools` list of every available tool."""
        return self.default_session().tool_schemas()

    def dispatch_tool(self, name: str, args: Any, *, session_id: str = "", tool_call_id: str = "",
                      **kwargs: Any) -> str:
        """Run a tool with `pre_tool_call`, `post_tool_call` and `transform_tool_result` around it. Never raises."""
        return self._router.dispatch(name, args, session_id=session_id, tool_call_id=tool_call_id, kwargs=kwargs)

    async def adispatch_tool(self, name: str, args: Any, *, session_id: str = "", tool_call_id: str = "",
                             **kwargs: Any) -> str:
        """`dispatch_tool` for async hosts."""
        return await self._router.adispatch(name, args, session_id=session_id, tool_call_id=tool_call_id,
                                            kwargs=kwargs)

    async def arun_tool(self, name: str, args: Any, *, session_id: str = "", tool_call_id: str = "") -> ToolOutcome:
        """`adispatch_tool` that also says whether a `pre_tool_call` hook blocked the call."""
        return await self._router.arun(name, args, session_id=session_id, tool_call_id=tool_call_id, kwargs={})

    def run_command(self, name: str, raw_args: str = "", *, session_key: str = "", platform: str = "cli") -> str | None:
        """Run a slash command after the plugins' `pre_command` hook; `UnknownCommandError`, `CommandFailedError`."""
        return self.commands.run(name, raw_args, hooks=self.lifecycle, session_key=session_key, platform=platform)

    async def arun_command(self, name: str, raw_args: str = "", *, session_key: str = "",
                           platform: str = "cli") -> str | None:
        """`run_command` for async hosts."""
        return await self.commands.arun(name, raw_args, hooks=self.lifecycle, session_key=session_key,
                                        platform=platform)

    def select(self, slot: str) -> SlotProvider | None:
        """The provider the config selects for `slot` (see `SlotRegistry.select`)."""
        return self.slots.select(slot, self.config)

    def create_provider(self, slot: str) -> Any:
        """A fresh instance of the selected provider of `slot`, for one agent session."""
        return self.slots.create(slot, self.config)

    def extend_cli(self, cli: Any) -> list[str]:
        """Let plugins add click commands to the click group `cli` (`register_cli_commands`); returns warnings."""
        self._ensure_loaded()
        return self._loader.extend_cli(cli)

    @property
    def cli_commands(self) -> list[CliCommand]:
        """The argparse-style commands plugins registered (`ctx.register_cli_command`): `hermes <name> ...`."""
        self._ensure_loaded()
        self._loader.standins.activate_all(lambda remembered: bool(remembered["cli_commands"]))
        return self._loader.cli_commands.all()

    def doctor(self) -> DoctorReport:
        """Load and import everything enabled and report on it, as `hermes plugins doctor` does (with `lazy`, a
        plugin this host imports when first needed is marked so)."""
        return loader_report(self.load()._loader, self.config, self.problems, self._fired)
