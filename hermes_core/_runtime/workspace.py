"""A turn's workspace: the folder its file tools work in, and how its files are read and written.

A host whose turns work on a folder (an editor's project, in `hermes acp`) runs them inside
`workspace_scope(workspace)`. Plugins' file tools reach it as `ctx.workspace` (None where no
workspace is open) and read and write through it, so the host decides where files come from:
`hermes acp` reads the editor's buffers, unsaved changes included, and writes through the editor.

A path is relative to the workspace's `root`, or absolute inside it; a path that leads outside
it, through `..` or a symbolic link, is a `WorkspaceError`.

>>> with workspace_scope(Workspace("/work/project")):
...     ...   # turns run here: their file tools work on /work/project
"""

from __future__ import annotations

import contextvars
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .._files import write_atomic

__all__ = ["Workspace", "WorkspaceError", "current_workspace", "workspace_scope"]


class WorkspaceError(ValueError):
    """A path the workspace refuses: outside its folder."""


class Workspace:
    """A folder on this machine's disk; a host subclasses it (overriding `read_file` and
    `write_file`) to read and write the same paths elsewhere."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root).expanduser().resolve()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str(self.root)!r})"

    def path(self, name: str | os.PathLike[str]) -> Path:
        """`name` as an absolute path inside the workspace, or `WorkspaceError`."""
        raw = Path(os.path.expanduser(os.fspath(name)))
        full = (raw if raw.is_absolute() else self.root / raw).resolve(strict=False)
        if not full.is_relative_to(self.root):
            raise WorkspaceError(f"{os.fspath(name)!r} is outside the workspace {self.root}; "
                                 "give a path inside it (relative paths start there)")
        return full

    def read_text(self, name: str | os.PathLike[str], *, line: int | None = None, limit: int | None = None,
                  max_chars: int | None = None) -> str:
        """The text of a file of the workspace; from 1-based `line`, at most `limit` lines and at most
        `max_chars` characters and one more (so that a caller sees there was more). From disk only
        what is asked for is read, a bounded piece at a time: a huge file costs what its lines do."""
        if line is not None and line < 1:
            raise ValueError(f"line is 1-based, not {line}")
        if limit is not None and limit < 0:
            raise ValueError(f"limit must not be negative, not {limit}")
        if max_chars is not None and max_chars < 0:
            raise ValueError(f"max_chars must not be negative, not {max_chars}")
        path = self.path(name)
        token = _max_chars.set(max_chars)  # for the disk reader, under a host's `read_file` too
        try:
            text = self.read_file(path, line, limit)
        finally:
            _max_chars.reset(token)
        return text if max_chars is None else text[:max_chars + 1]  # a host's own reader (an editor's buffers)

    def write_text(self, name: str | os.PathLike[str], content: str) -> Path:
        """Replace a file of the workspace with `content` (its folders made); returns its path."""
        if not isinstance(content, str):
            raise TypeError(f"content must be a str, not {type(content).__name__}")
        full = self.path(name)
        self.write_file(full, content)
        return full

    # -- what a host overrides ---------------------------------------------------------------------

    def read_file(self, path: Path, line: int | None, limit: int | None) -> str:
        """Read `path` (absolute, inside the workspace): from disk, no more than `read_text` was asked for."""
        return read_lines(path, line, limit, _max_chars.get())

    def write_file(self, path: Path, content: str) -> None:
        """Write `path` (absolute, inside the workspace): to disk, replaced whole."""
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, content)


_PIECE = 64 * 1024  # characters read at a time
_max_chars: contextvars.ContextVar[int | None] = contextvars.ContextVar("hermes_read_max_chars", default=None)


def read_lines(path: Path, line: int | None, limit: int | None, max_chars: int | None = None) -> str:
    """From the file `path` (UTF-8, an undecodable byte as U+FFFD), the text from 1-based `line`, at
    most `limit` lines and `max_chars + 1` characters; only those (and the lines before, a piece at
    a time) are read. Lines end at a newline (`\\r\\n` and `\\r` read as one)."""
    with open(path, encoding="utf-8", errors="replace") as file:
        skip = (line or 1) - 1
        while skip:
            piece = file.readline(_PIECE)
            if not piece:
                return ""
            skip -= piece.endswith("\n")
        taken: list[str] = []
        count = size = 0
        while limit is None or count < limit:
            room = _PIECE if max_chars is None else min(_PIECE, max_chars + 1 - size)
            piece = file.readline(room) if room > 0 else ""
            if not piece:
                break
            taken.append(piece)
            size += len(piece)
            count += piece.endswith("\n")
    return "".join(taken)


_current: contextvars.ContextVar[Workspace | None] = contextvars.ContextVar("hermes_workspace", default=None)


@contextmanager
def workspace_scope(workspace: Workspace | None) -> Iterator[Workspace | None]:
    """Turns run inside work on `workspace` (None: on none)."""
    token = _current.set(workspace)
    try:
        yield workspace
    finally:
        _current.reset(token)


def current_workspace() -> Workspace | None:
    """The workspace of the turn running here, or None."""
    return _current.get()
