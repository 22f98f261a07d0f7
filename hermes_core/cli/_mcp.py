"""`hermes mcp serve` (the plugins' tools to any MCP client), `hermes mcp list` (the servers of
`mcp_servers:`), and `hermes mcp login` / `logout` (an OAuth server's login). Imported only when
`hermes mcp` is asked for; the SDK only inside the commands."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import click

from .._errors import McpError
from ._common import echo_json, echo_table, manager, setup_logging

if TYPE_CHECKING:
    from .._mcp.config import ServerConfig
    from ..hosting import BrowserPolicy

TOKEN_VARIABLE = "HERMES_MCP_TOKEN"


@click.group()
def mcp() -> None:
    """MCP both ways: serve the plugins' tools, and see the MCP servers of config.yaml."""


def _bind(value: str) -> tuple[str, int]:
    host, _, port = value.rpartition(":")
    try:
        number = int(port)
    except ValueError:
        raise click.BadParameter(f"{value!r} is not [HOST:]PORT (a port number, optionally after a host)") from None
    if not 0 <= number <= 65535:
        raise click.BadParameter(f"port {number} is not between 0 and 65535")
    return host or "127.0.0.1", number


def _token(token_file: str | None) -> str | None:
    if token_file:
        try:
            token = Path(token_file).read_text(encoding="utf-8-sig").strip()
        except OSError as exc:
            raise McpError(f"hermes mcp serve: cannot read the token file {token_file}: "
                           f"{exc.strerror or exc}") from None
        except UnicodeDecodeError as exc:
            raise McpError(f"hermes mcp serve: the token file {token_file} is not UTF-8 text (byte {exc.start + 1}); "
                           "write the token in it as plain text") from None
        if not token:
            raise McpError(f"hermes mcp serve: the token file {token_file} is empty")
        return token
    return os.environ.get(TOKEN_VARIABLE, "").strip() or None


@mcp.command()
@click.option("--http", "bind", metavar="[HOST:]PORT", help="Serve Streamable HTTP at http://HOST:PORT/mcp "
              "(host 127.0.0.1 unless given; port 0: any free one) instead of stdio.")
@click.option("--tools", "tools", multiple=True, metavar="GLOB",
              help="Serve the tools whose name matches (repeatable).")
@click.option("--plugin", "plugins", multiple=True, metavar="ID",
              help="Serve the tools of these plugins (repeatable, globs).")
@click.option("--prompts", is_flag=True, help="Offer plugin slash commands as prompts (arguments from their usage).")
@click.option("--resources", is_flag=True, help="Offer the stored sessions and the skills as read-only resources.")
@click.option("--allow-remote", is_flag=True, help="Allow a non-loopback HOST (needs a bearer token).")
@click.option("--token-file", type=click.Path(dir_okay=False), help=f"The bearer token HTTP clients must send "
              f"(else ${TOKEN_VARIABLE}; required off loopback).")
@click.pass_context
def serve(ctx: click.Context, bind: str | None, tools: tuple[str, ...], plugins: tuple[str, ...], prompts: bool,
          resources: bool, allow_remote: bool, token_file: str | None) -> None:
    """Serve the enabled plugins' and active engines' tools over MCP (stdio unless --http).

    Every call takes the agent's path: argument validation, pre_tool_call, the time limit,
    post_tool_call and transform_tool_result. Logs go to stderr.
    """
    from .._mcp import sdk
    from ..hosting import BrowserPolicy, ToolSelection, is_loopback

    address = _bind(bind) if bind is not None else None
    token = _token(token_file) if address is not None else None
    if address is not None and not is_loopback(address[0]):
        if not allow_remote:
            raise McpError(f"hermes mcp serve: {address[0]} is not a loopback address; pass --allow-remote "
                           f"(and a bearer token in ${TOKEN_VARIABLE} or --token-file) to serve other machines")
        if not token:
            raise McpError(f"hermes mcp serve: serving {address[0]} needs a bearer token: set ${TOKEN_VARIABLE} "
                           "or pass --token-file")
    sdk.require("hermes mcp serve")
    host = manager(ctx)
    browsers = BrowserPolicy.from_config(host.config) if address is not None else None  # said before it starts
    selection = ToolSelection(tools=tools, plugins=plugins)
    served = [info.name for info in host.tool_infos() if info.available and selection.wants(info)]
    if not served:
        click.echo("hermes: warning: no tool matches what was asked to be served; clients will see none", err=True)
    from .._version import __version__
    from ..mcp_server import build_server

    readable = None
    if resources:
        from ..agent import SessionStore
        from ..hosting import state_url
        from ..mcp_server import Resources, SessionResources, SkillResources

        readable = Resources([SessionResources(SessionStore(host.home, url=state_url(host.home))),
                              SkillResources(lambda: host.skill_library("mcp"))])
    server = build_server(host, selection, prompts=prompts, resources=readable, version=__version__)
    if address is None:
        _serve_stdio(server)
    else:
        _serve_http(server, address, token, len(served), browsers)


def _serve_stdio(server: object) -> None:
    import anyio

    from ..mcp_server import serve_stdio
    from ._stdout import protocol_streams

    with protocol_streams() as (stdin, stdout):
        anyio.run(serve_stdio, server, stdin, stdout)


def _serve_http(server: object, address: tuple[str, int], token: str | None, count: int,
                browsers: BrowserPolicy | None) -> None:
    import functools

    import anyio

    from ..mcp_server import serve_http

    def ready(url: str) -> None:  # the first line is the URL alone, for scripts that start the server
        auth = "; clients must send the bearer token" if token else ""
        click.echo(url, err=True)
        click.echo(f"hermes: serving {count} tool{'s' if count != 1 else ''} over MCP{auth}", err=True)

    anyio.run(functools.partial(serve_http, browsers=browsers), server, address[0], address[1], token, ready)


@mcp.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list.")
@click.pass_context
def list_(ctx: click.Context, as_json: bool) -> None:
    """The MCP servers of config.yaml (mcp_servers:): their state and the tools they give the agent."""
    host = manager(ctx)
    rows = host.mcp.status()  # each problem is said once, as a warning, when the servers start
    if as_json:
        echo_json(rows)
    elif not rows:
        click.echo("no MCP servers are configured (mcp_servers: in config.yaml)")
    else:
        echo_table(["name", "transport", "state", "tools"],
                   [[r["name"], r["transport"], r["detail"], ", ".join(r["tools"]) or "-"] for r in rows])


def _oauth_server(ctx: click.Context, name: str, command: str) -> tuple[ServerConfig, Path]:
    """Server `name` of `mcp_servers:` (one with `auth: oauth`) and `$HERMES_HOME`; `McpError` naming
    the configured servers when there is no such one."""
    from .._config.file import load_config
    from .._mcp.config import read_servers
    from .._paths import hermes_home

    root = ctx.find_root()
    setup_logging(bool(isinstance(root.obj, dict) and root.obj.get("debug")))
    home = hermes_home()
    servers, problems = read_servers(load_config(home))
    found = next((server for server in servers if server.name == name), None)
    if found is None:
        problem = next((p for p in problems if f"mcp_servers.{name}" in p), "")
        known = ", ".join(sorted(server.name for server in servers)) or "none"
        raise McpError(problem or f"hermes mcp {command}: no MCP server {name!r} in mcp_servers: of config.yaml "
                                  f"(configured and enabled: {known})")
    if found.auth != "oauth":
        raise McpError(f"hermes mcp {command}: MCP server {name!r} does not use OAuth "
                       f"(mcp_servers.{name}.auth: oauth turns it on)")
    return found, home


@mcp.command()
@click.argument("name")
@click.option("--no-browser", is_flag=True, help="Print the URL only; do not open a browser.")
@click.option("--paste", is_flag=True, help="Headless: paste the URL the browser ends on (or its code) here, "
              "instead of a listener on 127.0.0.1 receiving it.")
@click.option("--timeout", type=click.FloatRange(min=1), default=300.0, show_default=True,
              help="Seconds to wait for the browser (or the paste).")
@click.pass_context
def login(ctx: click.Context, name: str, no_browser: bool, paste: bool, timeout: float) -> None:
    """Log in to MCP server NAME (auth: oauth): authorize hermes-core in a browser; its tokens are kept
    in $HERMES_HOME/mcp/oauth/ (mode 0600) and refreshed before they expire."""
    import sys

    import anyio

    from .._mcp import sdk
    from .._mcp.login import login as log_in

    server, home = _oauth_server(ctx, name, "login")
    sdk.require("hermes mcp login")

    def say(line: str) -> None:
        click.echo(line)
        sys.stdout.flush()

    anyio.run(lambda: log_in(server, home, say=say, read_line=sys.stdin.readline, browser=not no_browser,
                             paste=paste, timeout=timeout))
    click.echo(f"logged in to {name}")


@mcp.command()
@click.argument("name")
@click.pass_context
def logout(ctx: click.Context, name: str) -> None:
    """Forget the login to MCP server NAME (its stored tokens and registration)."""
    from .._mcp.login import logout as log_out

    server, home = _oauth_server(ctx, name, "logout")
    click.echo(f"logged out of {name}" if log_out(server, home) else f"{name}: there was no login to forget")
