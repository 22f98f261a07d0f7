"""Which kinds of registration something else can stand in for: the one table lazy activation and
process isolation read, keyed by the kinds a plugin's record notes (`PluginRecord.registered`).

- `lazy`: lazy activation can offer it from what the plugin registered at its last import, and
  import the plugin when it is first needed (a plugin that registered any other kind is imported
  at every start);
- `isolated`: a plugin running in a process of its own can have it registered in the host as a
  stand-in that sends each call to that process (a plugin that registers any other kind is
  refused isolation).

A kind the registrar notes must have its line here: `tests/core/test_stand_ins.py` fails
otherwise, so a new kind is decided for both, once.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import NamedTuple

__all__ = ["ISOLATED", "KINDS", "LAZY", "Kind"]


class Kind(NamedTuple):
    """What can stand in for one kind of registration (see the module)."""

    lazy: bool
    isolated: bool


KINDS: Mapping[str, Kind] = MappingProxyType({
    "tools": Kind(lazy=True, isolated=True),  # lazily only without a check_fn: only the plugin's code answers it
    "commands": Kind(lazy=True, isolated=True),
    "cli_commands": Kind(lazy=True, isolated=False),  # offered by name; the plugin is imported to run one
    "hooks": Kind(lazy=False, isolated=True),  # a hook fires at any moment: its plugin must be there
    "providers": Kind(lazy=False, isolated=False),
    "model_providers": Kind(lazy=False, isolated=False),
    "prompt_sections": Kind(lazy=False, isolated=False),
    "skills": Kind(lazy=False, isolated=False),
    "redaction_patterns": Kind(lazy=False, isolated=False),
    "subscriptions": Kind(lazy=False, isolated=False),
    "auxiliary_tasks": Kind(lazy=False, isolated=False),
    "platforms": Kind(lazy=False, isolated=False),
    "slack_actions": Kind(lazy=False, isolated=False),  # an action may come at any moment: its handler must be there
})

LAZY = frozenset(name for name, kind in KINDS.items() if kind.lazy)
ISOLATED = frozenset(name for name, kind in KINDS.items() if kind.isolated)
