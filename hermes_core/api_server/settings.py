"""Where the API server listens and what it calls its model, from Hermes' places for them: the
environment (`API_SERVER_HOST`, `API_SERVER_PORT`, `API_SERVER_KEY`, `API_SERVER_MODEL_NAME`),
then `platforms.api_server` in config.yaml (its keys beside `enabled`, or under `extra`), then
the defaults (127.0.0.1:8642, no key, `hermes-agent`)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import attrs

from hermes_core import Config, ConfigError
from hermes_core import config_keys as keys

__all__ = ["DEFAULT_MODEL_NAME", "DEFAULT_PORT", "Settings", "settings"]

DEFAULT_PORT = 8642  # Hermes' port
DEFAULT_MODEL_NAME = "hermes-agent"  # what /v1/models offers (Hermes' name for the agent)


@attrs.frozen
class Settings:
    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    key: str = ""
    model_name: str = DEFAULT_MODEL_NAME
    enabled: bool = False  # platforms.api_server.enabled (the gateway starts it)


def _platform(config: Config) -> Mapping[str, Any]:
    section = config.read(keys.PLATFORM, "api_server")
    if not section:
        section = config.section("gateway", "platforms", "api_server")
    extra = section.get("extra")
    return {**section, **extra} if isinstance(extra, Mapping) else section


def settings(config: Config, environ: Mapping[str, str] | None = None) -> Settings:
    """The API server's settings (see the module); a port that is not a number is a `ConfigError`."""
    env = os.environ if environ is None else environ
    section = _platform(config)

    def pick(variable: str, name: str, default: Any) -> Any:
        value = env.get(variable)
        if value:
            return value
        value = section.get(name)
        return default if value in (None, "") else value

    port = pick("API_SERVER_PORT", "port", DEFAULT_PORT)
    try:
        number = int(port)
        if not 0 <= number <= 65535:
            raise ValueError
    except (TypeError, ValueError):
        raise ConfigError(f"the API server's port {port!r} (API_SERVER_PORT or platforms.api_server.port) is not a "
                          "port number (0 to 65535)") from None
    return Settings(str(pick("API_SERVER_HOST", "host", "127.0.0.1")), number, str(pick("API_SERVER_KEY", "key", "")),
                    str(pick("API_SERVER_MODEL_NAME", "model_name", DEFAULT_MODEL_NAME)), section.get("enabled") is True)
