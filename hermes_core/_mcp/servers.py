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
from .._multimodal import part_placeholder
from .._runtime import leftovers, workers
from .._standins.fields import stand_in_tool
from .._tools.call import error_result
from .._undo import Undo
from . import extras, names, sampling, sdk
from .config import ServerConfig, read_servers
from .connection import Connection, why

if TYPE_CHECKING:
    from .._tools.registry import ToolRegistry

__all__ = ["McpServers", "MAX_RESULT_CHARS", "content_parts", "content_text"]

log = logging.getLogger("hermes_core.mcp")
MAX_RESULT_CHARS = 65_536
_CLOSE_WAIT = 6.0  # a stdio server gets 2 s to exit once its stdin closes, then SIGTERM, then SIGKILL


def content_parts(result: Any) -> list[dict[str, Any]]:
    """An MCP result's content blocks as Hermes' multimodal parts (OpenAI's content parts, and
    MCP's resource links and embedded resources as they are)."""
    parts: list[dict[str, Any]] = []
    for block in getattr(result, "content", None) or []:
        kind = getattr(block, "type", "")
        if kind == "text":
            parts.append({"type": "text", "text": block.text})
        elif kind == "image":
            parts.append({"type": "image_url", "image_url": {"url": f"data:{block.mime_type};base64,{block.data}"}})
        elif kind == "audio":
            subtype = str(block.mime_type).partition("/")[2] or "wav"
            parts.append({"type": "input_audio", "input_audio": {"data": block.data, "format": subtype}})
        elif kind in ("resource_link", "resource"):
            parts.append(block.model_dump(mode="json", by_alias=True, exclude_none=True,
                                          exclude={"annotations", "meta", "icons"}))
        else:
            parts.append({"type": "text", "text": f"[{kind or 'content'}]"})
    return parts


def content_text(result: Any) -> str:
    """The text of an MCP result's content blocks, one per line (each other block named, a
    resource link with its title and URI)."""
    return "\n".join(part["text"] if part["type"] == "text" else part_placeholder(part)
                     for part in content_parts(result))


def _content(result: Any) -> str:
    """An MCP result as a tool result: its text, or Hermes' multimodal result when it has images,
    audio or resources (a model that takes images gets them)."""
    parts = content_parts(result)
    if all(part["type"] == "text" for part in parts):
        return "\n".join(part["text"] for part in parts)
    return json.dumps({"_multimodal": True, "content": parts}, ensure_ascii=False)


def _answer(server: str, result: Any) -> str:
    """What the model gets from a tool call of server `server`."""
    if result.is_error:
        text = content_text(result)
        return error_result(f"MCP server {server!r}: {text or 'the tool failed without a message'}")
    if not result.content and result.structured_content is not None:
        return json.dumps(result.structured_content, ensure_ascii=False, default=str)
    return _content(result)


class McpServers:
    """The host's MCP servers: `registry()` is where their tools go, `config()` the current config."""

    def __init__(self, registry: Callable[[], ToolRegistry], config: Callable[[], Config],
                 home: Path | None = None, llm: Callable[[str], Any] | None = None,
                 portable: Callable[[], list[tuple[str, list[dict[str, Any]]]]] | None = None) -> None:
        self._registry, self._config, self._home = registry, config, home
        self._portable = portable  # the servers of the loaded portable packages (their mcp.json), by package
        self._llm = llm  # llm(caller): a PluginLlm, for the sampling requests of servers allowed to make them
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
            if self._servers is not None and self._read(config)[0] != self._servers:
                self.close()

    def _read(self, config: Config) -> tuple[list[ServerConfig], list[str]]:
        """config.yaml's servers, then the portable packages' (a name config.yaml or another package
        took first is one line, and that server is left out)."""
        servers, problems = read_servers(config)
        owners = {server.name: "" for server in servers}
        for package, entries in self._portable() if self._portable is not None else []:
            for entry in entries:
                name = entry["name"]
                if name in owners:
                    problems.append(f"Agent Plugin {package!r} MCP server {name!r} skipped: " + (
                        "it conflicts with mcp_servers in config.yaml" if not owners[name]
                        else f"name already taken by plugin {owners[name]!r}; rename one server"))
                    continue
                owners[name] = package
                servers.append(ServerConfig(
                    name, entry["transport"], entry.get("command", ""), tuple(entry.get("args", ())),
                    entry.get("env"), entry.get("cwd", ""), entry.get("url", ""), dict(entry.get("headers", {}))))
        return names.apart(servers, problems), problems

    def start(self) -> None:
        """Start connecting to every enabled server (idempotent; returns at once)."""
        with self._lock:
            if self._servers is not None:
                return
            servers, self.problems = self._read(self._config())
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
                connection = Connection(server, self._listed, self._home, self._sampling(server))
                self._connections[server.name] = connection
                connection.start()

    def _sampling(self, server: ServerConfig) -> Callable[..., Any] | None:
        """The sampling callback of `server`: None (refused, and not offered) unless the config allows it."""
        if not server.sampling_max_tokens or self._llm is None:
            return None
        return sampling.callback(server.name, server.sampling_max_tokens, self._llm)

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
            taken = {names.server_part(n) for n in [*(s.name for s in read_servers(self._config())[0]),
                                                    *self._connections]}
            for raw in servers:
                name = str(raw.get("name") or "")
                if not name or names.server_part(name) in taken:
                    problems.append(f"MCP server {name!r} is left out: its name is empty or already in use (names "
                                    "keep letters, digits and _ only)")
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
                taken.add(names.server_part(name))
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
        return list(names.offered(connection.server, connection.tools)) if connection is not None else []

    # -- what a host shows -----------------------------------------------------------------------

    def status(self) -> list[dict[str, Any]]:
        """One row per configured server: name, transport, where, state and why, its tools' names."""
        self.settle()
        rows = [{"name": c.server.name, "transport": c.server.transport, "where": c.server.where(),
                 "state": c.state, "detail": c.describe(), "reason": c.reason,
                 "tools": list(names.offered(c.server, c.tools))}
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
            for name, tool in names.offered(server, tools, warn=True).items():
                schema: dict[str, Any] = {"name": name, "description": tool.description or "",
                                          "parameters": dict(tool.input_schema or {"type": "object"})}
                fields = {"name": name, "toolset": names.toolset(server.name), "schema": schema}
                try:
                    undos.append(registry.add(stand_in_tool(fields, _handler(connection, tool.name), f"mcp:{server.name}",
                                                            check_fn=connection.available, is_async=True)))
                except RegistrationError as exc:
                    log.warning("MCP server %r: tool %r is left out: %s", server.name, tool.name, exc)
            for utility in extras.offered(connection):  # its resources and prompts, Hermes' way
                name = names.tool_name(server.name, utility)
                _, description, parameters = extras.UTILITIES[utility]
                fields = {"name": name, "toolset": names.toolset(server.name), "schema": {
                    "name": name, "description": description.format(server=server.name), "parameters": parameters}}
                undos.append(registry.add(stand_in_tool(fields, extras.handler(connection, utility),
                                                        f"mcp:{server.name}", check_fn=connection.available,
                                                        is_async=True)))
            self._registered[server.name] = undos

    # -- ctx.call_mcp (the host capability "mcp") ------------------------------------------------

    def call_mcp(self, plugin_id: str, server: str, tool: str, arguments: Mapping[str, Any] | None = None,
                 timeout: float = 30) -> dict[str, Any]:
        """Hermes' `ctx.call_mcp`: `{ok: True, result}` or `{ok: False, error}`, with `structuredContent`
        when the server sent one and `truncated: True` past 65,536 characters. A server missing from
        `plugins.entries.<id>.mcp_allowlist` raises `McpAllowlistError` (a `PermissionError`)."""
        connection = self._allowed(plugin_id, server, "ctx.call_mcp")
        if isinstance(connection, dict):
            return connection
        if arguments is not None and not isinstance(arguments, Mapping):
            return {"ok": False, "error": f"arguments must be a mapping, not {type(arguments).__name__}"}
        try:
            seconds = min(max(float(timeout), 1.0), 600.0)
        except (TypeError, ValueError):
            return {"ok": False, "error": f"timeout must be a number of seconds, not {timeout!r}"}
        try:
            result = workers.run_coroutine(connection.acall(tool, dict(arguments or {}), seconds), seconds + 5)
        except Exception as exc:  # noqa: BLE001 - the envelope says what went wrong
            return {"ok": False, "error": why(exc)}
        return _envelope(result)

    def _allowed(self, plugin_id: str, server: str, call: str) -> Connection | dict[str, Any]:
        """The connection to `server` for `plugin_id`, `{ok: False, error}` when there is none, or
        `McpAllowlistError` when the operator did not allow it."""
        if server not in self._config().read(keys.PLUGIN_MCP_ALLOWLIST, plugin_id):
            raise McpAllowlistError(
                f"plugin {plugin_id!r} may not call MCP server {server!r}: the operator can allow it with "
                f"plugins.entries.{plugin_id}.mcp_allowlist: [{server}] in config.yaml")
        self.start()
        connection = self._connections.get(server)
        if connection is None:
            known = ", ".join(sorted(self._connections)) or "none"
            problem = next((p for p in self.problems if "MCP extra" in p), "")
            return {"ok": False,
                    "error": problem or f"no MCP server {server!r} is running (configured and enabled: {known})"}
        if workers.on_portal():
            return {"ok": False, "error": f"{call} waits for its answer: from async code, run it in a thread "
                                          f"(await asyncio.to_thread({call}, ...))"}
        return connection

    def _utility(self, plugin_id: str, server: str, utility: str, args: Mapping[str, Any]) -> dict[str, Any]:
        connection = self._allowed(plugin_id, server, f"ctx.{utility.replace('_', '_mcp_', 1)}")
        if isinstance(connection, dict):
            return connection
        connection.settle(connection.server.connect_timeout + 1)
        needs = extras.UTILITIES[utility][0]
        if getattr(connection.capabilities, needs, None) is None:
            return {"ok": False, "error": f"MCP server {server!r} offers no {needs}"
                                          + ("" if connection.state == "ready" else f" (it is {connection.describe()})")}
        return workers.run_coroutine(extras.run(connection, utility, args), connection.server.timeout + 5)

    def list_mcp_resources(self, plugin_id: str, server: str) -> dict[str, Any]:
        """`ctx.list_mcp_resources`: `{ok, resources, resourceTemplates}` (see `call_mcp` for the allowlist)."""
        return self._utility(plugin_id, server, "list_resources", {})

    def read_mcp_resource(self, plugin_id: str, server: str, uri: str) -> dict[str, Any]:
        """`ctx.read_mcp_resource`: `{ok, contents: [{uri, mimeType, text | blob}]}`."""
        return self._utility(plugin_id, server, "read_resource", {"uri": uri})

    def list_mcp_prompts(self, plugin_id: str, server: str) -> dict[str, Any]:
        """`ctx.list_mcp_prompts`: `{ok, prompts: [{name, description, arguments}]}`."""
        return self._utility(plugin_id, server, "list_prompts", {})

    def get_mcp_prompt(self, plugin_id: str, server: str, name: str,
                       arguments: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """`ctx.get_mcp_prompt`: `{ok, description, messages: [{role, content}]}`."""
        return self._utility(plugin_id, server, "get_prompt", {"name": name, "arguments": dict(arguments or {})})


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
