"""What the CLI commands share: the manager of this invocation, JSON and table output."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import click

from ._tables import format_json, format_table

if TYPE_CHECKING:
    from .._manager import PluginManager


def setup_logging(debug: bool) -> None:
    """Log records as one line each on stderr (`hermes: warning: ...`); tracebacks only with --debug.

    Only commands that load plugins call this: the listing never imports logging.
    """
    import logging

    class OneLine(logging.Formatter):
        def format(self, record: logging.LogRecord) -> str:
            text = f"hermes: {record.levelname.lower()}: {record.getMessage()}"
            if not debug:
                return text.splitlines()[0]
            return text + ("\n" + self.formatException(record.exc_info) if record.exc_info else "")

    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(OneLine())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.DEBUG if debug else logging.WARNING)


def manager(ctx: click.Context) -> PluginManager:
    """The invocation's `PluginManager`, loaded once; a plugin that fails is a warning, not an exit."""
    root = ctx.find_root()
    obj = root.obj if isinstance(root.obj, dict) else {}
    root.obj = obj
    if "manager" not in obj:
        from .._manager import PluginManager

        setup_logging(bool(obj.get("debug")))
        obj["manager"] = PluginManager(lazy=True).load()  # failures: one-line warnings
    return obj["manager"]  # type: ignore[no-any-return]


def echo_json(data: Any) -> None:
    click.echo(format_json(data))


def echo_table(headers: list[str], rows: list[list[str]]) -> None:
    """Rows in aligned columns under upper-case headers, fitting the terminal (`format_table`)."""
    click.echo(format_table(headers, rows))
