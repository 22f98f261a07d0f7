"""`PluginContext`: the one object a plugin uses to talk to the host, bound to its id.

A `ctx` holds the plugin's id, logger, settings and home, and nothing else: what it registers
goes to the plugin's `Registrar`, which the ctx finds in a table private to this module. So
no attribute of `ctx` (nor of anything it holds) leads to the manager, a registry, the pluggy
instance or another plugin's registrations; a plugin that looks for one gets a clear error.
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ._commands import Command
from ._errors import RegistrationError
from ._invoke import tagged
from ._llm.results import freeze
from ._tools import Tool

if TYPE_CHECKING:
    from ._llm.client import PluginLlm
    from ._llm.host import LlmHost

__all__ = ["PluginContext", "Registrar"]


class Registrar(Protocol):
    """What a plugin's `ctx` may ask of the host, always under that plugin's id."""

    def add_tool(self, tool: Tool) -> None: ...

    def add_command(self, command: Command) -> None: ...

    def add_hook(self, hook: str, callback: Callable[..., Any]) -> None: ...

    def add_provider(self, slot: str, provider: Any, name: str | None) -> None: ...

    def dispatch_tool(self, name: str, args: Any, **kwargs: Any) -> str: ...

    def llm_host(self) -> LlmHost: ...


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
            from ._llm.client import PluginLlm

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

    def register_command(self, name: str, handler: Callable[..., Any], description: str = "", args_hint: str = "") -> None:
        """Register a slash command; a clash with another command is a warning and this one is dropped."""
        call = f"ctx.register_command({name!r})"
        command = Command(name, handler, description, args_hint, plugin_id=self.plugin_id)
        tagged(call, lambda: self._host(call).add_command(command))

    def register_hook(self, hook_name: str, callback: Callable[..., Any]) -> None:
        """Add `callback` to the lifecycle hook `hook_name`."""
        call = f"ctx.register_hook({hook_name!r})"
        tagged(call, lambda: self._host(call).add_hook(hook_name, callback))

    def register_provider(self, slot: str, provider: Any, *, name: str | None = None) -> None:
        """Offer `provider` (a class, factory or instance) in `slot`; only the config activates it."""
        call = f"ctx.register_provider({slot!r})"
        tagged(call, lambda: self._host(call).add_provider(slot, provider, name))

    def register_context_engine(self, engine: Any) -> None:
        """Offer a context engine; `context.engine` in config selects it by its `name`."""
        self.register_provider("context_engine", engine)

    def register_memory_provider(self, provider: Any) -> None:
        """Offer a memory provider; `memory.provider` in config selects it by its `name`."""
        self.register_provider("memory", provider)

    def register_image_gen_provider(self, provider: Any) -> None:
        """Offer an image generation backend in the `image_gen` slot (Hermes' name); `image_gen.provider` selects it."""
        self.register_provider("image_gen", provider)

    def register_video_gen_provider(self, provider: Any) -> None:
        """Offer a video generation backend in the `video_gen` slot (Hermes' name); `video_gen.provider` selects it."""
        self.register_provider("video_gen", provider)

    def register_web_search_provider(self, provider: Any) -> None:
        """Offer a web search / extract backend in the `web_search` slot (Hermes' name); `web_search.provider` selects it."""
        self.register_provider("web_search", provider)

    def register_browser_provider(self, provider: Any) -> None:
        """Offer a cloud browser backend in the `browser` slot (Hermes' name); `browser.provider` selects it."""
        self.register_provider("browser", provider)

    def register_tts_provider(self, provider: Any) -> None:
        """Offer a text-to-speech backend in the `tts` slot (Hermes' name); `tts.provider` selects it."""
        self.register_provider("tts", provider)

    def register_transcription_provider(self, provider: Any) -> None:
        """Offer a speech-to-text backend in the `transcription` slot (Hermes' name); `transcription.provider` selects it."""
        self.register_provider("transcription", provider)

    def register_terminal_environment_provider(self, provider: Any) -> None:
        """Offer a terminal execution backend in the `terminal_environment` slot (Hermes' name); `terminal_environment.provider` selects it."""
        self.register_provider("terminal_environment", provider)

    def register_secret_source(self, source: Any) -> None:
        """Offer a secret source in the `secret_source` slot (Hermes' name); `secret_source.provider` selects it."""
        self.register_provider("secret_source", source)

    def dispatch_tool(self, name: str, args: Any, **kwargs: Any) -> str:
        """Run any registered tool, with the lifecycle hooks around it; returns its JSON string."""
        return self._host("ctx.dispatch_tool").dispatch_tool(name, args, **kwargs)
