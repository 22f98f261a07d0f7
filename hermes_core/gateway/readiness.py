"""Whether a registered platform can start, and why not, without connecting anything: what
`hermes gateway run` starts, `hermes gateway status` shows and doctor reports.

A platform is enabled by `platforms.<name>.enabled: true` (or Hermes' `gateway.platforms.<name>`),
or, unless the config says `enabled: false`, by its environment when its registration has an
`env_enablement_fn` (which returns the settings it read, as Hermes' does). An enabled platform is
ready when `check_fn()` holds and its config is usable: `validate_config(config)`, else
`is_connected(config)`, else every variable of `required_env` is set.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from hermes_core import Config, PlatformEntry
from hermes_core import config_keys as keys

from .config import HomeChannel, Platform, PlatformConfig, platform_config

__all__ = ["Readiness", "readiness", "platform_block"]


@attrs.frozen
class Readiness:
    """A platform's state before it starts: `ready`, else `why` in a few words."""

    entry: PlatformEntry
    enabled: bool
    ready: bool
    why: str
    config: PlatformConfig


def platform_block(config: Config, name: str) -> dict[str, Any]:
    """`platforms.<name>` over `gateway.platforms.<name>` (Hermes reads both; the top level wins)."""
    nested = config.read(keys.GATEWAY_PLATFORMS).get(name)
    top = config.read(keys.PLATFORMS).get(name)
    block: dict[str, Any] = dict(nested) if isinstance(nested, Mapping) else {}
    block.update(top if isinstance(top, Mapping) else {})
    return block


def _call(what: str, fn: Callable[..., Any], *args: Any) -> tuple[Any, str]:
    try:
        return fn(*args), ""
    except Exception as exc:  # noqa: BLE001 - a plugin's check that fails is a reason, not a crash
        return None, f"{what} raised {type(exc).__name__}: {exc}"


def readiness(entry: PlatformEntry, config: Config) -> Readiness:
    """Whether `entry`'s platform is enabled and ready under `config` (see the module)."""
    block = platform_block(config, entry.name)
    settings = platform_config(block)
    explicit = "enabled" in block
    if not settings.enabled and not explicit and entry.env_enablement_fn is not None:
        seed, _ = _call("env_enablement_fn", entry.env_enablement_fn)
        if isinstance(seed, Mapping) and seed:
            seed = dict(seed)
            home = seed.pop("home_channel", None)
            settings.extra.update(seed)
            if isinstance(home, Mapping) and home.get("chat_id"):
                settings.home_channel = HomeChannel(platform=Platform(entry.name), chat_id=str(home["chat_id"]),
                                                    name=str(home.get("name") or "Home"))
            settings.enabled = True

    def result(ready: bool, why: str) -> Readiness:
        return Readiness(entry, settings.enabled, ready, why, settings)

    if not settings.enabled:
        return result(False, "disabled in config.yaml" if explicit else
                      f"not enabled (platforms.{entry.name}.enabled: true in config.yaml)")
    ok, error = _call("check_fn", entry.check_fn)
    if error or not ok:
        hint = f": {entry.install_hint}" if entry.install_hint else ""
        return result(False, error or f"its requirements are not met{hint}")
    missing = [name for name in entry.required_env if not os.getenv(name)]
    check = entry.validate_config or entry.is_connected
    if check is not None:
        valid, error = _call("validate_config" if entry.validate_config else "is_connected", check, settings)
        if error or not valid:
            lacking = f" (missing {', '.join(missing)})" if missing else ""
            return result(False, error or f"its configuration is incomplete{lacking}")
    elif missing:
        return result(False, f"missing {', '.join(missing)}")
    return result(True, "")
