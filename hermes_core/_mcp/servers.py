"""The MCP servers of config.yaml in a host: their tools in the host's registry, their state, and
`ctx.call_mcp` (the host capability "mcp").

Servers start on first need (the tool list, a call), each on its own connection; a server that
fails blocks nothing: its tools say why they are unavailable, and it is tried again with backoff.
"""

from __future__ import annotations

import atexit
import concurrent.futures
import json
import logging
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import config_keys as keys
from .._config.config import Config
from .._errors import McpAllowlistError, McpError, RegistrationError
from .._runtime import leftovers, workers
from .._standins.fields import stand_in_tool
from .._tools.call import error_result
from .._undo import Undo
from . import names, sdk
from .config import ServerConfig, read_servers
from .connection import Connection, why

if TYPE_CHECKING:
    from .._tools.registry import ToolRegistry

__all__ = ["McpServers", "MAX_RESULT_CHARS", "content_text"]

log = logging.getLogger("hermes_core.mcp")
MAX_RESULT_CHARS = 65_536
_CLOSE_WAIT = 6.0  # a stdio server gets 2 s to exit once its stdin closes, then SIGTERM, then SIGKILL


def content_text(result: Any) -> str:
    """The text of an MCP `CallToolResult`'s content blocks, one per line (non-text blocks named)."""
    parts = []
    for block in getattr(result, "content", None) or []:
        kind = getattr(block, "type", "")
        if kind == "text":
            parts.append(block.text)
        elif kind == "resource" and getattr(block.resource, "text", None) is not None:
            parts.append(block.resource.text)
        else:
            parts.append(f"[{kind or 'content'}: {getattr(block, 'mime_type', None) or getattr(block, 'uri', '')}]")
    return "\n".join(parts)


def _answer(server: str, result: Any) -> str:
    """What the model gets from a tool call of server `server`."""
    text = content_text(result)
    if result.is_error:
        return error_result(f"MCP server {server!r}: {text or 'the tool failed without a message'}")
    if not text and result.structured_content is not None:
        return json.dumps(result.structured_content, ensure_ascii=False, default=str)
    return text


class McpServers:
    """The host's MCP servers: `registry()` is where their tools go, `config()` the current config."""

    def __init__(self, registry: Callable[[], ToolRegistry], config: Callable[[], Config],
                 home: Path | None = None) -> None:
        self._registry, self._config, self._home = registry, config, home
        self._lock = threading.RLock()
        self._servers: list[ServerConfig] | None = None  # as read at start; None: not started
        self._connections: dict[str, Connection] = {}
        self._registered: dict[str, list[Undo]] = {}
        self._owners: dict[str, list[str]] = {}  # attached servers, by who attached them
        self.problems: list[str] = []

    # -- lifecycle ---------------------------------------------------------------------------

    def configure(self, config: Config) -> None:
        """A (re)loaded config: servers whose entry changed are closed and started again on next need."""
        with self._lock:
            if self._servers is not None and read_servers(config)[0] != self._servers:
                self.close()

    def start(self) -> None:
        """Start connecting to every enabled server (idempotent; returns at once)."""
        with self._lock:
            if self._servers is not None:
                return
            servers, self.problems = read_servers(self._config())
            self._servers = servers
            for problem in self.problems:
                log.warning("%s", problem)
            if not servers:
                return
            try:
                sdk.require("mcp_servers in config.yaml")
            except McpError as exc:
                self.problems.append(f"{exc}; no MCP server is started")
                log.warning("%s", self.problems[-1])
                return
            if not self._connections:
                atexit.register(self.close)
                leftovers.closing(self.close)
            for server in servers:
                connection = Connection(server, self._listed, self._home)
                self._connections[server.name] = connection
                connection.start()

    def settle(self) -> None:
        """Start, then wait for each server's first attempt to end (its `connect_timeout` at most, all at
        once), so that the first tool list has the tools of every server that answers."""
        self.start()
        if workers.on_portal():  # on the loop the connections run on: never wait
            return
        for connection in list(self._connections.values()):
            connection.settle(connection.server.connect_timeout + 1)

    def close(self) -> None:
        """Close every connection and take their tools away; a later need starts them again."""
        with self._lock:
            connections, self._connections = list(self._connections.values()), {}
            self._servers = None
            self._owners.clear()
            stopping = [future for future in (c.stop() for c in connections) if future is not None]
            concurrent.futures.wait(stopping, _CLOSE_WAIT)
            for undos in self._registered.values():
                for undo in reversed(undos):
                    undo()
            self._registered.clear()

    def attach(self, owner: str, servers: list[Mapping[str, Any]]) -> list[str]:
        """Connect servers a host was handed at run time (an editor's, for one ACP session) beside
        the configured ones, for `owner`; each a mapping with `name` and `command`, `args`, `env`
        (stdio) or `url`, `headers` and `transport` ("http", the default for a url, or "sse"). Their tools join the registry (`mcp__<name>__<tool>`)
        once each answered or `connect_timeout` passed; `tools_of(owner)` names them, `detach(owner)`
        closes them. A server whose name the config already uses is left out. Returns one line per
        server left out."""
        problems: list[str] = []
        started = []
        try:
            sdk.require("MCP servers handed to the agent")
        except McpError as exc:
            return [str(exc)]
        with self._lock:
            configured = {s.name for s in read_servers(self._config())[0]}
            for raw in servers:
                name = str(raw.get("name") or "")
                if not name or name in configured or name in self._connections:
                    problems.append(f"MCP server {name!r} is left out: its name is empty or already in use")
                    continue
                url = str(raw.get("url") or "")
                transport = str(raw.get("transport") or ("http" if url else "stdio"))
                server = ServerConfig(name, transport, str(raw.get("command") or ""),
                                      tuple(str(a) for a in raw.get("args") or ()),
                                      {str(k): str(v) for k, v in (raw.get("env") or {}).items()} or None,
                                      url=url, headers={str(k): str(v) for k, v in (raw.get("headers") or {}).items()})
                if transport not in ("stdio", "http", "sse") or not (server.url if url else server.command):
                    problems.append(f"MCP server {name!r} is left out: transport {transport!r} with "
                                    f"{'url ' + repr(url) if url else 'command ' + repr(server.command)} is not one "
                                    "this host can start (stdio with a command, http or sse with a url)")
                    continue
                connection = Connection(server, self._listed, self._home)
                self._connections[name] = connection
                self._owners.setdefault(owner, []).append(name)
                if len(self._connections) == 1:
                    atexit.register(self.close)
                    leftovers.closing(self.close)
                connection.start()
                started.append(connection)
        for connection in started:
            connection.settle(connection.server.connect_timeout + 1)
        return problems

    def tools_of(self, owner: str) -> set[str]:
        """The names of the tools of the servers attached for `owner`."""
        with self._lock:
            return {name for server in self._owners.get(owner, []) for name in self._tool_names(server)}

    def attached_tools(self) -> dict[str, set[str]]:
        """Every owner's attached tools, by owner."""
        with self._lock:
            return {owner: self.tools_of(owner) for owner in self._owners}

    def detach(self, owner: str) -> None:
        """Close the servers attached for `owner` and take their tools away."""
        with self._lock:
            connections = [self._connections.pop(name) for name in self._owners.pop(owner, [])
                           if name in self._connections]
            for connection in connections:
                for undo in reversed(self._registered.pop(connection.server.name, [])):
                    undo()
            stopping = [future for future in (c.stop() for c in connections) if future is not None]
        concurrent.futures.wait(stopping, _CLOSE_WAIT)

    def _tool_names(self, server: str) -> list[str]:
        connection = self._connections.get(server)
        if connection is None:
            return []
        return [names.tool_name(server, t.name) for t in connection.tools if connection.server.offers(t.name)]

    # -- what a host shows -----------------------------------------------------------------------

    def status(self) -> list[dict[str, Any]]:
        """One row per configured server: name, transport, where, state and why, its tools' names."""
        self.settle()
        rows = [{"name": c.server.name, "transport": c.server.transport, "where": c.server.where(),
                 "state": c.state, "detail": c.describe(), "reason": c.reason,
                 "tools": [names.tool_name(c.server.name, t.name) for t in c.tools if c.server.offers(t.name)]}
                for c in self._connections.values()]
        return rows

    # -- the servers' tools in the registry -------------------------------------------------------

    def _listed(self, connection: Connection, tools: list[Any]) -> None:
        """A (new) listing of `connection`'s tools: they replace what it offered before."""
        server = connection.server
        with self._lock:
            for undo in reversed(self._registered.pop(server.name, [])):
                undo()
            undos = []
            registry = self._registry()
            for tool in tools:
                if not server.offers(tool.name):
                    continue
                name = names.tool_name(server.name, tool.name)
                schema: dict[str, Any] = {"name": name, "description": tool.description or "",
                                          "parameters": dict(tool.input_schema or {"type": "object"})}
                fields = {"name": name, "toolset": names.toolset(server.name), "schema": schema}
                try:
                    undos.append(registry.add(stand_in_tool(fields, _handler(connection, tool.name), f"mcp:{server.name}",
                                                            check_fn=connection.available, is_async=True)))
                except RegistrationError as exc:
                    log.warning("MCP server %r: tool %r is left out: %s", server.name, tool.name, exc)
            self._registered[server.name] = undos

    # -- ctx.call_mcp (the host capability "mcp") ------------------------------------------------

    def call_mcp(self, plugin_id: str, server: str, tool: str, arguments: Mapping[str, Any] | None = None,
                 timeout: float = 30) -> dict[str, Any]:
        """Hermes' `ctx.call_mcp`: `{ok: True, result}` or `{ok: False, error}`, with `structuredContent`
        when the server sent one and `truncated: True` past 65,536 characters. A server missing from
        `plugins.entries.<id>.mcp_allowlist` raises `McpAllowlistError` (a `PermissionError`)."""
        if server not in self._config().read(keys.PLUGIN_MCP_ALLOWLIST, plugin_id):
            raise McpAllowlistError(
                f"plugin {plugin_id!r} may not call MCP server {server!r}: the operator can allow it with "
                f"plugins.entries.{plugin_id}.mcp_allowlist: [{server}] in config.yaml")
        if arguments is not None and not isinstance(arguments, Mapping):
            return {"ok": False, "error": f"arguments must be a mapping, not {type(arguments).__name__}"}
        try:
            seconds = min(max(float(timeout), 1.0), 600.0)
        except (TypeError, ValueError):
            return {"ok": False, "error": f"timeout must be a number of seconds, not {timeout!r}"}
        self.start()
        connection = self._connections.get(server)
        if connection is None:
            known = ", ".join(sorted(self._connections)) or "none"
            problem = next((p for p in self.problems if "MCP extra" in p), "")
            return {"ok": False,
                    "error": problem or f"no MCP server {server!r} is running (configured and enabled: {known})"}
        if workers.on_portal():
            return {"ok": False, "error": "ctx.call_mcp waits for its answer: from async code, run it in a thread "
                                          "(await asyncio.to_thread(ctx.call_mcp, ...))"}
        try:
            result = workers.run_coroutine(connection.acall(tool, dict(arguments or {}), seconds), seconds + 5)
        except Exception as exc:  # noqa: BLE001 - the envelope says what went wrong
            return {"ok": False, "error": why(exc)}
        return _envelope(result)


def _envelope(result: Any) -> dict[str, Any]:
    text = content_text(result)
    envelope: dict[str, Any] = {"ok": not result.is_error}
    if len(text) > MAX_RESULT_CHARS:
        text, envelope["truncated"] = text[:MAX_RESULT_CHARS], True
    envelope["error" if result.is_error else "result"] = text
    if result.structured_content is not None:
        envelope["structuredContent"] = result.structured_content
    return envelope


def _handler(connection: Connection, tool: str) -> Callable[..., Any]:
    async def call(args: dict[str, Any], **kwargs: Any) -> str:
        try:
            result = await connection.acall(tool, args, connection.server.timeout)
        except Exception as exc:  # noqa: BLE001 - the model reads why
            return error_result(f"MCP server {connection.server.name!r}: {why(exc)}")
        return _answer(connection.server.name, result)

    call.__qualname__ = f"mcp:{connection.server.name}:{tool}"
    return call
