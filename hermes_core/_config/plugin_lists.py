"""Enabling and disabling a plugin in config.yaml under the managed scope, for `hermes plugins
enable|disable|install` and the dashboard's buttons alike: the edit of `plugins.enabled` and
`plugins.disabled`, and the refusal when a list the administrator pins says otherwise.

A list the managed file pins is read from there whole, never from config.yaml: the command neither
needs nor makes a change to it, so it is left as it is in config.yaml. What is refused is only what
the managed value would undo: enabling a plugin its `plugins.disabled` lists (or that its
`plugins.enabled` leaves out, for a plugin that is not built in), disabling one its
`plugins.disabled` leaves out. Any other plugin is enabled and disabled as without a managed file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .._errors import ConfigError
from .file import edit_config
from .managed import refuse_list_change

__all__ = ["refuse_to_toggle", "set_membership"]


def refuse_to_toggle(spec: Any, config: Any, add_to: str) -> None:
    """Raise the `ManagedKeyError` that adding `spec` to `plugins.<add_to>` meets under `config`'s
    managed scope (naming the list and the managed file); nothing when the managed file allows it."""
    names = {spec.id, spec.name}
    if add_to == "enabled":
        refuse_list_change(config, ("plugins", "disabled"), names, False, f"enable {spec.id}")
        if spec.source != "builtin":  # a built-in plugin loads unless disabled: plugins.enabled is not needed
            refuse_list_change(config, ("plugins", "enabled"), names, True, f"enable {spec.id}")
    else:
        refuse_list_change(config, ("plugins", "disabled"), names, True, f"disable {spec.id}")


def set_membership(plugin_id: str, add_to: str, remove_from: str, config: Any, home: Path | None = None) -> bool:
    """Add `plugin_id` to `plugins.<add_to>` and take it out of `plugins.<remove_from>` in the config.yaml
    of `home` (default: `$HERMES_HOME`), leaving a list `config`'s managed scope pins as it is; whether
    config.yaml was written."""
    from ruamel.yaml.comments import CommentedMap, CommentedSeq

    def pinned(name: str) -> bool:
        return config.managed_file("plugins", name) is not None

    def mutate(doc: Any) -> bool:
        section = doc.get("plugins")
        if section is None:
            section = doc["plugins"] = CommentedMap()
        if not isinstance(section, dict):
            raise ConfigError("plugins in config.yaml is not a mapping; fix it by hand first (it was not changed)")
        changed = False
        if not pinned(add_to):
            target = section.get(add_to)
            if target is None:
                target = section[add_to] = CommentedSeq()
            if not isinstance(target, list):
                raise ConfigError(f"plugins.{add_to} in config.yaml is not a list; fix it by hand first "
                                  "(it was not changed)")
            if plugin_id not in target:
                target.append(plugin_id)
                changed = True
        other = section.get(remove_from)
        if not pinned(remove_from) and isinstance(other, list) and plugin_id in other:
            while plugin_id in other:
                other.remove(plugin_id)
            changed = True
        return changed

    return edit_config(mutate, home)
