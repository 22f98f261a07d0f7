"""What the CLI commands share: the manager of this invocation, JSON and table output."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import click

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
        obj["manager"] = PluginManager().load()  # failures are logged as one-line warnings
    return obj["manager"]  # type: ignore[no-any-return]


def echo_json(data: Any) -> None:
    import json

    click.echo(json.dumps(data, indent=2, ensure_ascii=False, default=str))


def table_width() -> int | None:
    """How wide a table may be on a terminal: `COLUMNS` when set, else the terminal's width.
    None (no limit) when stdout is a pipe or a file, so that `grep` and `awk` see whole rows
    (whatever `COLUMNS` a parent process left in the environment)."""
    import shutil

    try:
        tty = sys.stdout.isatty()
    except (AttributeError, ValueError):
        tty = False
    return shutil.get_terminal_size().columns if tty else None


def _fit(widths: list[int], header: int, limit: int) -> list[int]:
    """Column widths whose row fits in `limit`, giving way in this order: the last column (the
    description) down to 20 characters, the middle ones (widest first) down to 8, the last down
    to its header (`header` characters), the middle ones down to 3, the last down to 3 and only
    then the first (the id or name a user types next)."""
    widths = list(widths)
    last, middle = [len(widths) - 1], list(range(1, len(widths) - 1))
    for columns, floor in ((last, 20), (middle, 8), (last, header), (middle, 3), (last, 3), ([0], 3)):
        while sum(widths) + 2 * (len(widths) - 1) > limit:
            candidates = [i for i in columns if widths[i] > floor]
            if not candidates:
                break
            widths[max(candidates, key=lambda i: widths[i])] -= 1
    return widths


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: max(width - 1, 0)] + "\u2026"


def echo_table(headers: list[str], rows: list[list[str]]) -> None:
    """Rows in aligned columns under upper-case headers; the last column is not padded.

    On a terminal every line fits its width (`COLUMNS` or the window's): cells that do not fit
    are cut with "\u2026", the last column first, the first one last (`_fit`). Piped output keeps whole rows.
    """
    table = [[h.upper() for h in headers], *[[" ".join(cell.split()) for cell in row] for row in rows]]
    widths = [max(len(row[i]) for row in table) for i in range(len(headers))]
    limit = table_width()
    if limit is not None:
        widths = _fit(widths, len(headers[-1]), limit)
        table = [[_cut(cell, widths[i]) for i, cell in enumerate(row)] for row in table]
    lines = ["  ".join(cell.ljust(widths[i]) if i < len(row) - 1 else cell for i, cell in enumerate(row)).rstrip()
             for row in table]
    click.echo("\n".join(lines))
