"""Built-in memory provider `builtin`: long-term memory in SQLite with FTS5 under `$HERMES_HOME`.

The default of the `memory` slot, so a new user has memory with no setup. The model uses
three tools: `memory_save`, `memory_search`, `memory_forget`. The system prompt carries a
short digest of the latest memories, `prefetch` adds the ones relevant to each user
message, and `sync_turn` keeps what the user explicitly asks to be remembered.

Memories are kept per caller: a host that serves several people hands `initialize` the
caller's `user_id` (with its `platform`, or `user_platform` where the id comes from another),
and every read, search, save and delete of the session is that caller's alone. Without a `user_id` (the CLI: one home, one user) the session
has the home's own memories, as before callers were told apart.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hermes_core import MemoryProvider, MemoryStoreError

from ._memory_store import MAX_CONTENT_CHARS, MAX_TAGS, Memory, MemoryStore

__all__ = ["TOOL_SCHEMAS", "BuiltinMemoryProvider", "database_path", "owner_of"]

DIGEST_ITEMS = 8
DIGEST_ITEM_CHARS = 160
PREFETCH_ITEMS = 5
PREFETCH_CHARS = 1_500

TOOL_SCHEMAS: list[dict[str, Any]] = [
    {
        "name": "memory_save",
        "description": "Save a fact worth remembering across conversations (a preference, a name, a decision). "
        "Returns the memory's id.",
        "parameters": {
            "type": "object",
            "properties": {
                "content": {"type": "string", "minLength": 1, "maxLength": MAX_CONTENT_CHARS,
                            "description": "The fact, written so it makes sense on its own later."},
                "tags": {"type": "array", "items": {"type": "string", "maxLength": 64}, "maxItems": MAX_TAGS,
                         "description": "Optional keywords to find it by."},
            },
            "required": ["content"],
            "additionalProperties": False,
        },
    },
    {
        "name": "memory_search",
        "description": "Search saved memories by words; the best matches come first.",
        "parameters": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "Words to look for (plain text)."},
                "limit": {"type": "integer", "minimum": 1, "maximum": 50, "description": "At most this many (5)."},
            },
            "required": ["query"],
            "additionalProperties": False,
        },
    },
    {
        "name": "memory_forget",
        "description": "Delete one saved memory by its id (as returned by memory_save or memory_search).",
        "parameters": {
            "type": "object",
            "properties": {"id": {"type": ["integer", "string"], "description": "The memory's id."}},
            "required": ["id"],
            "additionalProperties": False,
        },
    },
]

# "remember that X", "please remember: X", "don't forget X" at the start of a line of the user's message.
_REMEMBER = re.compile(
    r"^[ \t]*(?:please[ \t]+)?(?:remember|don'?t[ \t]+forget|never[ \t]+forget)"
    r"(?:[ \t]+(?:that|this))?[ \t]*[:,]?[ \t]+(?P<what>\S.*)$",
    re.IGNORECASE | re.MULTILINE,
)


def database_path(hermes_home: str | os.PathLike[str] | None = None) -> Path:
    """Where the built-in provider keeps its memories: `$HERMES_HOME/memory/memories.db`."""
    if hermes_home is None:
        from hermes_core import hermes_home as default_home

        hermes_home = default_home()
    return Path(hermes_home) / "memory" / "memories.db"


def owner_of(platform: Any, user_id: Any) -> str:
    """Whose memories a session has: `"<platform>:<user_id>"` for a caller the host named (the
    same id on two platforms is two people), "" (the home's own) for none."""
    if user_id is None or str(user_id) == "":
        return ""
    return f"{platform or 'cli'}:{user_id}"


def _memory_id(raw: Any) -> int | None:
    """An id as the model may send it: 12, 12.0, "12" or "#12" (as the digest shows it)."""
    value: int | None = None
    if isinstance(raw, int) and not isinstance(raw, bool):
        value = raw
    elif isinstance(raw, float) and raw.is_integer():
        value = int(raw)
    elif isinstance(raw, str) and re.fullmatch(r"#?[0-9]{1,19}", raw.strip(), re.ASCII):
        value = int(raw.strip().lstrip("#"))
    return value if value is not None and 0 < value < 2**63 else None


def _error(message: str) -> str:
    return json.dumps({"error": message}, ensure_ascii=False)


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _line(memory: Memory, limit: int) -> str:
    tags = f" [{', '.join(memory.tags)}]" if memory.tags else ""
    return f"- #{memory.id}: {_clip(memory.content, limit)}{tags}"


class BuiltinMemoryProvider(MemoryProvider):
    """Memories in `$HERMES_HOME/memory/memories.db` (or `path=`), searched with SQLite FTS5."""

    name = "builtin"

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self._path = Path(path) if path is not None else None
        self._store: MemoryStore | None = None
        self._session_id = ""
        self._owner = ""

    def __deepcopy__(self, memo: dict[int, Any]) -> BuiltinMemoryProvider:
        return type(self)(self._path)

    @property
    def store(self) -> MemoryStore:
        """The SQLite store (opened on first use; the file is created on the first save)."""
        if self._store is None:
            self._store = MemoryStore(self._path or database_path(), owner=self._owner)
        return self._store

    # -- required -----------------------------------------------------------------------

    def is_available(self) -> bool:
        return _has_fts5()

    def initialize(self, session_id: str, **kwargs: Any) -> None:
        self._session_id = session_id
        self._owner = owner_of(kwargs.get("user_platform") or kwargs.get("platform"), kwargs.get("user_id"))
        home = kwargs.get("hermes_home")
        if self._path is None and home:
            self._path = database_path(home)
        if self._store is not None and (self._store.path != (self._path or database_path())
                                        or self._store.owner != self._owner):
            self._store.close()
            self._store = None

    def get_tool_schemas(self) -> list[dict[str, Any]]:
        return json.loads(json.dumps(TOOL_SCHEMAS))

    # -- tools --------------------------------------------------------------------------

    def handle_tool_call(self, name: str, args: dict[str, Any], **kwargs: Any) -> str:
        handler = {"memory_save": self._save, "memory_search": self._search, "memory_forget": self._forget}.get(name)
        if handler is None:
            return _error(f"memory provider 'builtin' has no tool {name!r} (it has memory_save, memory_search, "
                          "memory_forget)")
        if not isinstance(args, Mapping):
            return _error(f"{name}: arguments must be an object, not {type(args).__name__}")
        try:
            return handler(args)
        except MemoryStoreError as exc:
            return _error(str(exc))

    def _save(self, args: Mapping[str, Any]) -> str:
        content, tags = args.get("content"), args.get("tags") or []
        if not isinstance(content, str) or not content.strip():
            return _error("memory_save: 'content' must be a non-empty string")
        if len(content) > MAX_CONTENT_CHARS:
            return _error(f"memory_save: 'content' is {len(content)} characters; the limit is {MAX_CONTENT_CHARS}")
        if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags) or len(tags) > MAX_TAGS:
            return _error(f"memory_save: 'tags' must be a list of at most {MAX_TAGS} strings")
        memory_id, new = self.store.save(content, [t.strip() for t in tags if t.strip()], session_id=self._session_id)
        return json.dumps({"id": memory_id, "saved": new} | ({} if new else {"note": "already remembered"}))

    def _search(self, args: Mapping[str, Any]) -> str:
        query, limit = args.get("query"), args.get("limit", 5)
        if not isinstance(query, str):
            return _error("memory_search: 'query' must be a string")
        if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= 50:
            return _error("memory_search: 'limit' must be an integer from 1 to 50")
        if not query.strip():
            return _error("memory_search: 'query' is empty; give words to look for")
        found = self.store.search(query, limit)
        return json.dumps({"results": [m.as_json() for m in found], "count": len(found)}, ensure_ascii=False)

    def _forget(self, args: Mapping[str, Any]) -> str:
        raw = args.get("id")
        memory_id = _memory_id(raw)
        if memory_id is None:
            return _error(f"memory_forget: 'id' must be a memory id (an integer), not {raw!r}")
        if not self.store.forget(memory_id):
            return _error(f"memory_forget: there is no memory with id {memory_id}")
        return json.dumps({"id": memory_id, "forgotten": True})

    # -- around each turn -----------------------------------------------------------------

    def system_prompt_block(self) -> str:
        latest = self.store.recent(DIGEST_ITEMS)
        total = self.store.count() if latest else 0
        lines = [
            "## Long-term memory",
            ("You can remember facts across conversations: memory_save to keep one, memory_search to look "
             "one up, memory_forget to delete one."),
        ]
        if latest:
            shown = "latest" if total > len(latest) else "all"
            lines.append(f"{total} saved; the {shown} {len(latest)}:")
            lines += [_line(m, DIGEST_ITEM_CHARS) for m in latest]
        else:
            lines.append("Nothing is saved yet.")
        return "\n".join(lines)

    def prefetch(self, query: str, *, session_id: str = "") -> str:
        if not query.strip():
            return ""
        found = self.store.search(query, PREFETCH_ITEMS)
        if not found:
            return ""
        lines = ["Possibly relevant memories:"]
        for memory in found:
            line = _line(memory, 300)
            if sum(len(x) + 1 for x in lines) + len(line) > PREFETCH_CHARS:
                break
            lines.append(line)
        return "\n".join(lines)

    def sync_turn(self, user_content: str, assistant_content: str, *, session_id: str = "",
                  messages: list[dict[str, Any]] | None = None) -> None:
        """Keep what the user explicitly asked to be remembered ("remember that ...")."""
        wanted = [m.group("what").strip() for m in _REMEMBER.finditer(user_content or "")]
        items = [(text[:MAX_CONTENT_CHARS], ["remembered"]) for text in wanted if text]
        if items:
            self.store.save_many(items, session_id=session_id or self._session_id)

    def shutdown(self) -> None:
        if self._store is not None:
            self._store.close()


_FTS5: bool | None = None


def _has_fts5() -> bool:
    """Whether this Python's SQLite has FTS5 (checked once, in memory)."""
    global _FTS5
    if _FTS5 is None:
        import sqlite3
        from contextlib import closing

        try:
            with closing(sqlite3.connect(":memory:")) as db:
                db.execute("CREATE VIRTUAL TABLE t USING fts5(x)")
            _FTS5 = True
        except sqlite3.Error:
            _FTS5 = False
    return _FTS5
