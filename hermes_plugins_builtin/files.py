"""Built-in plugin `files`: Hermes' `read_file` and `write_file`, on the turn's workspace.

They are offered only where the host opened a workspace for the turn (`hermes acp`: the editor's
project), and work on it through `ctx.workspace`: paths are relative to its folder and may not
leave it, and in an editor that offers its file system they read the editor's buffers (unsaved
changes included) and write through the editor.
"""

from __future__ import annotations

import json
from typing import Any

READ_LIMIT = 2000  # lines in one read, as Hermes caps it
READ_CHARS = 100_000  # characters in one read, as Hermes caps it

READ_SCHEMA = {
    "name": "read_file",
    "description": "Read a text file of the workspace with line numbers and pagination. Output format: "
                   "'LINE_NUM|CONTENT'. Use offset and limit for large files; reads over ~100K characters are "
                   "refused, so read those a section at a time.",
    "parameters": {
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "Path to the file to read (relative to the workspace, or "
                                                      "absolute inside it)"},
            "offset": {"type": "integer", "description": "Line number to start reading from (1-indexed, default: 1)",
                       "default": 1, "minimum": 1},
            "limit": {"type": "integer", "description": "Maximum number of lines to read (default: 500, max: 2000)",
                      "default": 500, "minimum": 1, "maximum": READ_LIMIT},
        },
        "required": ["path"],
    },
}

WRITE_SCHEMA = {
    "name": "write_file",
    "description": "Write content to a file of the workspace, completely replacing what it holds (its folders are "
                   "made). Read the file first when you change part of it.",
    "parameters": {
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "Path to the file to write (relative to the workspace, or "
                                                      "absolute inside it)"},
            "content": {"type": "string", "description": "The file's whole new content"},
        },
        "required": ["path", "content"],
    },
}


class _NoWorkspace:
    """A false `check_fn` answer that says why."""

    reason = "no workspace is open: offered where the host works on a folder (hermes acp)"

    def __bool__(self) -> bool:
        return False


def register(ctx: Any) -> None:
    from hermes_core import storable_text

    def open_workspace() -> Any:
        return ctx.workspace is not None or _NoWorkspace()

    def read_file(args: dict[str, Any], **_: Any) -> str:
        offset, limit = int(args.get("offset") or 1), min(int(args.get("limit") or 500), READ_LIMIT)
        workspace = ctx.workspace
        if workspace is None:
            return json.dumps({"error": _NoWorkspace.reason})
        path = workspace.path(args["path"])
        text = workspace.read_text(path, line=offset, limit=limit, max_chars=READ_CHARS)  # only that is read
        if len(text) > READ_CHARS:
            return json.dumps({"error": f"{limit} lines from line {offset} are more than one read takes ({READ_CHARS} "
                                        "characters): read fewer lines (limit)"})
        numbered = [f"{offset + i:6d}|{line}" for i, line in enumerate(text.splitlines())]
        return json.dumps({"path": str(path), "content": "\n".join(numbered), "offset": offset,
                           "lines": len(numbered)}, ensure_ascii=False)

    def write_file(args: dict[str, Any], **_: Any) -> str:
        workspace = ctx.workspace
        if workspace is None:
            return json.dumps({"error": _NoWorkspace.reason})
        content = storable_text(args["content"])  # a lone surrogate the model sent: U+FFFD, as it is stored
        path = workspace.write_text(args["path"], content)
        return json.dumps({"path": str(path), "bytes_written": len(content.encode("utf-8"))}, ensure_ascii=False)

    ctx.register_tool("read_file", "file", READ_SCHEMA, read_file, check_fn=open_workspace, emoji="📖")
    ctx.register_tool("write_file", "file", WRITE_SCHEMA, write_file, check_fn=open_workspace, emoji="✍️")
