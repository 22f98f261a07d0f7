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

    def read_text(self, name: str | os.PathLike[str], *, line: int | None = None, limit: int | None = None) -> str:
        """The text of a file of the workspace; from 1-based `line`, at most `limit` lines."""
        if line is not None and line < 1:
            raise ValueError(f"line is 1-based, not {line}")
        if limit is not None and limit < 0:
            raise ValueError(f"limit must not be negative, not {limit}")
        return self.read_file(self.path(name), line, limit)

    def write_text(self, name: str | os.PathLike[str], content: str) -> Path:
        """Replace a file of the workspace with `content` (its folders made); returns its path."""
        if not isinstance(content, str):
            raise TypeError(f"content must be a str, not {type(content).__name__}")
        full = self.path(name)
        self.write_file(full, content)
        return full

    # -- what a host overrides ---------------------------------------------------------------------

    def read_file(self, path: Path, line: int | None, limit: int | None) -> str:
        """Read `path` (absolute, inside the workspace): from disk."""
        return lines(path.read_text(encoding="utf-8", errors="replace"), line, limit)

    def write_file(self, path: Path, content: str) -> None:
        """Write `path` (absolute, inside the workspace): to disk, replaced whole."""
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, content)


def lines(text: str, line: int | None, limit: int | None) -> str:
    """The part of `text` from 1-based `line`, at most `limit` lines (all of it: None, None)."""
    if line is None and limit is None:
        return text
    kept = text.splitlines(keepends=True)[(line or 1) - 1:]
    return "".join(kept if limit is None else kept[:limit])


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
