"""A Portable Agent Plugins v1 package's `mcp.json`: its MCP servers, read with the format's safety
rules as Hermes reads them (spec 1.0.0 §7.2, §9; Hermes' `plugin_runtime/portable.py`).

A problem with the file leaves the package without servers; a problem with one server leaves that
server out; each is one diagnostic line (`[mcp] ...`, `[mcp:<name>] ...`) and the rest of the
package stands. A stdio server runs a bare executable (found on PATH) or `./path` inside the
package, in the package (or `${PLUGIN_ROOT}/...`, `${PLUGIN_DATA}/...`), with `PLUGIN_ROOT` and
`PLUGIN_DATA` set; a remote one is Streamable HTTP at an https URL (http only on loopback), with
no user information or fragment; its headers never reach another origin, as the MCP SDK follows
redirects only within the endpoint's origin. SSE is refused.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from .._files import MAX_SMALL_JSON, read_json
from .._net import is_loopback, unsendable
from .portable import slug, within_root

__all__ = ["MCP_SCHEMA", "package_servers", "read_mcp_json", "server_name"]

log = logging.getLogger("hermes_core.plugins")

MCP_SCHEMA = "https://agent-plugins.org/schemas/1.0.0/mcp.schema.json"
_PLACEHOLDER = re.compile(r"\$\{(PLUGIN_ROOT|PLUGIN_DATA)\}")
_STDIO = {"type", "command", "args", "env", "cwd"}
_REMOTE = {"type", "url", "headers"}


def server_name(name: str) -> str:
    """Hermes' name for a package's server: its mcp.json name, lower case, other characters `-`."""
    return slug(name)


def _expand(value: str, root: Path, data: Path) -> str:
    return _PLACEHOLDER.sub(lambda m: str(root if m.group(1) == "PLUGIN_ROOT" else data), value)


def _cwd(value: str, root: Path, data: Path) -> Path:
    if value.startswith("./") or value == ".":
        base, rest = root, value[2:]
    elif value == "${PLUGIN_ROOT}" or value.startswith("${PLUGIN_ROOT}/"):
        base, rest = root, value[len("${PLUGIN_ROOT}/"):]
    elif value == "${PLUGIN_DATA}" or value.startswith("${PLUGIN_DATA}/"):
        base, rest = data, value[len("${PLUGIN_DATA}/"):]
    else:
        raise ValueError("path must start with ./, ${PLUGIN_ROOT}, or ${PLUGIN_DATA}")
    path = (base / rest).resolve() if rest else base
    if not within_root(base, path):
        raise ValueError("path escapes its resolved root")
    return path


def _stdio(entry: dict[str, Any], root: Path, data: Path) -> dict[str, Any]:
    if set(entry) - _STDIO:
        raise ValueError("unknown stdio field")
    command = entry.get("command")
    if not isinstance(command, str) or not command or "\0" in command:
        raise ValueError("command must be a non-empty executable token")
    if command.startswith("./"):
        program = (root / command[2:]).resolve()
        if not within_root(root, program):
            raise ValueError("path escapes its resolved root")
        command = str(program)
    elif any(c.isspace() for c in command):
        raise ValueError("command must contain one executable token")
    elif "/" in command or "\\" in command or command in (".", ".."):
        raise ValueError("command must be a bare executable or begin with ./")
    args, env = entry.get("args", []), entry.get("env", {})
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise ValueError("args must be an array of strings")
    if not isinstance(env, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in env.items()):
        raise ValueError("env must map string keys to string values")
    if {"PLUGIN_ROOT", "PLUGIN_DATA"} & set(env):
        raise ValueError("PLUGIN_ROOT and PLUGIN_DATA are reserved")
    cwd = entry.get("cwd", "./")
    if not isinstance(cwd, str):
        raise ValueError("cwd must be a string")
    folder = _cwd(cwd, root, data)
    return {"transport": "stdio", "command": command, "args": [_expand(a, root, data) for a in args],
            "env": {**{k: _expand(v, root, data) for k, v in env.items()},
                    "PLUGIN_ROOT": str(root), "PLUGIN_DATA": str(data)}, "cwd": str(folder)}


def _remote(entry: dict[str, Any]) -> dict[str, Any]:
    if set(entry) - _REMOTE:
        raise ValueError("unknown remote field")
    url = entry.get("url")
    if not isinstance(url, str) or not url:
        raise ValueError("url must be a non-empty string")
    problem = unsendable(url, {})
    if problem is not None:
        raise ValueError(problem)
    try:
        parts = urlsplit(url)
        host = parts.hostname
    except ValueError as exc:
        raise ValueError(f"url is not parseable: {exc}") from None
    if parts.scheme not in ("http", "https"):
        raise ValueError("url scheme must be http or https")
    if parts.username is not None or parts.password is not None:
        raise ValueError("url must not contain user information")
    if parts.fragment or url.endswith("#"):
        raise ValueError("url must not contain a fragment")
    if not host:
        raise ValueError("url must have a host")
    if parts.scheme == "http" and not is_loopback(host):
        raise ValueError("non-loopback url must use https")
    headers = entry.get("headers", {})
    if not isinstance(headers, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in headers.items()) \
            or len({k.lower() for k in headers}) != len(headers):
        raise ValueError("invalid headers")
    problem = unsendable(url, headers)
    if problem is not None:
        raise ValueError(problem)
    return {"transport": "http", "url": url, "headers": dict(headers)}


def read_mcp_json(root: Path, data: Path) -> tuple[list[dict[str, Any]], list[str]]:
    """The servers of the package at (resolved) `root`, each a mapping `McpServers` takes (`name`,
    `transport`, `command`, `args`, `env`, `cwd`, or `url`, `headers`), and the
    diagnostics. `data` is the package's `PLUGIN_DATA` folder, made for a stdio server."""
    path = root / "mcp.json"
    if not path.exists() and not path.is_symlink():
        return [], []
    if path.is_symlink() or not path.is_file() or not within_root(root, path):
        return [], ["[mcp] mcp.json must be a regular in-root file"]
    try:
        raw = read_json(path, MAX_SMALL_JSON)  # a BOM read past; too large, not UTF-8 or JSON, too deep: ValueError
    except (OSError, ValueError) as exc:
        return [], [f"[mcp] mcp.json is not valid readable JSON: {exc}"]
    if not isinstance(raw, dict):
        return [], ["[mcp] mcp.json must contain a JSON object"]
    if set(raw) != {"$schema", "mcpServers"}:
        return [], ["[mcp] mcp.json has an invalid top-level shape"]
    if raw["$schema"] != MCP_SCHEMA:
        return [], ["[mcp] mcp.json declares an unsupported schema"]
    if not isinstance(raw["mcpServers"], dict):
        return [], ["[mcp] mcpServers must be an object"]
    servers, notes = [], []
    for name, entry in raw["mcpServers"].items():
        try:
            if not isinstance(entry, dict):
                raise ValueError("invalid server entry")
            kind = entry.get("type")
            if kind == "stdio":
                server = _stdio(entry, root, data)
                data.mkdir(parents=True, exist_ok=True)  # the package's data folder exists before it starts
                if within_root(data, Path(server["cwd"])):
                    Path(server["cwd"]).mkdir(parents=True, exist_ok=True)
            elif kind == "streamable-http":
                server = _remote(entry)
            elif kind == "sse":
                raise ValueError("portable sse transport is not supported")
            else:
                raise ValueError("unknown MCP server type")
        except (ValueError, OSError) as exc:
            notes.append(f"[mcp:{name}] {exc}")
            continue
        servers.append({"name": server_name(str(name)), **server})
    return servers, notes


def package_servers(records: Any, home: Path) -> list[tuple[str, list[dict[str, Any]]]]:
    """The MCP servers of each loaded portable package among `records` (plugin records), by
    package id; each package's data folder is `$HERMES_HOME/plugin-data/<its skill namespace>`."""
    from .portable import skill_namespace

    found = []
    for record in records:
        if record.spec.portable and record.status == "ok" and record.spec.path is not None:
            servers, notes = read_mcp_json(record.spec.path.resolve(), home / "plugin-data" / skill_namespace(record.id))
            for note in notes:
                log.warning("Agent Plugin %r %s", record.id, note)
            found.append((record.id, servers))
    return found
