"""What the CLI commands share: the manager of this invocation, JSON and table output."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from .._manager import PluginManager


def manager(ctx: click.Context) -> PluginManager:
    """The invocation's `PluginManager`, loaded once; a plugin that fails is a warning, not an exit."""
    root = ctx.find_root()
    obj = root.obj if isinstance(root.obj, dict) else {}
    root.obj = obj
    if "manager" not in obj:
        from .._manager import PluginManager

        obj["manager"] = PluginManager().load()  # failures are logged as one-line warnings
    return obj["manager"]  # type: ignore[no-any-return]


def echo_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, ensure_ascii=False, default=str))


def echo_table(headers: list[str], rows: list[list[str]]) -> None:
    """Rows in aligned columns under upper-case headers; the last column is not padded."""
    table = [[h.upper() for h in headers], *rows]
    widths = [max(len(row[i]) for row in table) for i in range(len(headers))]
    for row in table:
        cells = [cell.ljust(widths[i]) if i < len(row) - 1 else cell for i, cell in enumerate(row)]
        click.echo("  ".join(cells).rstrip())
