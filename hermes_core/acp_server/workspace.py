"""An ACP session's workspace: the folder the editor opened the session in (its `cwd`), read and
written through the editor where it offers its file system (`fs/read_text_file`: the buffer as
the editor holds it, unsaved changes included; `fs/write_text_file`: the editor writes, and can
show the change), else on this machine's disk."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from hermes_core.hosting import Workspace

from .relay import from_editor

__all__ = ["EditorWorkspace"]

TIMEOUT = 30.0  # seconds the editor has to answer a read or a write


class EditorWorkspace(Workspace):
    def __init__(self, root: str, conn: Any, session_id: str, loop: asyncio.AbstractEventLoop,
                 reads: bool, writes: bool) -> None:
        super().__init__(root)
        self.conn, self.session_id, self.loop = conn, session_id, loop
        self.reads, self.writes = reads, writes

    def read_file(self, path: Path, line: int | None, limit: int | None) -> str:
        if not self.reads:
            return super().read_file(path, line, limit)
        answer = from_editor(self.conn.read_text_file(session_id=self.session_id, path=str(path), line=line,
                                                      limit=limit), self.loop, TIMEOUT)
        return str(answer.content)

    def write_file(self, path: Path, content: str) -> None:
        if not self.writes:
            super().write_file(path, content)
            return
        from_editor(self.conn.write_text_file(session_id=self.session_id, path=str(path), content=content),
                    self.loop, TIMEOUT)
