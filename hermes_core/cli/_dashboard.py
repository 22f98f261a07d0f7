"""`hermes dashboard`: the operator's pages in a browser. Imported only when asked for; Starlette
and uvicorn (the `server` extra) only inside the command."""

from __future__ import annotations

import click

from ._common import setup_logging


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True,
              help="The address to listen on (any but loopback needs a login through an auth provider plugin).")
@click.option("--port", type=click.IntRange(0, 65535), default=9119, show_default=True,
              help="The port (0: a free one).")
@click.option("--no-open", is_flag=True, help="Do not open a browser.")
@click.option("--login", is_flag=True, help="Require a login through an auth provider even on loopback.")
@click.pass_context
def dashboard(ctx: click.Context, host: str, port: int, no_open: bool, login: bool) -> None:
    """Serve the dashboard (status, plugins, sessions, cron, usage, keys, MCP, skills) until Ctrl-C.

    The first line on stderr is the URL to open; on loopback it carries the session token that
    guards this process's dashboard (HERMES_DASHBOARD_SESSION_TOKEN sets it).
    """
    import asyncio
    import importlib.util

    missing = [name for name in ("starlette", "uvicorn") if importlib.util.find_spec(name) is None]
    if missing:
        raise click.ClickException(f"hermes dashboard needs {' and '.join(missing)}: pip install 'hermes-core[server]'")
    from ..dashboard import open_dashboard, serve_dashboard

    root = ctx.find_root().obj or {}
    setup_logging(bool(root.get("debug")))
    board = open_dashboard(host, login=login)
    for warning in [*board.providers.problems, *board.warnings]:
        click.echo(f"hermes: warning: {warning}", err=True)

    def ready(url: str) -> None:
        token = board.gate.token
        shown = f"{url}/?token={token}" if token else f"{url}/"
        access = "session token (loopback)" if token else f"login: {', '.join(p.name for p in board.providers.providers())}"
        click.echo(f"{shown} hermes dashboard: {access}; Ctrl-C stops", err=True)
        if not no_open:
            import webbrowser

            try:
                webbrowser.open(shown)
            except Exception:  # noqa: BLE001 - no browser here: the URL is printed
                pass

    asyncio.run(serve_dashboard(board, host, port, ready=ready))
