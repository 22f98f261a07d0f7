"""`mcp_servers:` in config.yaml, with Hermes' keys: what each enabled server is and how to reach it.

A bad entry is one line naming the server and the key, and that server alone is left out.
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Mapping
from typing import Any

import attrs

from .. import config_keys as keys
from .._config.config import Config
from .._errors import ConfigError
from .._net import unsendable

__all__ = ["ServerConfig", "read_servers"]

_VARIABLE = re.compile(r"\$\{(?:env:)?([A-Za-z_][A-Za-z0-9_]*)\}")


@attrs.frozen
class ServerConfig:
    """One enabled MCP server: a command run over stdio, or a URL (Streamable HTTP, or SSE)."""

    name: str
    transport: str  # "stdio", "http" or "sse"
    command: str = ""
    args: tuple[str, ...] = ()
    env: Mapping[str, str] | None = None
    cwd: str = ""
    url: str = ""
    headers: Mapping[str, str] = attrs.field(factory=dict)
    timeout: float = 300.0
    connect_timeout: float = 60.0
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    auth: str = ""  # "oauth": an OAuth login (`hermes mcp login <name>`) is needed
    oauth_scope: str = ""
    oauth_client_name: str = "hermes-core"
    oauth_redirect_port: int = 0
    oauth_client_id: str = ""  # a client registered beforehand; "": dynamic client registration
    oauth_client_secret: str = attrs.field(default="", repr=False)
    sampling_max_tokens: int = 0  # > 0: its sampling requests are answered (sampling.max_tokens_cap); 0: refused

    def offers(self, tool: str) -> bool:
        """Whether the agent gets tool `tool` of this server: `include` globs win, then `exclude`."""
        if self.include:
            return any(fnmatch.fnmatchcase(tool, pattern) for pattern in self.include)
        return not any(fnmatch.fnmatchcase(tool, pattern) for pattern in self.exclude)

    def where(self) -> str:
        """The server as a listing shows it: its command line or its URL."""
        return self.url or " ".join([self.command, *self.args])


def _interpolated(value: str, key: str) -> str:
    """`value` with each `${VAR}` / `${env:VAR}` replaced from the environment; an unset one is a
    `ConfigError` naming `key`."""

    def variable(match: re.Match[str]) -> str:
        found = os.environ.get(match.group(1))
        if found is None:
            raise ConfigError(f"config.yaml: {key} uses ${{{match.group(1)}}}, which is not set in the environment")
        return found

    return _VARIABLE.sub(variable, value)


def _strings(raw: Mapping[str, Any], key: str) -> dict[str, str]:
    return {str(name): _interpolated(str(value), f"{key}.{name}") for name, value in raw.items() if value is not None}


def _server(config: Config, name: str) -> ServerConfig | None:
    """Server `name` as configured, None when it is disabled; `ConfigError` for a bad entry."""
    if not config.read(keys.MCP_ENABLED, name):
        return None
    where = f"mcp_servers.{name}"
    command, url = config.read(keys.MCP_COMMAND, name), config.read(keys.MCP_URL, name)
    transport = config.read(keys.MCP_TRANSPORT, name) or ("stdio" if command else "http")
    transport = "http" if transport == "streamable_http" else transport
    if transport == "stdio" and not command:
        raise ConfigError(f"config.yaml: {where} has no command (a stdio server) and no url (an HTTP one)")
    if transport != "stdio" and not url:
        raise ConfigError(f"config.yaml: {where} uses transport {transport} but has no url")
    auth = config.read(keys.MCP_AUTH, name)
    if auth and transport == "stdio":
        raise ConfigError(f"config.yaml: {where} has auth: {auth}, which only a server reached by url (http or sse) "
                          "can use")
    port = config.read(keys.MCP_OAUTH_REDIRECT_PORT, name)
    if port > 65535:
        raise ConfigError(f"config.yaml: {where}.oauth.redirect_port is {port}, not a port (0 to 65535)")
    url, headers = _interpolated(url, f"{where}.url"), _strings(config.read(keys.MCP_HEADERS, name), f"{where}.headers")
    problem = unsendable(url, headers) if transport != "stdio" else None
    if problem is not None:  # said now, not as a connect error retried with backoff for ever
        raise ConfigError(f"config.yaml: {where}: {problem}")
    env = config.read(keys.MCP_ENV, name)
    include: list[str] = config.read(keys.MCP_INCLUDE, name)
    exclude: list[str] = config.read(keys.MCP_EXCLUDE, name)
    return ServerConfig(
        name, transport, _interpolated(command, f"{where}.command"),
        tuple(_interpolated(arg, f"{where}.args") for arg in config.read(keys.MCP_ARGS, name)),
        _strings(env, f"{where}.env") if env else None, config.read(keys.MCP_CWD, name),
        url, headers,
        config.read(keys.MCP_TIMEOUT, name) or 300.0, config.read(keys.MCP_CONNECT_TIMEOUT, name) or 60.0,
        tuple(include), tuple(exclude), auth, config.read(keys.MCP_OAUTH_SCOPE, name),
        config.read(keys.MCP_OAUTH_CLIENT_NAME, name) or "hermes-core", port,
        _interpolated(config.read(keys.MCP_OAUTH_CLIENT_ID, name), f"{where}.oauth.client_id"),
        _interpolated(config.read(keys.MCP_OAUTH_CLIENT_SECRET, name), f"{where}.oauth.client_secret"),
        max(config.read(keys.MCP_SAMPLING_MAX_TOKENS, name), 1) if config.read(keys.MCP_SAMPLING_ENABLED, name) else 0,
    )


def read_servers(config: Config) -> tuple[list[ServerConfig], list[str]]:
    """The enabled servers of `mcp_servers:`, and one line per entry left out for a problem."""
    servers, problems = [], []
    try:
        names = [str(name) for name in config.read(keys.MCP_SERVERS)]
    except ConfigError as exc:
        return [], [str(exc)]
    for name in names:
        try:
            server = _server(config, name)
        except ConfigError as exc:
            problems.append(f"{exc}; MCP server {name!r} is not started")
            continue
        if server is not None:
            servers.append(server)
    return servers, problems
