"""`ctx.set_config`: a plugin writing its own settings into config.yaml.

The value goes to `plugins.entries.<id>.settings.<key>` (a dotted key nests), through the same
locked, atomic, comment-keeping edit as every other config write; a plugin can reach no other
part of the file.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from .._errors import ConfigError, RegistrationError

__all__ = ["write_setting"]

_PART = re.compile(r"[A-Za-z0-9_\-]+")


def _plain(value: Any, key: str, plugin_id: str) -> Any:
    """`value` if it is what YAML can hold (None, bool, numbers, text, lists and mappings of them)."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        return [_plain(v, key, plugin_id) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v, key, plugin_id) for k, v in value.items()}
    raise RegistrationError(f"ctx.set_config({key!r}) of plugin {plugin_id!r}: a {type(value).__name__} cannot be "
                            "written to config.yaml; use text, numbers, booleans, lists and mappings",
                            plugin_id=plugin_id)


def write_setting(home: Path, plugin_id: str, key: str, value: Any) -> None:
    """Set `plugins.entries.<plugin_id>.settings.<key>` in `home`'s config.yaml."""
    from .._config.file import edit_config, mapping_at

    parts = str(key).split(".")
    if not all(_PART.fullmatch(part) for part in parts):
        raise RegistrationError(f"ctx.set_config({key!r}) of plugin {plugin_id!r}: a key is names of letters, "
                                "digits, '_' and '-' joined by '.'", plugin_id=plugin_id)
    plain = _plain(value, key, plugin_id)

    def mutate(data: Any) -> bool:
        def not_mapping(depth: int) -> ConfigError:
            return ConfigError(f"cannot set {'.'.join(('plugins.entries', plugin_id, 'settings', *parts))}: "
                               f"{where[depth]!r} in config.yaml is not a mapping")

        where = ("plugins", "entries", plugin_id, "settings", *parts[:-1])
        node = mapping_at(data, where, not_mapping)
        if parts[-1] in node and node[parts[-1]] == plain:
            return False
        node[parts[-1]] = plain
        return True

    edit_config(mutate, home)
