"""`hermes tools list|call` and `hermes command`."""

from __future__ import annotations

import click

from .._errors import UnknownToolError
from .._quote import quoted
from ._common import echo_json, echo_table, manager


@click.group()
def tools() -> None:
    """List and call the tools of loaded plugins."""


@tools.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list.")
@click.pass_context
def list_(ctx: click.Context, as_json: bool) -> None:
    """List every registered tool, who provides it, and whether it is available."""
    infos = manager(ctx).tool_infos()
    rows = [{"name": t.name, "toolset": t.toolset, "plugin": t.plugin, "available": t.available,
             "reason": t.reason, "description": t.schema.get("description", "")} for t in infos]
    if as_json:
        echo_json(rows)
    elif not rows:
        click.echo("no tools registered (enable a plugin: `hermes plugins enable ID`)")
    else:
        echo_table(
            ["name", "toolset", "plugin", "available"],
            [[r["name"], r["toolset"], r["plugin"] or "-", "yes" if r["available"] else f"no ({r['reason']})"]
             for r in rows],
        )


def _complete_tool_names(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[str]:
    """Shell completion of a tool name: the enabled plugins are loaded (as `tools list` does),
    with their warnings and prints kept out of the shell."""
    import contextlib
    import io
    import logging

    logging.disable(logging.CRITICAL)
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            from .._manager import PluginManager

            names = [t.name for t in PluginManager(lazy=True).load().tool_infos()]
    except Exception:  # noqa: BLE001 - a completion never prints a traceback into the shell
        return []
    return sorted(name for name in names if name.startswith(incomplete))


@tools.command()
@click.argument("name", shell_complete=_complete_tool_names)
@click.argument("arguments", default="{}")
@click.pass_context
def call(ctx: click.Context, name: str, arguments: str) -> None:
    """Call tool NAME with ARGUMENTS (a JSON object) and print its result."""
    import json

    loaded = manager(ctx)
    session = loaded.default_session()
    if not session.has_tool(name):
        available = ", ".join(sorted(t.name for t in session.tool_infos())) or "none"
        raise UnknownToolError(f"unknown tool {quoted(name)} (available: {available})")
    try:
        args = json.loads(arguments)
    except (ValueError, RecursionError) as exc:
        why = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
        raise click.BadParameter(f"not a JSON object: {why}", param_hint="ARGUMENTS") from None
    if not isinstance(args, dict):
        raise click.BadParameter("must be a JSON object, such as '{\"text\": \"hi\"}'", param_hint="ARGUMENTS")
    outcome = session.run_tool(name, args)
    loaded.close()
    click.echo(outcome.result)
    try:  # the host's own error result ({"error": ...} alone); a tool's own error object is its output
        failed = isinstance(parsed := json.loads(outcome.result), dict) and set(parsed) == {"error"}
    except (ValueError, RecursionError):
        failed = False
    if failed or outcome.blocked:  # ... or a plugin's pre_tool_call blocked the call
        ctx.exit(1)


@click.command()
@click.argument("name")
@click.argument("text", nargs=-1)
@click.pass_context
def command(ctx: click.Context, name: str, text: tuple[str, ...]) -> None:
    """Run the plugin slash command NAME with TEXT (the words joined by spaces)."""
    result = manager(ctx).run_command(name, " ".join(text))
    if result is not None:
        click.echo(result)
