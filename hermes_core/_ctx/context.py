"""`PluginContext`: the one object a plugin uses to talk to the host, bound to its id.

A `ctx` holds the plugin's id, logger, settings and home, and nothing else: what it registers
goes to the plugin's `Registrar`, which the ctx finds in a table private to this module. So
no attribute of `ctx` (nor of anything it holds) leads to the manager, a registry, the pluggy
instance or another plugin's registrations; a plugin that looks for one gets a clear error.
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import Awaitable, Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, ContextManager

from .. import _telemetry
from .._commands.cli import CliCommand
from .._commands.command import Command
from .._errors import RegistrationError
from .._llm.results import freeze
from .._runtime.invoke import tagged
from .._runtime.progress import report_progress
from .._runtime.workspace import Workspace, current_workspace
from .._tools.tool import Tool
from .auxiliary import AuxiliaryTask
from .capabilities import UNSERVED, Unserved
from .platforms import PlatformEntry, platform_entry, slack_constraint
from .prompt import PromptSection
from .registrar import Registrar

if TYPE_CHECKING:
    from .._llm.client import PluginLlm
    from .._skills.library import SkillLibrary
    from .manifest import PluginManifest
    from .state import PluginState

__all__ = ["PluginContext", "Registrar"]


# Each ctx's registrar, out of reach of the ctx's attributes. Weak both ways: the loader owns the
# registrar and the plugin's record owns its ctx, so a ctx never keeps a manager the host dropped
# (nor a plugin that keeps its ctx in a module global, a manager of every test) alive.
_registrars: weakref.WeakKeyDictionary[PluginContext, weakref.ref[Registrar]] = weakref.WeakKeyDictionary()


class PluginContext:
    """What a plugin may do, always under its own id.

    Registration methods record what they add, so that a plugin whose loading fails leaves
    nothing behind. `ctx.config` is the read-only `plugins.entries.<id>.settings` mapping.
    """

    __slots__ = ("_llm", "plugin_id", "logger", "config", "hermes_home", "__weakref__")

    def __init__(self, plugin_id: str, settings: Mapping[str, Any], home: Path, registrar: Registrar) -> None:
        self.plugin_id: str = plugin_id
        self.logger = logging.getLogger(f"hermes.plugins.{plugin_id}")
        self.config: Mapping[str, Any] = freeze(settings)
        self.hermes_home: Path = home
        self._llm: PluginLlm | None = None
        _registrars[self] = weakref.ref(registrar)

    def __repr__(self) -> str:
        return f"<PluginContext plugin_id={self.plugin_id!r}>"

    def __getattr__(self, name: str) -> Any:
        members = ", ".join(sorted(n for n in dir(type(self)) if not n.startswith("_")))
        raise AttributeError(
            f"'PluginContext' object has no attribute {name!r}: a plugin reaches the host only through "
            f"ctx's public members ({members}); nothing on ctx leads to the manager, the registries or "
            "another plugin (see docs/ctx.md)"
        )

    def _host(self, call: str) -> Registrar:
        ref = _registrars.get(self)
        registrar = ref() if ref is not None else None
        if registrar is None:
            raise RegistrationError(
                f"{call} of plugin {self.plugin_id!r} was refused: the plugin is no longer loaded (it was "
                "unloaded by a reload, or its manager is gone); use the ctx it gets when it loads again, and "
                "keep the PluginManager while its plugins run",
                plugin_id=self.plugin_id,
            )
        return registrar

    @property
    def llm(self) -> PluginLlm:
        """This plugin's gated LLM client (`complete`, `complete_structured`, and their async forms)."""
        if self._llm is None:
            from .._llm.client import PluginLlm

            self._llm = PluginLlm(self.plugin_id, self._host("ctx.llm").llm_host())
        return self._llm

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
        call = f"ctx.register_tool({name!r})"
        tool = Tool(
            name, toolset, schema, handler, check_fn, requires_env or (), is_async, description, emoji, override,
            plugin_id=self.plugin_id,
        )
        tagged(call, lambda: self._host(call).add_tool(tool))

    def register_command(
        self, name: str, handler: Callable[..., Any], description: str = "", args_hint: str = "",
        argument_mode: str | None = None,
    ) -> None:
        """Register a slash command; a clash with another command is a warning and this one is dropped.
        `argument_mode`: "raw" (the default: the handler gets the text after the command), "none"
        (the command takes no arguments) or "required" (it needs some); Hermes' "text", "options"
        and "mixed" hand the handler that text too."""
        call = f"ctx.register_command({name!r})"
        command = Command(name, handler, description, args_hint, plugin_id=self.plugin_id,
                          argument_mode=argument_mode or "raw")
        tagged(call, lambda: self._host(call).add_command(command))

    def register_cli_command(
        self, name: str, help: str, setup_fn: Callable[[Any], Any] | None,  # noqa: A002 - Hermes' name
        handler_fn: Callable[[Any], Any] | None = None, description: str = "",
    ) -> None:
        """Add `hermes <name> ...`: `setup_fn(parser)` adds arguments to an argparse parser,
        `handler_fn(args)` runs the command (its int return is the exit code)."""
        call = f"ctx.register_cli_command({name!r})"
        command = CliCommand(name, help, setup_fn, handler_fn, description, self.plugin_id)
        tagged(call, lambda: self._host(call).add_cli_command(command))

    def register_hook(self, hook_name: str, callback: Callable[..., Any]) -> None:
        """Add `callback` to the lifecycle hook `hook_name`."""
        call = f"ctx.register_hook({hook_name!r})"
        tagged(call, lambda: self._host(call).add_hook(hook_name, callback))

    def register_provider(self, slot: str, provider: Any, *, name: str | None = None) -> None:
        """Offer `provider` (a class, factory or instance) in `slot`; only the config activates it."""
        self._offer(slot, provider, name, f"ctx.register_provider({slot!r})")

    def _offer(self, slot: str, provider: Any, name: str | None, call: str) -> None:
        """`register_provider` under the name the plugin called it by (errors quote `call`)."""
        tagged(call, lambda: self._host(call).add_provider(slot, provider, name))

    def register_context_engine(self, engine: Any) -> None:
        """Offer a context engine; `context.engine` in config selects it by its `name`."""
        self._offer("context_engine", engine, None, "ctx.register_context_engine()")

    def register_memory_provider(self, provider: Any) -> None:
        """Offer a memory provider; `memory.provider` in config selects it by its `name`."""
        self._offer("memory", provider, None, "ctx.register_memory_provider()")

    def register_image_gen_provider(self, provider: Any) -> None:
        """Offer an image generation backend in the `image_gen` slot (Hermes' name); `image_gen.provider` selects it."""
        self._offer("image_gen", provider, None, "ctx.register_image_gen_provider()")

    def register_video_gen_provider(self, provider: Any) -> None:
        """Offer a video generation backend in the `video_gen` slot (Hermes' name); `video_gen.provider` selects it."""
        self._offer("video_gen", provider, None, "ctx.register_video_gen_provider()")

    def register_web_search_provider(self, provider: Any) -> None:
        """Offer a web search / extract backend in the `web_search` slot (Hermes' name); `web_search.provider` selects it."""
        self._offer("web_search", provider, None, "ctx.register_web_search_provider()")

    def register_browser_provider(self, provider: Any) -> None:
        """Offer a cloud browser backend in the `browser` slot (Hermes' name); `browser.provider` selects it."""
        self._offer("browser", provider, None, "ctx.register_browser_provider()")

    def register_tts_provider(self, provider: Any) -> None:
        """Offer a text-to-speech backend in the `tts` slot (Hermes' name); `tts.provider` selects it."""
        self._offer("tts", provider, None, "ctx.register_tts_provider()")

    def register_transcription_provider(self, provider: Any) -> None:
        """Offer a speech-to-text backend in the `transcription` slot (Hermes' name); `transcription.provider` selects it."""
        self._offer("transcription", provider, None, "ctx.register_transcription_provider()")

    def register_terminal_environment_provider(self, provider: Any) -> None:
        """Offer a terminal execution backend in the `terminal_environment` slot (Hermes' name); `terminal_environment.provider` selects it."""
        self._offer("terminal_environment", provider, None, "ctx.register_terminal_environment_provider()")

    def register_secret_source(self, source: Any) -> None:
        """Offer a secret source in the `secret_source` slot (Hermes' name); `secret_source.provider` selects it."""
        self._offer("secret_source", source, None, "ctx.register_secret_source()")

    def dispatch_tool(self, name: str, args: Any, **kwargs: Any) -> str:
        """Run any registered tool, with the lifecycle hooks around it; returns its JSON string."""
        return self._host("ctx.dispatch_tool").dispatch_tool(name, args, **kwargs)

    # -- the plugin itself -----------------------------------------------------------------

    @property
    def manifest(self) -> PluginManifest:
        """What this plugin was discovered as: its plugin.yaml fields (or its entry point's), read-only."""
        return self._host("ctx.manifest").manifest()

    @property
    def profile_name(self) -> str:
        """The Hermes profile this host runs as, as Hermes answers: "default" for the root, `<name>`
        for `<root>/profiles/<name>`, "custom" for another folder under `~/.hermes`."""
        from .._profiles.names import profile_of

        return profile_of(Path(self.hermes_home))

    def has_plugin(self, plugin_id: str) -> bool:
        """Whether the plugin `plugin_id` is loaded (and did not fail)."""
        return self._host("ctx.has_plugin").has_plugin(plugin_id)

    def get_config(self, key: str, default: Any = None) -> Any:
        """This plugin's setting `key` (dotted for nesting) from `plugins.entries.<id>.settings`,
        as config.yaml has it now; `default` when unset."""
        node: Any = self._host("ctx.get_config").settings()
        for part in str(key).split("."):
            if not isinstance(node, Mapping) or part not in node:
                return default
            node = node[part]
        return node

    def set_config(self, key: str, value: Any) -> None:
        """Write this plugin's setting `key` (dotted for nesting) into config.yaml, atomically,
        keeping the file's comments and layout."""
        call = f"ctx.set_config({key!r})"
        tagged(call, lambda: self._host(call).set_setting(key, value))

    @property
    def workspace(self) -> Workspace | None:
        """The running turn's folder (`hermes acp`: the editor's project) or None: `hosting.Workspace`."""
        return current_workspace()

    def report_progress(self, progress: float, total: float | None = None, message: str = "") -> bool:
        """From a running tool: how far it is (`progress` of `total`, a `message`), shown by the
        host where it can (an MCP client's progress, an editor's tool call); whether anyone listens."""
        return report_progress(progress, total, message)

    def trace_span(self, name: str, **attributes: Any) -> ContextManager[Any]:
        """`with ctx.trace_span("index", files=3) as span:` a span of this plugin's own under the current
        one (a tool call's, a hook's), where export is on; `span.set(key, value)`, `span.event(name)`."""
        return _telemetry.span(name, self.plugin_id, **attributes)

    @property
    def state(self) -> PluginState:
        """This plugin's durable key-value store (JSON values, at most 10 MB)."""
        return self._host("ctx.state").state()

    def on_unload(self, callback: Callable[[], Any]) -> None:
        """Call `callback()` when this plugin is unloaded (a reload, a failed load, the host closing)."""
        if not callable(callback):
            raise RegistrationError("ctx.on_unload: the callback is not callable", plugin_id=self.plugin_id)
        self._host("ctx.on_unload").on_unload(callback)

    def spawn_task(self, coro: Awaitable[Any], *, name: str | None = None) -> Any:
        """Run `coro` in the background, its failure logged, cancelled on unload; returns its task
        (named `name`, else `plugin:<id>:task`, as in Hermes)."""
        return self._host("ctx.spawn_task").spawn_task(coro, name=name)

    def has_capability(self, capability: str) -> bool:
        """Whether this host serves `capability` ("gateway", "mcp", ...) or granted it ("tools.override")."""
        return self._host("ctx.has_capability").has_capability(capability)

    # -- the agent's prompt, skills, secrets, events -------------------------------------------

    def register_system_prompt_section(
        self, id: str, content: str | Callable[[], Any], *,  # noqa: A002 - Hermes' name
        position: str = "after_memory", max_chars: int = 4000,
    ) -> None:
        """Add text to the agent's system prompt (at most `max_chars` ≤ 4,000 characters; all
        plugins' sections together at most 8,000 and 32); callable content is rendered once
        per session. `position`: "before_memory", "after_memory" or "end"."""
        call = f"ctx.register_system_prompt_section({id!r})"
        section = PromptSection(self.plugin_id, id, content, position, max_chars)
        tagged(call, lambda: self._host(call).add_section(section))

    def register_skill(self, name: str, path: Path | str, description: str = "",
                       frontmatter: Mapping[str, Any] | None = None) -> None:
        """Offer the skill document at `path` (a `pathlib.Path` or a `str`) as `<plugin id>:<name>`, read-only."""
        call = f"ctx.register_skill({name!r})"
        tagged(call, lambda: self._host(call).add_skill(name, path, description))

    def skill_library(self, platform: str | None = None) -> SkillLibrary:
        """The skills the agent is offered on `platform` (None: the current turn's), the home's and the
        plugins', as Hermes' `skills_list` and `skill_view` see them (`hermes_core.SkillLibrary`)."""
        return self._host("ctx.skill_library()").skill_library(platform)

    def register_redaction_patterns(self, patterns: Iterable[Any]) -> None:
        """Regular expressions for this plugin's secret shapes: masked wherever hermes-core redacts."""
        call = "ctx.register_redaction_patterns"
        tagged(call, lambda: self._host(call).add_redaction_patterns(list(patterns)))

    def emit(self, event: str, payload: Any = None) -> bool:
        """Send `<plugin id>:<event>` to its subscribers, in the background; whether it was queued."""
        return self._host("ctx.emit").emit(event, payload)

    def subscribe(self, event: str, callback: Callable[[str, Any], Any]) -> None:
        """Call `callback(event, payload)` for every `event` ("<plugin id>:<name>", or "*")."""
        call = f"ctx.subscribe({event!r})"
        tagged(call, lambda: self._host(call).subscribe(event, callback))

    def register_auxiliary_task(
        self, key: str, *, display_name: str, description: str, defaults: Mapping[str, Any] | None = None,
    ) -> None:
        """Declare this plugin's own side LLM task `auxiliary.<key>`, which the operator configures
        like the built-in ones; `defaults` are what the plugin suggests (`manager.auxiliary_tasks`)."""
        call = f"ctx.register_auxiliary_task({key!r})"
        task = AuxiliaryTask(key, display_name, description, defaults or {}, self.plugin_id)
        tagged(call, lambda: self._host(call).add_auxiliary_task(task))

    # -- what only a gateway, an approval UI or a dashboard can serve ---------------------------

    def _unserved(self, member: str, *args: Any, **kwargs: Any) -> Any:
        return self._host(f"ctx.{member}").host_call(member, *args, **kwargs)

    def register_platform(
        self, name: str, label: str, adapter_factory: Callable[..., Any], check_fn: Callable[..., Any],
        validate_config: Callable[..., Any] | None = None, required_env: list[str] | None = None,
        install_hint: str = "", **entry_kwargs: Any,
    ) -> None:
        """Add a messaging platform: `adapter_factory(config)` makes its adapter (a subclass of
        `gateway.platforms.base.BasePlatformAdapter`), which `hermes gateway run` connects when the
        operator enables `platforms.<name>` and `check_fn()` holds. `entry_kwargs` are Hermes'
        `PlatformEntry` fields (`allowed_users_env`, `allow_all_env`, `is_connected`, ...); any other
        is a TypeError, as in Hermes."""
        call = f"ctx.register_platform({name!r})"
        entry = platform_entry(self.plugin_id, name, label, adapter_factory, check_fn, validate_config=validate_config,
                               required_env=required_env, install_hint=install_hint, **entry_kwargs)
        tagged(call, lambda: self._host(call).add_platform(entry))

    def register_platform_handler(self, *args: Any, **kwargs: Any) -> Any:
        """A native platform SDK handler: needs a host serving "gateway"."""
        return self._unserved("register_platform_handler", *args, **kwargs)

    def register_telegram_handler(self, *args: Any, **kwargs: Any) -> Any:
        """A native Telegram handler: needs a host serving "gateway"."""
        return self._unserved("register_telegram_handler", *args, **kwargs)

    def register_slack_action_handler(self, action_id: Any, callback: Callable[..., Any]) -> None:
        """Handle an interactive action (a Slack Block Kit button, ...) an adapter reports:
        `callback(ack, body, action)` (async, or plain) is called for the first action whose
        `action_id` matches, as Hermes calls it (see `BasePlatformAdapter.handle_slack_action`).
        `action_id`: the exact id, a compiled pattern, or a mapping of `action_id` / `block_id`
        / `type` constraints. A non-callable callback or an empty id is a `ValueError`."""
        call = f"ctx.register_slack_action_handler({action_id!r})"
        if not callable(callback):
            raise ValueError(f"Plugin {self.plugin_id!r} tried to register a Slack action handler with a "
                             "non-callable callback.")
        problem = slack_constraint(action_id)
        if problem is not None:
            raise ValueError(f"Plugin {self.plugin_id!r} tried to register a Slack action handler with {problem}.")
        tagged(call, lambda: self._host(call).add_slack_action(action_id, callback))

    @property
    def platform_actions(self) -> Any:
        """Gated platform actions (reactions, thread titles): needs a host serving "gateway"."""
        return self._property("platform_actions")

    def inject_message(self, content: str, role: str = "user", *, session_key: str | None = None) -> Any:
        """Push a message into a running conversation: needs a host serving "conversation"."""
        return self._unserved("inject_message", content, role, session_key=session_key)

    def register_approval_transport(self, name: str, present_fn: Callable[..., Any]) -> Any:
        """A human-approval channel: needs a host serving "approval"."""
        return self._unserved("register_approval_transport", name, present_fn)

    def register_dashboard_auth_provider(self, provider: Any) -> Any:
        """A login for `hermes dashboard` (Hermes' `DashboardAuthProvider`). In a host without a
        dashboard it does nothing, as in Hermes: the provider only matters where one is served."""
        registrar = self._host("ctx.register_dashboard_auth_provider")
        if not registrar.has_capability("dashboard"):
            return None
        return registrar.host_call("register_dashboard_auth_provider", provider)

    def call_mcp(self, server: str, tool: str, arguments: Mapping[str, Any] | None = None, timeout: float = 30) -> Any:
        """Call a tool of an MCP server: needs a host serving "mcp"."""
        return self._unserved("call_mcp", server, tool, arguments, timeout)

    def list_mcp_resources(self, server: str) -> Any:
        """An MCP server's resources and templates (`{ok, resources, resourceTemplates}`): as `call_mcp`."""
        return self._unserved("list_mcp_resources", server)

    def read_mcp_resource(self, server: str, uri: str) -> Any:
        """Read a resource of an MCP server (`{ok, contents}`): as `call_mcp`."""
        return self._unserved("read_mcp_resource", server, uri)

    def list_mcp_prompts(self, server: str) -> Any:
        """An MCP server's prompts (`{ok, prompts}`): as `call_mcp`."""
        return self._unserved("list_mcp_prompts", server)

    def get_mcp_prompt(self, server: str, name: str, arguments: Mapping[str, Any] | None = None) -> Any:
        """A prompt of an MCP server, for `arguments` (`{ok, description, messages}`): as `call_mcp`."""
        return self._unserved("get_mcp_prompt", server, name, arguments)

    @property
    def subagent_lifecycle(self) -> Any:
        """Subagent handles and snapshots: needs a host serving "subagents"."""
        return self._property("subagent_lifecycle")

    def register_middleware(self, kind: str, callback: Callable[..., Any]) -> Any:
        """Tool / LLM request and execution middleware: needs a host serving "middleware"."""
        return self._unserved("register_middleware", kind, callback)

    def register_context_reference(self, provider: Any) -> Any:
        """`@prefix:` references in user messages: needs a host serving "context_references"."""
        return self._unserved("register_context_reference", provider)

    def _property(self, member: str) -> Any:
        registrar = self._host(f"ctx.{member}")
        if registrar.has_capability(UNSERVED[member][0]):
            return registrar.host_call(member)
        return Unserved(self.plugin_id, member)

