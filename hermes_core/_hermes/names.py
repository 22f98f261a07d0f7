"""Hermes' import names, answered by hermes-core where no real module of that name exists.

Hermes plugins import `agent.memory_provider`, `agent.context_engine`, ... for a base class or
a helper, often inside `try/except ImportError` with a stand-in class to fall back on.
hermes-core installs no `agent` package into site-packages: a finder at the end of
`sys.meta_path` serves these names, and only when nothing before it (a real Hermes Agent
installation, any module on `sys.path`) has one, as modules holding hermes-core's equivalents.
While a plugin loads, the names it imports are recorded, so `hermes plugins doctor` can say
which it used, and the plugin is known (`loading()`), so that `tools.registry.registry.register`
registers for it.

>>> install()
>>> from agent.memory_provider import MemoryProvider    # hermes_core.MemoryProvider
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import threading
import types
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, NamedTuple

__all__ = ["SERVED", "Loading", "current_platforms", "current_tools", "hermes_name", "install", "loading",
           "recording"]

# A served module: the hermes-core modules its names come from, and the names (ALL: every name in
# that module's `__all__`). A package parent (`agent`, `tools`, ...) is served only where no real
# package of that name exists.
ALL = ("*",)
SERVED: dict[str, tuple[tuple[str, tuple[str, ...]], ...]] = {
    "agent": (),
    "agent.memory_provider": (
        ("hermes_core._slots.memory", ("MemoryProvider",)),
        ("hermes_core._slots.recall", ("RecallStatus", "is_trivial_prompt", "INDICATOR_GLYPH", "TRIVIAL_PROMPT_RE",
                                       "PRE_COMPRESS_CHECKPOINT_API_VERSION")),
        ("hermes_core._slots.provider_helpers", ("spawn_context_thread", "ctx_bound", "MemoryObservation",
                                                 "MemoryPrefetchResult", "MAX_MEMORY_OBSERVATIONS",
                                                 "CORE_MEMORY_PROVIDER_SENTINELS", "is_core_memory_provider")),
    ),
    "agent.context_engine": (
        ("hermes_core._slots.context_engine", ("ContextEngine", "ContextCompressionCandidate")),
        ("hermes_core._redact", ("sanitize_memory_context", "MEMORY_CONTEXT_MAX_CHARS")),
    ),
    "agent.context_compressor": (
        ("hermes_plugins_builtin.compressor", ("ContextCompressor", "SUMMARY_MARK")),
        ("hermes_core._slots.context_engine", ("resolve_model_threshold",)),
    ),
    "agent.plugin_llm": (
        ("hermes_core._llm.client", ("PluginLlm",)),
        ("hermes_core._llm.results", ("PluginLlmTextInput", "PluginLlmImageInput", "PluginLlmInput",
                                      "PluginLlmUsage", "PluginLlmCompleteResult", "PluginLlmStructuredResult")),
        ("hermes_core._errors", ("PluginLlmTrustError",)),
    ),
    "agent.provider_base": (("hermes_core.providers", ("ProviderBase", "CatalogProviderBase")),),
    "agent.web_search_provider": (
        ("hermes_core.providers", ("WebSearchProvider",)),
        ("hermes_core._hermes.web_search", ("get_provider_env",)),
    ),
    "agent.image_gen_provider": (
        ("hermes_core.providers", ("ImageGenProvider",)),
        ("hermes_core._hermes.image_gen", ALL),
    ),
    "agent.video_gen_provider": (
        ("hermes_core.providers", ("VideoGenProvider",)),
        ("hermes_core._hermes.video_gen", ALL),
    ),
    "agent.browser_provider": (("hermes_core.providers", ("BrowserProvider",)),),
    "agent.tts_provider": (
        ("hermes_core.providers", ("TTSProvider",)),
        ("hermes_core._hermes.tts", ("DEFAULT_OUTPUT_FORMAT", "VALID_OUTPUT_FORMATS", "resolve_output_format")),
    ),
    "agent.transcription_provider": (("hermes_core.providers", ("TranscriptionProvider",)),),
    "agent.terminal_env_provider": (("hermes_core.providers", ("TerminalEnvironmentProvider",)),),
    "agent.secret_sources": (),
    "agent.secret_sources.base": (
        ("hermes_core.providers", ("SecretSource", "ErrorKind")),
        ("hermes_core._hermes.secret_sources", ALL),
    ),
    "agent.redact": (("hermes_core._hermes.redact", ("redact_sensitive_text",)),),
    "agent.secret_scope": (("hermes_core._hermes.secret_scope", ALL),),
    "tools": (),
    "tools.registry": (
        ("hermes_core._hermes.tool_registry", ("ToolRegistry", "ToolEntry", "tool_error", "tool_result")),
        ("hermes_core._hermes.served_registry", ("registry",)),
    ),
    "tools.approval": (("hermes_core.gateway.approvals", (
        "resolve_gateway_approval", "register_gateway_notify", "unregister_gateway_notify", "has_blocking_approval",
        "list_gateway_approvals", "get_pending_gateway_approval", "pending_gateway_approval_count", "approve_session",
        "approve_permanent", "is_approved", "clear_session")),),
    "tools.clarify_gateway": (("hermes_core._hermes.interactions", ("resolve_gateway_clarify", "mark_awaiting_text")),),
    "tools.slash_confirm": (("hermes_core._hermes.interactions", ("resolve",)),),
    "hermes_constants": (("hermes_core._hermes.constants", ALL),),
    "providers": (("hermes_core._hermes.model_providers", ("register_provider", "get_provider_profile",
                                                            "list_providers", "ProviderProfile")),),
    "providers.base": (("hermes_core._hermes.model_providers", ("ProviderProfile", "OMIT_TEMPERATURE")),),
    # The late-2026 plugin runtime (`plugin_runtime.*`) and `hermes_cli.plugins`, its facade: the
    # names plugins import from them for a type hint or a check.
    "plugin_runtime": (),
    "plugin_runtime.context": (("hermes_core._ctx.context", ("PluginContext",)),
                               ("hermes_core._hermes.runtime", ("PluginToolOverrideError",))),
    "plugin_runtime.manifest": (("hermes_core._ctx.manifest", ("PluginManifest",)),),
    "plugin_runtime.dispatch": (
        ("hermes_core._hooks.hermes_api", ("VALID_HOOKS", "invoke_hook", "ainvoke_hook", "has_hook")),
        ("hermes_core._hermes.runtime", ("OBSERVER_SCHEMA_VERSION", "HERMES_EVENT_NAMESPACE", "SHELL_UNSUPPORTED_HOOKS",
                                         "TOOL_REQUEST_MIDDLEWARE", "TOOL_EXECUTION_MIDDLEWARE",
                                         "LLM_REQUEST_MIDDLEWARE", "LLM_EXECUTION_MIDDLEWARE", "VALID_MIDDLEWARE")),
    ),
    "plugin_runtime.api": (
        ("hermes_core._ctx.manifest", ("PluginManifest",)),
        ("hermes_core._hooks.hermes_api", ("invoke_hook", "ainvoke_hook", "has_hook")),
        ("hermes_core._hermes.runtime", ("has_middleware", "invoke_middleware")),
    ),
    "plugin_runtime.capabilities": (("hermes_core._ctx.grants", ("CAPABILITY_REGISTRY", "CapabilitySpec", "GRANTED_KEY",
                                                               "VALID_CAPABILITY_IDS", "plugin_capability_granted")),),
    "plugin_runtime.compat_warning": (("hermes_core._hermes.runtime", ("HermesPluginCompatWarning",)),),
    "hermes_cli.plugins": (
        ("hermes_core._ctx.context", ("PluginContext",)),
        ("hermes_core._ctx.manifest", ("PluginManifest",)),
        ("hermes_core._hooks.hermes_api", ("VALID_HOOKS", "invoke_hook", "ainvoke_hook", "has_hook")),
        ("hermes_core._hermes.runtime", ("PluginToolOverrideError",)),
    ),
    "hermes_cli": (),
    "hermes_cli.config": (("hermes_core._hermes.config", ALL),),
    "hermes_cli.managed_scope": (("hermes_core._hermes.managed_scope", ALL),),
    "hermes_cli.setup": (("hermes_core._hermes.setup_ui", ALL),),
    # `hermes dashboard`'s auth providers (`ctx.register_dashboard_auth_provider`).
    "hermes_cli.dashboard_auth": (("hermes_core.dashboard.provider", ALL),
                                  ("hermes_core.dashboard.registry", ("list_providers", "list_token_providers"))),
    "hermes_cli.dashboard_auth.token_auth": (("hermes_core.dashboard.token_routes", (
        "clear_token_routes", "extract_bearer_token", "is_token_route", "register_token_route")),),
    "hermes_cli.dashboard_auth.base": (("hermes_core.dashboard.provider", ALL),),
    "hermes_cli.dashboard_auth.cookies": (("hermes_core.dashboard.hermes_helpers", (
        "SESSION_AT_COOKIE", "SESSION_RT_COOKIE", "PKCE_COOKIE", "clear_session_cookies", "detect_https",
        "read_session_cookies", "set_session_cookies")),),
    "hermes_cli.dashboard_auth.prefix": (("hermes_core.dashboard.hermes_helpers", ("prefix_from_request",)),),
    # The messaging gateway's names platform-adapter plugins import (`hermes_core.gateway`).
    "gateway": (),
    "gateway.config": (("hermes_core.gateway.config", ALL),),
    "gateway.platforms": (),
    "gateway.platforms.base": (("hermes_core.gateway.platforms.base", ALL),),
    "gateway.platforms.event": (("hermes_core.gateway.platforms.event", ALL),),
    "gateway.platforms.helpers": (("hermes_core.gateway.platforms.helpers", ALL),),
    "gateway.session": (("hermes_core.gateway.session", ALL),),
    "gateway.delivery": (("hermes_core.gateway.delivery", ALL),),
    "gateway.session_context": (("hermes_core.gateway.session_context", ALL),),
    "gateway.pairing": (("hermes_core.gateway.pairing", ("PairingStore",)),),
    "gateway.status": (("hermes_core.gateway.status", ALL),),
    "gateway.run": (("hermes_core.gateway.run", ALL),),
    "gateway.platform_registry": (("hermes_core._hermes.platform_registry", ("platform_registry",)),
                                  ("hermes_core._ctx.platforms", ("PlatformEntry",))),
    "plugin_runtime.platform_registry": (("hermes_core._hermes.platform_registry", ("platform_registry",)),
                                         ("hermes_core._ctx.platforms", ("PlatformEntry",))),
}
PACKAGES = frozenset(name.rpartition(".")[0] for name in SERVED if "." in name)
MARK = "__hermes_core_serves__"  # set on every served module: the Hermes name it stands for

_recorders = threading.local()  # .names: the names recorded; .loading: the plugin loading in this thread


class Loading(NamedTuple):
    """The plugin a loader is loading in this thread: its id, its `ctx` (made on first use), the
    tool registry it registers into (what `tools.registry.registry` answers during the load),
    `keep(undo)`, which keeps an undo with the plugin's registrations (run when it unloads), and
    the platforms registered so far (what `gateway.platform_registry` reads)."""

    plugin_id: str
    ctx: Callable[[], Any]
    tools: Any
    keep: Callable[[Callable[[], None]], None]
    platforms: Any = None


_last_tools: weakref.ref[Any] | None = None  # the tool registry of the latest load, while it lives
_last_platforms: weakref.ref[Any] | None = None  # likewise its platforms


class _HermesNames(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Serves the names of `SERVED` that no finder before it could find."""

    def find_spec(self, fullname: str, path: object = None, target: object = None) -> importlib.machinery.ModuleSpec | None:
        if fullname not in SERVED:
            return None
        parent = fullname.rpartition(".")[0]
        if parent and not hasattr(sys.modules.get(parent), MARK):
            return None  # a real package of that name: not ours to add to
        return importlib.util.spec_from_loader(fullname, self, is_package=fullname in PACKAGES)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType | None:
        return None

    def exec_module(self, module: types.ModuleType) -> None:
        name = module.__name__
        exported: list[str] = []
        for source, wanted in SERVED[name]:
            backing = importlib.import_module(source)
            names = tuple(backing.__all__) if wanted == ALL else wanted
            for attr in names:
                setattr(module, attr, getattr(backing, attr))
            exported += names
        module.__all__ = exported  # type: ignore[attr-defined]
        module.__doc__ = f"Hermes' {name}, served by hermes-core (no Hermes Agent installation was found)."
        setattr(module, MARK, name)
        names_seen = getattr(_recorders, "names", None)
        if names_seen is not None and name not in PACKAGES:
            names_seen.append(name)


_FINDER = _HermesNames()


def install() -> None:
    """Put the finder at the end of `sys.meta_path` (once): real modules are always found first."""
    if _FINDER not in sys.meta_path:
        sys.meta_path.append(_FINDER)


@contextmanager
def recording(plugin: Loading | None = None) -> Iterator[list[str]]:
    """The Hermes names imported in this thread inside the block, while `plugin` loads. Served
    modules are dropped from `sys.modules` first, so that a plugin's imports are seen even when
    an earlier plugin imported the same names (their classes stay the same objects)."""
    global _last_tools, _last_platforms
    for name in [n for n, module in sys.modules.items() if hasattr(module, MARK)]:
        del sys.modules[name]
    previous = getattr(_recorders, "names", None), getattr(_recorders, "loading", None)
    seen: list[str] = []
    _recorders.names, _recorders.loading = seen, plugin
    if plugin is not None:
        _last_tools = weakref.ref(plugin.tools)
        _last_platforms = weakref.ref(plugin.platforms) if plugin.platforms is not None else None
    try:
        yield seen
    finally:
        _recorders.names, _recorders.loading = previous


def hermes_name(cls: type) -> str | None:
    """The Hermes name under which `cls` is served (`agent.memory_provider.MemoryProvider`), if any."""
    for name, sources in SERVED.items():
        if any(source == cls.__module__ and cls.__name__ in names for source, names in sources):
            return f"{name}.{cls.__name__}"
    return None


def loading() -> Loading | None:
    """The plugin being loaded in this thread, if any."""
    return getattr(_recorders, "loading", None)


def current_platforms() -> Any | None:
    """The platforms Hermes' `gateway.platform_registry` reads: as `current_tools`, the loading
    plugin's manager's, else that of the latest load."""
    plugin = loading()
    if plugin is not None and plugin.platforms is not None:
        return plugin.platforms
    return _last_platforms() if _last_platforms is not None else None


def current_tools() -> Any | None:
    """The tool registry Hermes' `tools.registry` reads: the loading plugin's, else that of the
    latest load in this process (Hermes has one registry per process; so does a hermes-core host
    with one manager), else None."""
    plugin = loading()
    if plugin is not None:
        return plugin.tools
    return _last_tools() if _last_tools is not None else None
