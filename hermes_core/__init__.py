"""hermes-core: the Hermes Agent plugin surface as a standalone library.

Public names are imported on first use, so `import hermes_core` stays cheap for commands
(like `hermes plugins list`) that need only a part of it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._version import __version__

if TYPE_CHECKING:
    from . import config_keys, providers
    from ._commands.cli import CliCommand
    from ._commands.command import Command
    from ._commands.registry import CommandRegistry
    from ._config.config import Config
    from ._config.file import edit_config, load_config
    from ._ctx.context import PluginContext
    from ._discovery.discover import discover
    from ._discovery.spec import Discovery, PluginSpec
    from ._errors import (
        CommandConflictError,
        CommandFailedError,
        ConfigError,
        HermesError,
        HostCapabilityError,
        LlmConfigError,
        LlmProviderError,
        ManifestError,
        MemoryStoreError,
        PluginLlmError,
        PluginLlmInputError,
        PluginLlmSchemaError,
        PluginLlmTrustError,
        PluginNotFoundError,
        PluginStateError,
        ProviderConflictError,
        ProviderCopyError,
        RegistrationError,
        ScaffoldError,
        SessionNotFoundError,
        SlotError,
        ToolOverrideError,
        ToolSchemaError,
        UnknownCommandError,
        UnknownProviderError,
        UnknownToolError,
    )
    from ._hooks.calls import LifecycleHooks
    from ._hooks.chains import ToolDecision
    from ._hooks.runner import HookCall, HookRunner
    from ._llm.auxiliary import AuxiliaryLlm
    from ._llm.client import PluginLlm
    from ._llm.results import (
        PluginLlmCompleteResult,
        PluginLlmImageInput,
        PluginLlmStructuredResult,
        PluginLlmTextInput,
        PluginLlmUsage,
    )
    from ._loading.doctor import DoctorReport
    from ._loading.record import LoadFailure, PluginRecord
    from ._manager import PluginManager
    from ._messages import estimate_tokens, message_problems, message_text, repair_tool_pairing, split_for_compression
    from ._paths import hermes_home
    from ._redact import redact_secrets
    from ._session.session import AgentSession
    from ._slots.context_engine import ContextEngine
    from ._slots.declarations import SlotDecl
    from ._slots.memory import MemoryProvider
    from ._slots.registry import SlotProvider, SlotRegistry
    from ._sqlite import SqliteFile, fts_phrases
    from ._tools.registry import ToolRegistry
    from ._tools.tool import Tool, ToolInfo
    from .hookspecs import hookimpl, hookspec

_EXPORTS = {
    "PluginManager": "_manager", "PluginRecord": "_loading.record", "LoadFailure": "_loading.record",
    "DoctorReport": "_loading.doctor",
    "PluginContext": "_ctx.context",
    "AgentSession": "_session.session", "MemoryProvider": "_slots.memory", "ContextEngine": "_slots.context_engine",
    "AuxiliaryLlm": "_llm.auxiliary",
    **dict.fromkeys(["message_problems", "message_text", "repair_tool_pairing", "estimate_tokens",
                     "split_for_compression"], "_messages"),
    "redact_secrets": "_redact",
    "hermes_home": "_paths", "SqliteFile": "_sqlite", "fts_phrases": "_sqlite",
    "Tool": "_tools.tool", "ToolRegistry": "_tools.registry", "ToolInfo": "_tools.tool",
    "Command": "_commands.command", "CliCommand": "_commands.cli", "CommandRegistry": "_commands.registry",
    "HookRunner": "_hooks.runner", "HookCall": "_hooks.runner", "ToolDecision": "_hooks.chains", "LifecycleHooks": "_hooks.calls",
    "SlotRegistry": "_slots.registry", "SlotProvider": "_slots.registry", "SlotDecl": "_slots.declarations",
    "Config": "_config.config", "load_config": "_config.file", "edit_config": "_config.file", "config_keys": "config_keys",
    "providers": "providers",
    "Discovery": "_discovery.spec", "PluginSpec": "_discovery.spec", "discover": "_discovery.discover",
    "hookimpl": "hookspecs", "hookspec": "hookspecs",
    "PluginLlm": "_llm.client",
    "PluginLlmUsage": "_llm.results", "PluginLlmCompleteResult": "_llm.results",
    "PluginLlmStructuredResult": "_llm.results", "PluginLlmTextInput": "_llm.results",
    "PluginLlmImageInput": "_llm.results",
    **{
        name: "_errors"
        for name in (
            "HermesError", "ConfigError", "ManifestError", "PluginNotFoundError", "RegistrationError",
            "ToolSchemaError", "ToolOverrideError", "CommandConflictError", "UnknownCommandError",
            "CommandFailedError", "SlotError", "UnknownProviderError", "ProviderConflictError", "ProviderCopyError",
            "PluginLlmError", "PluginLlmTrustError", "PluginLlmInputError", "PluginLlmSchemaError",
            "LlmConfigError", "LlmProviderError", "MemoryStoreError", "ScaffoldError", "SessionNotFoundError",
            "UnknownToolError", "HostCapabilityError", "PluginStateError",
        )
    },
}

__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'hermes_core' has no attribute {name!r}")
    imported = importlib.import_module(f"hermes_core.{module}")
    value = imported if module == name else getattr(imported, name)  # a public module: config_keys, providers
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
