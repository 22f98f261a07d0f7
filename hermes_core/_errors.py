"""The one exception hierarchy of hermes-core.

Every message says what happened, to which plugin or key, and what to do about it.
"""

from __future__ import annotations

from ._quote import quoted

__all__ = [
    "owner",
    "HermesError",
    "StateStoreError",
    "StateUnavailableError",
    "ConfigError",
    "ManagedKeyError",
    "ManifestError",
    "PluginNotFoundError",
    "RegistrationError",
    "ToolSchemaError",
    "ToolOverrideError",
    "CommandConflictError",
    "UnknownCommandError",
    "CommandFailedError",
    "UnknownToolError",
    "McpError",
    "PluginLlmBudgetError",
    "McpAllowlistError",
    "SlotError",
    "UnknownProviderError",
    "ProviderConflictError",
    "ProviderCopyError",
    "PluginLlmError",
    "PluginLlmTrustError",
    "PluginLlmInputError",
    "PluginLlmSchemaError",
    "LlmConfigError",
    "LlmProviderError",
    "MemoryStoreError",
    "ScaffoldError",
    "SessionNotFoundError",
    "HostCapabilityError",
    "PluginStateError",
    "AlreadyRunningError",
    "ServingError",
    "ProfileError",
]


def owner(plugin_id: str | None) -> str:
    """How messages name where something came from: `plugin 'x'`, `MCP server 'x'` (whose tools
    are registered under the id `mcp:x`), or `the host`."""
    if plugin_id and plugin_id.startswith("mcp:"):
        return f"MCP server {quoted(plugin_id[4:])}"
    return f"plugin {quoted(plugin_id)}" if plugin_id else "the host"


_MEMORY_LIMIT: list[str] = []  # what this process's memory limit is, when it has one (an isolated plugin's)


def note_memory_limit(plugin_id: str, megabytes: int) -> None:
    """This process runs `plugin_id` under a memory limit: a `MemoryError` is then said as running
    out of it, naming the plugin and the key that sets it (`describe_memory_error`)."""
    _MEMORY_LIMIT[:] = [f"{owner(plugin_id)} ran out of the memory its process may use ({megabytes} MB: "
                        f"plugins.entries.{plugin_id}.memory_mb; raise it or leave it out)"] if megabytes > 0 else []


def describe_memory_error(exc: BaseException) -> str | None:
    """A `MemoryError` under a noted memory limit, in a line; None for anything else."""
    return f"MemoryError: {_MEMORY_LIMIT[0]}" if isinstance(exc, MemoryError) and _MEMORY_LIMIT else None


class HermesError(Exception):
    """Base class of every error hermes-core raises on purpose."""


class ConfigError(HermesError):
    """`config.yaml` cannot be read, parsed or written.

    `line` and `column` are 1-based when the problem has a position in the file.
    """

    def __init__(
        self, message: str, *, path: object = None, line: int | None = None, column: int | None = None
    ) -> None:
        super().__init__(message)
        self.path = path
        self.line = line
        self.column = column


class ManagedKeyError(ConfigError, PermissionError):
    """A write to a key the administrator's managed scope pins (`/etc/hermes/config.yaml`):
    refused, config.yaml left as it was. A `PermissionError` too, as Hermes raises for a plugin's
    `ctx.set_config` of such a key."""


class ManifestError(HermesError):
    """A `plugin.yaml` is malformed or has a field with a wrong value."""


class PluginNotFoundError(HermesError, LookupError):
    """No discovered plugin has the id that was asked for."""


class PluginLoadError(HermesError):
    """A plugin imported when first needed (lazy activation) failed to load; its record says why."""

    def __init__(self, message: str, *, plugin_id: str | None = None) -> None:
        super().__init__(message)
        self.plugin_id = plugin_id


class PluginProcessError(HermesError):
    """An isolated plugin's process died, was killed past a time limit, or could not start; or a call
    failed inside it."""

    def __init__(self, message: str, *, plugin_id: str | None = None) -> None:
        super().__init__(message)
        self.plugin_id = plugin_id


class RegistrationError(HermesError):
    """A plugin tried to register something that cannot be registered."""

    def __init__(self, message: str, *, plugin_id: str | None = None) -> None:
        super().__init__(message)
        self.plugin_id = plugin_id


class ToolSchemaError(RegistrationError, ValueError):
    """A tool's schema is not an OpenAI function object with a valid JSON Schema."""


class ToolOverrideError(RegistrationError, PermissionError):
    """A tool name is already taken and the plugin may not replace it."""


class CommandConflictError(RegistrationError):
    """A slash command name is already taken by a built-in or another plugin."""


class UnknownCommandError(HermesError, LookupError):
    """No loaded plugin has registered the command that was asked for."""


class CommandFailedError(HermesError):
    """A plugin's command handler raised; `original` is the exception it raised."""

    original: BaseException | None = None


class HostCapabilityError(HermesError):
    """A plugin used a `ctx` member that only a host serving a capability this host lacks can
    serve (a messaging gateway, an approval UI, ...)."""


class McpError(HermesError):
    """MCP cannot do what was asked: the optional extra `hermes-core[mcp]` is not installed, or
    `hermes mcp serve` was asked for something unsafe or impossible (an open address without a token)."""


class McpAllowlistError(McpError, PermissionError):
    """A plugin's `ctx.call_mcp` named a server missing from its `plugins.entries.<id>.mcp_allowlist`."""


class AlreadyRunningError(HermesError):
    """Another process already does what only one may do at a time (`hosting.only_one`): `path` is
    the lock it holds, `pid` that process's id when it wrote one (else None)."""

    def __init__(self, message: str, *, path: object = None, pid: int | None = None) -> None:
        super().__init__(message)
        self.path = path
        self.pid = pid


class ServingError(HermesError):
    """A host cannot serve where it was asked to (`hosting.serve_asgi`): an address it may not
    listen on without a bearer token, or one it cannot bind."""


class CronError(HermesError, ValueError):
    """A cron job or schedule that cannot be: a schedule no format reads, an unknown or ambiguous job,
    a jobs.json that cannot be read. The message names it and what to do."""


class PluginStateError(HermesError, ValueError):
    """`ctx.state` refused a value (not JSON, over the quota) or could not be written."""


class UnknownToolError(HermesError, LookupError):
    """No registered tool has the name that was asked for."""


class ScaffoldError(HermesError):
    """A plugin project cannot be rendered (`hermes plugins new`): a bad name or kind, or the folder exists."""


class SessionNotFoundError(HermesError, LookupError):
    """A stored agent session was asked for (`--resume ID`) that the session store does not have."""


class SlotError(HermesError):
    """A slot provider cannot be registered, selected or instantiated."""


class UnknownProviderError(SlotError, LookupError):
    """The configured provider of a slot is not provided by any loaded plugin."""

    def __init__(self, slot: str, config_key: str, name: str, available: list[str]) -> None:
        shown = ", ".join(repr(n) for n in available) or "none"
        super().__init__(
            f"{config_key} is {name!r}, but no loaded plugin provides a {slot!r} named {name!r} "
            f"(available: {shown}); install or enable the plugin that provides it, "
            f"or set {config_key} to one of the available names"
        )
        self.slot = slot
        self.config_key = config_key
        self.name = name
        self.available = available


class ProviderConflictError(SlotError):
    """A provider name is already registered in that slot; the first registration stays."""


class ProviderCopyError(SlotError):
    """A provider registered as an instance cannot be copied for a new session."""


class MemoryStoreError(HermesError):
    """A memory store cannot be opened, read or written (a corrupt file, a full disk, a lock held too long).

    `path` is the database file. A store never replaces a file it cannot read.
    """

    def __init__(self, message: str, *, path: object = None) -> None:
        super().__init__(message)
        self.path = path


class StateStoreError(MemoryStoreError):
    """The shared state's database (`state.url`) refused, or cannot be used: a wrong password, no
    such database, a schema newer than this hermes-core, the driver not installed. The message
    says what to do; a URL's password is never in it."""


class StateUnavailableError(StateStoreError):
    """The shared database cannot be reached now (down, restarting, out of connections): worth
    trying again; an HTTP host answers 503 with `Retry-After`."""


class PluginLlmError(HermesError):
    """Base class of the errors `ctx.llm` raises. No message ever holds a credential."""


class PluginLlmTrustError(PluginLlmError, PermissionError):
    """A plugin asked for an override (provider, model, agent_id, profile) the operator has
    not granted; `key` is the config key that would grant it."""

    def __init__(self, message: str, *, plugin_id: str, key: str) -> None:
        super().__init__(message)
        self.plugin_id = plugin_id
        self.key = key


class PluginLlmBudgetError(PluginLlmError):
    """A `ctx.llm` call would take the plugin past an LLM budget; refused before any request was
    sent. `budget` is the budget's key (`cost_per_day`, ...), `used` and `limit` its figures for
    the period, `resets` when the period ends (an ISO 8601 time)."""

    def __init__(self, message: str, *, plugin_id: str, budget: str, used: float, limit: float, resets: str) -> None:
        super().__init__(message)
        self.plugin_id, self.budget, self.used, self.limit, self.resets = plugin_id, budget, used, limit, resets


class PluginLlmInputError(PluginLlmError, ValueError):
    """A `ctx.llm` call was given arguments it cannot send (empty instructions, a malformed
    input block, an invalid JSON Schema); raised before any request is made."""


class PluginLlmSchemaError(PluginLlmError, ValueError):
    """The model's JSON does not match the plugin's schema; `path` is where it fails and
    `text` is the model's raw reply."""

    def __init__(self, message: str, *, path: str, text: str) -> None:
        super().__init__(message)
        self.path = path
        self.text = text


class LlmConfigError(PluginLlmError):
    """The host's model configuration cannot serve the call: no provider or model set, an
    unknown provider, no credentials, no vision model for image input."""


class LlmProviderError(PluginLlmError):
    """Every provider tried failed, or one failed in a way that falling back cannot fix.

    `provider`, `model` and `status_code` describe the last attempt; `attempts` is one line
    per attempt (`"openrouter/m: HTTP 503"`), in order.
    """

    def __init__(
        self,
        message: str,
        *,
        provider: str,
        model: str,
        status_code: int | None = None,
        attempts: tuple[str, ...] = (),
    ) -> None:
        super().__init__(message)
        self.provider = provider
        self.model = model
        self.status_code = status_code
        self.attempts = attempts


class ProfileError(HermesError, ValueError):
    """A profile that cannot be: a name outside the rule or reserved, one that does not exist (or
    already does), the default where only a named one will do, or one whose gateway is running."""
