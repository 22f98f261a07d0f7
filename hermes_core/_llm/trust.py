"""The trust gate of `ctx.llm`: which overrides the operator granted to which plugin.

Fail closed. Request-shaping arguments are always allowed; `provider`, `model`, `agent_id`
and `profile` each need their own grant under `plugins.entries.<id>.llm`:

    plugins:
      entries:
        my-plugin:
          llm:
            allow_provider_override: true
            allowed_providers: [openrouter, anthropic]   # absent: any; []: none; "*": any
            allow_model_override: true
            allowed_models: ["*"]
            allow_agent_id_override: false
            allow_profile_override: false

Hermes' capability ids grant the same: `plugins.entries.<id>.granted_capabilities:
[llm.model_override]` is `allow_model_override: true` (the allowlists still apply).

Checks run in that order (provider, model, agent_id, profile) and the first refusal raises
`PluginLlmTrustError` naming the exact key to set. A flag counts only when it is the boolean
`true`; an allowlist that is neither a list of strings nor `"*"` allows nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from .. import config_keys as keys
from .._config.config import Config
from .._errors import ConfigError, PluginLlmTrustError

__all__ = ["OVERRIDES", "check_overrides"]

# (argument, flag, allowlist or None): the last part of their keys under plugins.entries.<id>.llm
OVERRIDES: tuple[tuple[str, str, str | None], ...] = tuple(
    (argument, flag.parts[-1], allow.parts[-1] if allow is not None else None)
    for argument, flag, allow in (
        ("provider", keys.LLM_ALLOW_PROVIDER_OVERRIDE, keys.LLM_ALLOWED_PROVIDERS),
        ("model", keys.LLM_ALLOW_MODEL_OVERRIDE, keys.LLM_ALLOWED_MODELS),
        ("agent_id", keys.LLM_ALLOW_AGENT_ID_OVERRIDE, None),
        ("profile", keys.LLM_ALLOW_PROFILE_OVERRIDE, None),
    )
)


def _normal(value: Any) -> str:
    return str(value).strip().casefold()


def _allows(allowlist: Any, value: str) -> bool:
    if allowlist is None:
        return True
    if isinstance(allowlist, str):
        return allowlist.strip() == "*"
    if not isinstance(allowlist, list) or not all(isinstance(item, str) for item in allowlist):
        return False
    wanted = _normal(value)
    return any(item.strip() == "*" or _normal(item) == wanted for item in allowlist)


def check_overrides(plugin_id: str, read_config: Callable[[], Config], requested: Mapping[str, str | None]) -> None:
    """Raise `PluginLlmTrustError` unless every non-None override in `requested` is granted.

    `read_config` is only called when an override was asked for; if it raises, the override
    is denied and the message says why.
    """
    asked = [(arg, flag, allow) for arg, flag, allow in OVERRIDES if requested.get(arg) is not None]
    if not asked:
        return
    prefix = f"plugins.entries.{plugin_id}.llm"
    try:
        config = read_config()
        grants: Any = config.read(keys.PLUGIN_LLM, plugin_id)
        by_id = config.read(keys.PLUGIN_GRANTED_CAPABILITIES, plugin_id)  # Hermes' capability ids
    except ConfigError as exc:
        arg, flag, _ = asked[0]
        raise PluginLlmTrustError(
            f"plugin {plugin_id!r} may not override {arg}: its grants in config.yaml cannot be read, so every "
            f"override is denied until the file is fixed (the grant is {prefix}.{flag}): {exc}",
            plugin_id=plugin_id,
            key=f"{prefix}.{flag}",
        ) from None
    if not isinstance(grants, Mapping):
        grants = {}
    for arg, flag, allow in asked:
        value = str(requested[arg])
        if grants.get(flag) is not True and f"llm.{arg}_override" not in by_id:
            raise PluginLlmTrustError(
                f"plugin {plugin_id!r} may not choose its own {arg} ({value!r}): the operator has not granted it; "
                f"to allow it, set {prefix}.{flag}: true in config.yaml (or list llm.{arg}_override in "
                f"plugins.entries.{plugin_id}.granted_capabilities)",
                plugin_id=plugin_id,
                key=f"{prefix}.{flag}",
            )
        if allow is not None and not _allows(grants.get(allow), value):
            raise PluginLlmTrustError(
                f"plugin {plugin_id!r} may not use {arg} {value!r}: it is not in {prefix}.{allow} "
                f"(allowed: {_shown(grants.get(allow))}); add it there in config.yaml",
                plugin_id=plugin_id,
                key=f"{prefix}.{allow}",
            )


def _shown(allowlist: Any) -> str:
    if isinstance(allowlist, list) and allowlist:
        return ", ".join(str(item) for item in allowlist)
    return "none" if isinstance(allowlist, list) else repr(allowlist)
