"""hermes-core: the Hermes Agent plugin surface as a standalone library.

Public names are imported on first use, so `import hermes_core` stays cheap for commands
(like `hermes plugins list`) that need only a part of it. By audience:

For plugin authors (a plugin module, its tools, hooks and engines):
    hookimpl, PluginContext (the `ctx` every plugin gets), Tool, Command, ContextEngine,
    MemoryProvider, RecallStatus, providers (the other slots' base classes), PluginLlm (`ctx.llm`)
    and its results and inputs (PluginLlmCompleteResult, PluginLlmStructuredResult, PluginLlmUsage,
    PluginLlmTextInput, PluginLlmImageInput), PluginState (`ctx.state`), PluginManifest
    (`ctx.manifest`); message lists (Message, Messages, message_problems, message_text,
    repair_tool_pairing, split_for_compression, estimate_tokens; storable_json, storable_text for
    any text a model or tool gives); multimodal_parts, result_text, data_url and tool_message_content
    for Hermes' multimodal tool result (text with images or audio); SqliteFile and fts_phrases for a
    store under `$HERMES_HOME`, hermes_home, redact_secrets, config_keys.

For host authors (an agent that loads plugins; `hermes_core.agent` is the reference loop):
    PluginManager and what it hands out: PluginRecord, LoadFailure, DoctorReport, AgentSession,
    LifecycleHooks (the one way to fire a hook), HookCall, ToolDecision, HookRunner,
    HookCallback, ToolRegistry, ToolInfo, ToolEntry, ToolOutcome, CommandRegistry, CliCommand, SlotRegistry,
    SlotProvider, SlotDecl, Skills, Skill, SkillLibrary (the skills an agent is offered: the
    system prompt's index, Hermes' skills_list and skill_view), EventBus, AuxiliaryTask, PlatformEntry (a messaging
    platform, run by `hermes_core.gateway`); the host's own LLM clients (AuxiliaryLlm, AgentLlm, LlmAnswer, TurnIdentity, turn_scope, current_turn: the turn the calling code runs in); discovery without loading
    (discover, Discovery, PluginSpec); config (Config, load_config, edit_config, config_keys);
    leave_sigint_to_the_main_thread for a host's background threads. What hosts share (files, serving,
    signals, backoff, tool selection) is `hermes_core.hosting`.

For everyone: the one exception hierarchy, rooted at HermesError.

The test kit for plugin authors is `hermes_core.testing` (fixtures, ScriptedServer, the
contract suites, hypothesis strategies).
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
    from ._ctx.auxiliary import AuxiliaryTask
    from ._ctx.context import PluginContext
    from ._ctx.events import EventBus
    from ._ctx.manifest import PluginManifest
    from ._ctx.platforms import PlatformEntry
    from ._ctx.skills import Skill, Skills
    from ._ctx.state import PluginState
    from ._skills.library import SkillLibrary
    from ._discovery.discover import discover
    from ._discovery.spec import Discovery, PluginSpec
    from ._errors import (
        AlreadyRunningError,
        CommandConflictError,
        CommandFailedError,
        ConfigError,
        ManagedKeyError,
        HermesError,
        HostCapabilityError,
        LlmConfigError,
        LlmProviderError,
        ManifestError,
        McpAllowlistError,
        McpError,
        MemoryStoreError,
        StateStoreError,
        StateUnavailableError,
        PluginLlmBudgetError,
        PluginLlmError,
        PluginLlmInputError,
        PluginLlmSchemaError,
        PluginLlmTrustError,
        PluginLoadError,
        PluginProcessError,
        PluginNotFoundError,
        PluginStateError,
        ProviderConflictError,
        ProviderCopyError,
        RegistrationError,
        ScaffoldError,
        ServingError,
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
    from ._hooks.runner import HookCall, HookCallback, HookRunner
    from ._llm.auxiliary import AgentLlm, AuxiliaryLlm
    from ._llm.client import PluginLlm
    from ._llm.reply import LlmAnswer
    from ._llm.budget import spending_as
    from ._llm.request_hooks import TurnIdentity, current_turn, turn_scope
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
    from ._messages import (
        Message,
        Messages,
        estimate_tokens,
        message_problems,
        message_text,
        repair_tool_pairing,
        split_for_compression,
        storable_json,
        storable_text,
    )
    from ._multimodal import data_url, multimodal_parts, result_text, tool_message_content
    from ._paths import hermes_home
    from ._redact import redact_secrets
    from ._runtime.interrupts import leave_sigint_to_the_main_thread
    from ._session.session import AgentSession
    from ._slots.context_engine import ContextEngine
    from ._slots.declarations import SlotDecl
    from ._slots.memory import MemoryProvider
    from ._slots.recall import RecallStatus
    from ._slots.registry import SlotProvider, SlotRegistry
    from ._sqlite import SqliteFile, fts_phrases
    from ._tools.call import ToolOutcome
    from ._tools.registry import ToolRegistry
    from ._tools.tool import Tool, ToolEntry, ToolInfo
    from .hookspecs import hookimpl

_ERRORS = (
    "HermesError", "ConfigError", "ManifestError", "PluginNotFoundError", "RegistrationError", "ToolSchemaError",
    "ToolOverrideError", "CommandConflictError", "UnknownCommandError", "CommandFailedError", "SlotError",
    "UnknownProviderError", "ProviderConflictError", "ProviderCopyError", "PluginLlmError", "PluginLlmTrustError",
    "PluginLlmInputError", "PluginLlmSchemaError", "LlmConfigError", "LlmProviderError", "MemoryStoreError",
    "ScaffoldError", "SessionNotFoundError", "UnknownToolError", "HostCapabilityError", "PluginStateError",
    "McpError", "McpAllowlistError", "PluginLlmBudgetError", "PluginLoadError", "PluginProcessError",
    "AlreadyRunningError", "ServingError", "CronError", "StateStoreError", "StateUnavailableError",
    "ProfileError", "ManagedKeyError",
)

# Each public name and the module it lives in (a module named like the name is a public module).
_EXPORTS = {
    # plugin authors
    "hookimpl": "hookspecs", "PluginContext": "_ctx.context", "Tool": "_tools.tool", "Command": "_commands.command",
    "ContextEngine": "_slots.context_engine", "MemoryProvider": "_slots.memory", "RecallStatus": "_slots.recall",
    "providers": "providers", "PluginLlm": "_llm.client",
    **dict.fromkeys(["PluginLlmUsage", "PluginLlmCompleteResult", "PluginLlmStructuredResult", "PluginLlmTextInput",
                     "PluginLlmImageInput"], "_llm.results"),
    "PluginState": "_ctx.state", "PluginManifest": "_ctx.manifest",
    **dict.fromkeys(["Message", "Messages", "message_problems", "message_text", "repair_tool_pairing",
                     "estimate_tokens", "split_for_compression", "storable_json", "storable_text"], "_messages"),
    **dict.fromkeys(["data_url", "multimodal_parts", "result_text", "tool_message_content"], "_multimodal"),
    "SqliteFile": "_sqlite", "fts_phrases": "_sqlite", "hermes_home": "_paths", "redact_secrets": "_redact",
    "config_keys": "config_keys",
    # host authors
    "PluginManager": "_manager", "PluginRecord": "_loading.record", "LoadFailure": "_loading.record",
    "DoctorReport": "_loading.doctor", "AgentSession": "_session.session",
    "LifecycleHooks": "_hooks.calls", "HookCall": "_hooks.runner", "ToolDecision": "_hooks.chains",
    "HookRunner": "_hooks.runner", "HookCallback": "_hooks.runner",
    "ToolRegistry": "_tools.registry", "ToolInfo": "_tools.tool", "ToolEntry": "_tools.tool",
    "ToolOutcome": "_tools.call",
    "CommandRegistry": "_commands.registry", "CliCommand": "_commands.cli",
    "SlotRegistry": "_slots.registry", "SlotProvider": "_slots.registry", "SlotDecl": "_slots.declarations",
    "Skills": "_ctx.skills", "Skill": "_ctx.skills", "SkillLibrary": "_skills.library", "EventBus": "_ctx.events",
    "AuxiliaryTask": "_ctx.auxiliary",
    "PlatformEntry": "_ctx.platforms",
    "AuxiliaryLlm": "_llm.auxiliary", "AgentLlm": "_llm.auxiliary", "LlmAnswer": "_llm.reply",
    "TurnIdentity": "_llm.request_hooks", "turn_scope": "_llm.request_hooks",
    "current_turn": "_llm.request_hooks", "spending_as": "_llm.budget",
    "discover": "_discovery.discover", "Discovery": "_discovery.spec", "PluginSpec": "_discovery.spec",
    "Config": "_config.config", "load_config": "_config.file", "edit_config": "_config.file",
    "leave_sigint_to_the_main_thread": "_runtime.interrupts",
    # everyone: the exception hierarchy
    **dict.fromkeys(_ERRORS, "_errors"),
}

__all__ = [
    "__version__",
    # plugin authors
    "hookimpl", "PluginContext", "Tool", "Command", "ContextEngine", "MemoryProvider", "RecallStatus", "providers",
    "PluginLlm", "PluginLlmUsage", "PluginLlmCompleteResult", "PluginLlmStructuredResult", "PluginLlmTextInput",
    "PluginLlmImageInput", "PluginState", "PluginManifest", "Message", "Messages", "message_problems", "message_text",
    "repair_tool_pairing", "estimate_tokens", "split_for_compression", "storable_json", "storable_text", "SqliteFile",
    "data_url", "multimodal_parts", "result_text", "tool_message_content",
    "fts_phrases", "hermes_home", "redact_secrets", "config_keys",
    # host authors
    "PluginManager", "PluginRecord", "LoadFailure", "DoctorReport", "AgentSession", "LifecycleHooks", "HookCall",
    "ToolDecision", "HookRunner", "HookCallback", "ToolRegistry", "ToolInfo", "ToolEntry", "ToolOutcome",
    "CommandRegistry",
    "CliCommand", "SlotRegistry", "SlotProvider", "SlotDecl", "Skills", "Skill", "SkillLibrary", "EventBus",
    "AuxiliaryTask", "PlatformEntry", "AuxiliaryLlm", "AgentLlm", "LlmAnswer", "TurnIdentity", "turn_scope", "current_turn", "spending_as", "discover",
    "Discovery", "PluginSpec",
    "Config", "load_config", "edit_config", "leave_sigint_to_the_main_thread",
    # the exception hierarchy
    "HermesError", "ConfigError", "ManifestError", "PluginNotFoundError", "RegistrationError", "ToolSchemaError",
    "ToolOverrideError", "CommandConflictError", "UnknownCommandError", "CommandFailedError", "SlotError",
    "UnknownProviderError", "ProviderConflictError", "ProviderCopyError", "PluginLlmError", "PluginLlmTrustError",
    "PluginLlmInputError", "PluginLlmSchemaError", "LlmConfigError", "LlmProviderError", "MemoryStoreError",
    "ScaffoldError", "SessionNotFoundError", "UnknownToolError", "HostCapabilityError", "PluginStateError",
    "McpError", "McpAllowlistError", "PluginLlmBudgetError", "PluginLoadError", "PluginProcessError",
    "AlreadyRunningError", "ServingError", "CronError", "StateStoreError", "StateUnavailableError",
    "ProfileError", "ManagedKeyError",
]


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
