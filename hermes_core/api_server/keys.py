"""Who may call the API server, and what each caller may do.

`API_SERVER_KEY` (Hermes' one key) is a full-access key. Named keys under
`api_server.keys.<name>` hold their secret in an environment variable (`key_env`) and narrow
what they may do: `endpoints` (others answer 403), `tools`/`plugins` (globs: the tools their
agent is offered) and `budget` (the key's model spend, held like a plugin's). Every secret is
compared in constant time; none is ever logged.

The operator's keys (`API_SERVER_KEY`, and anyone on a keyless loopback server) reach every
session and cron job of the home; a named key reaches only what it made (see `owners`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping

import attrs

from hermes_core import Config, ConfigError
from hermes_core import config_keys as keys
from hermes_core.hosting import ToolSelection, secret_matches

__all__ = ["ApiKey", "Keys", "FULL_ACCESS", "OPEN"]

ENDPOINTS = keys.API_ENDPOINTS


@attrs.frozen
class ApiKey:
    """One caller's rights: the endpoints it may call, the tools its agent is offered, the
    budget holder its model requests are counted against (None: the host's own budget), and
    whether it is the operator's (it reaches every session and job, not only its own). `name`
    is also the owner of what the key makes."""

    name: str
    endpoints: frozenset[str] = frozenset(ENDPOINTS)
    tools: ToolSelection = ToolSelection()
    budget_holder: str | None = None
    operator: bool = False

    def may(self, endpoint: str) -> bool:
        return endpoint in self.endpoints

    def caller(self, user: str) -> str:
        """Whose memory a request with `X-Hermes-User: user` has (the agent's `user_id`). The
        full-access key and an open loopback server are the operator's, who names any user:
        `user` as it is ("": the home's own memory). A named key's callers stay under the key:
        `key:<name>`, or `key:<name>/<user>`, so that no key reaches another's or the operator's."""
        if self is FULL_ACCESS or self is OPEN:
            return user
        return f"key:{self.name}/{user}" if user else f"key:{self.name}"


FULL_ACCESS = ApiKey("API_SERVER_KEY", operator=True)
OPEN = ApiKey("loopback", operator=True)  # no key is configured: the server is open on loopback
_RESERVED = (FULL_ACCESS.name, OPEN.name)  # a named key of these names would own the operator's rows


@attrs.frozen
class Keys:
    """Every key the server accepts: (secret, rights) pairs; none means an open loopback server."""

    secrets: tuple[tuple[str, ApiKey], ...] = ()

    @property
    def any(self) -> bool:
        return bool(self.secrets)

    def match(self, token: str) -> ApiKey | None:
        """The rights of `token` (None: no key has it). Every secret is compared, in constant
        time, whichever matches: how long it takes says nothing about which one did."""
        found = None
        for secret, rights in self.secrets:
            if secret_matches(token, secret) and found is None:
                found = rights
        return found

    @classmethod
    def from_config(cls, config: Config, environ: Mapping[str, str] | None = None,
                    main_key: str | None = None) -> Keys:
        """The keys of `config` (`api_server.keys`) with `API_SERVER_KEY` (or `main_key`, Hermes'
        `platforms.api_server.key`). A named key whose variable is unset is a `ConfigError`: a
        key the operator named must not silently fail to exist."""
        env = os.environ if environ is None else environ
        secrets: list[tuple[str, ApiKey]] = []
        main = main_key or env.get("API_SERVER_KEY", "")
        if main:
            secrets.append((main, FULL_ACCESS))
        for name in config.read(keys.API_SERVER_KEYS):
            name = str(name)
            if name in _RESERVED:
                raise ConfigError(f"api_server.keys.{name}: {name!r} names the operator's own key (what it made would "
                                  "be shared with it); rename the key")
            variable = config.read(keys.API_KEY_ENV, name)
            if not variable:
                raise ConfigError(f"api_server.keys.{name}: set key_env to the environment variable holding its "
                                  "secret (the secret itself never goes into config.yaml)")
            secret = env.get(variable, "")
            if not secret:
                raise ConfigError(f"api_server.keys.{name}: the environment variable {variable} is not set; "
                                  f"set it to the key's secret, or remove api_server.keys.{name}")
            budget = [config.read(k, name) for k in keys.API_KEY_BUDGET[1:]]
            holder = f"key:{name}" if any(value is not None for value in budget[:3] + budget[4:6]) else None
            endpoints: list[str] = config.read(keys.API_KEY_ENDPOINTS, name)
            rights = ApiKey(name, frozenset(endpoints), ToolSelection.of_key(config, name) or ToolSelection(), holder)
            secrets.append((secret, rights))
        return cls(tuple(secrets))
