"""Hermes' capability ids: what an operator grants a plugin, by id or by the older flag.

`plugins.entries.<id>.granted_capabilities: [llm.model_override]` grants the same as
`plugins.entries.<id>.llm.allow_model_override: true`; either is enough. `ctx.has_capability(id)`
answers for these ids, and the gates that check a grant (`register_tool(override=True)`, the
`ctx.llm` trust gate) read both.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from .. import config_keys as keys
from .._config.config import Config

__all__ = ["CAPABILITY_REGISTRY", "CapabilitySpec", "GRANTED_KEY", "VALID_CAPABILITY_IDS", "granted",
           "plugin_capability_granted"]

GRANTED_KEY = "granted_capabilities"


@dataclasses.dataclass(frozen=True)
class CapabilitySpec:
    """A capability id, the older flag under `plugins.entries.<id>` that grants the same, and what it allows."""

    id: str
    legacy_path: tuple[str, ...]
    description: str


CAPABILITY_REGISTRY: Mapping[str, CapabilitySpec] = {spec.id: spec for spec in (
    CapabilitySpec("tools.override", ("allow_tool_override",), "replace a tool another plugin registered"),
    CapabilitySpec("llm.provider_override", ("llm", "allow_provider_override"), "ctx.llm may choose its provider"),
    CapabilitySpec("llm.model_override", ("llm", "allow_model_override"), "ctx.llm may choose its model"),
    CapabilitySpec("llm.agent_id_override", ("llm", "allow_agent_id_override"), "ctx.llm may act as another agent"),
    CapabilitySpec("llm.profile_override", ("llm", "allow_profile_override"), "ctx.llm may use another profile"),
    CapabilitySpec("llm.task_override", ("llm", "allow_task_override"), "ctx.llm may run as an auxiliary task"),
    CapabilitySpec("gateway.platform_actions", ("allow_platform_actions",), "react and retitle on platforms"),
)}
VALID_CAPABILITY_IDS = frozenset(CAPABILITY_REGISTRY)


def granted(config: Config, plugin_id: str, capability: str) -> bool:
    """Whether the operator granted `capability` (an id of `CAPABILITY_REGISTRY`) to `plugin_id`:
    listed in its `granted_capabilities`, or its older flag is `true`. An unknown id is never granted."""
    spec = CAPABILITY_REGISTRY.get(capability)
    if spec is None:
        return False
    if capability in config.read(keys.PLUGIN_GRANTED_CAPABILITIES, plugin_id):
        return True
    entry: Any = config.read(keys.PLUGIN_ENTRIES).get(plugin_id)
    for part in spec.legacy_path:
        entry = entry.get(part) if isinstance(entry, Mapping) else None
    return entry is True


def plugin_capability_granted(plugin_id: str, capability: str, config: Config | None = None) -> bool:
    """Hermes' `plugin_runtime.capabilities.plugin_capability_granted`: `granted` against the
    operator's config (`$HERMES_HOME/config.yaml` when `config` is None)."""
    if config is None:
        from .._config.file import load_config

        config = load_config()
    return granted(config, plugin_id, capability)
