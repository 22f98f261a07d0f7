"""The CLI's output as plain strings: aligned tables that fit the terminal, and JSON.

No click here: `hermes plugins list` answered at start-up (`_start`) prints through these too,
so its output is the click command's, byte for byte.
"""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["format_json", "format_table", "table_width"]


def format_json(data: Any) -> str:
    import json

    return json.dumps(data, indent=2, ensure_ascii=False, default=str)


def table_width() -> int | None:
    """How wide a table may be on a terminal: `COLUMNS` when set, else the terminal's width.
    None (no limit) when stdout is a pipe or a file, so that `grep` and `awk` see whole rows
    (whatever `COLUMNS` a parent process left in the environment)."""
    try:
        tty = sys.stdout.isatty()
    except (AttributeError, ValueError):
        tty = False
    if not tty:
        return None
    import shutil

    return shutil.get_terminal_size().columns


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


def format_table(headers: list[str], rows: list[list[str]]) -> str:
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
    return "\n".join(lines)
