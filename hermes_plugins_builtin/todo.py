"""Built-in plugin `todo`: Hermes' `todo_list` tool, the agent's task list for multi-step work.

One list per session (the turn's, `hermes_core.current_turn()`), kept while the host runs (the
256 latest sessions). Every call answers
Hermes' todo result, `{"todos": [...], "revision": n, "summary": {...}}`, which a host may show as
the turn's plan: `hermes acp` sends it to the editor as its plan.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from typing import Any

STATUSES = ("pending", "in_progress", "completed", "cancelled")
MAX_ITEMS = 256
MAX_CONTENT = 4000
SESSIONS = 256

SCHEMA = {
    "name": "todo_list",
    "description": "Track a task list for multi-step work (3+ steps), or when the user gives several tasks. Call with "
                   "no parameters to read the current list.\nList order is priority. Only ONE item in_progress at a "
                   "time. Mark an item completed only after the work is verified done. If something fails, cancel "
                   "it and add a revised item. Always returns the full current list.",
    "parameters": {
        "type": "object",
        "properties": {
            "todos": {
                "type": "array",
                "description": "Task items to write.",
                "items": {
                    "type": "object",
                    "properties": {
                        "id": {"type": "string"},
                        "content": {"type": "string", "description": "Task description"},
                        "status": {"type": "string", "enum": list(STATUSES)},
                        "parent": {"type": "string", "description": "Optional id of another item, making this a "
                                                                    "nested subtask. Omit for top-level."},
                    },
                    "required": ["id", "content", "status"],
                },
            },
            "merge": {"type": "boolean", "default": False,
                      "description": "true: update existing items by id, add new ones. false (default): replace "
                                     "the entire list with a fresh plan."},
        },
        "required": [],
    },
}


def _item(raw: Any) -> dict[str, str]:
    """One task as the list keeps it: id, content (cut at 4000 characters), a known status."""
    if not isinstance(raw, dict):
        return {"id": "?", "content": "(invalid item)", "status": "pending"}
    content = str(raw.get("content") or "").strip() or "(no description)"
    status = str(raw.get("status") or "pending").strip().lower()
    item = {"id": str(raw.get("id") or "").strip() or "?",
            "content": content if len(content) <= MAX_CONTENT else content[: MAX_CONTENT - 1] + "…",
            "status": status if status in STATUSES else "pending"}
    parent = str(raw.get("parent") or "").strip()
    if parent and parent != item["id"]:
        item["parent"] = parent
    return item


class TodoList:
    """One session's tasks, in priority order, and how many times they changed."""

    def __init__(self) -> None:
        self.items: list[dict[str, str]] = []
        self.revision = 0

    def write(self, todos: list[Any], merge: bool) -> None:
        before = [dict(item) for item in self.items]
        if not merge:
            self.items = [_item(raw) for raw in todos]
        else:
            by_id = {item["id"]: item for item in self.items}
            for raw in todos:
                new = _item(raw)
                if new["id"] in by_id and isinstance(raw, dict):  # only the fields given are changed
                    old = by_id[new["id"]]
                    old.update({key: new[key] for key in ("content", "status", "parent")
                                if raw.get(key) and key in new})
                else:
                    by_id[new["id"]] = new
                    self.items.append(new)
        ids = {item["id"] for item in self.items}
        for item in self.items:  # a parent that is not on the list is dropped
            if item.get("parent") not in ids:
                item.pop("parent", None)
        del self.items[MAX_ITEMS:]
        if self.items != before:
            self.revision += 1

    def result(self) -> str:
        counts = {status: sum(item["status"] == status for item in self.items) for status in STATUSES}
        return json.dumps({"todos": self.items, "revision": self.revision,
                           "summary": {"total": len(self.items), **counts}}, ensure_ascii=False)


def register(ctx: Any) -> None:
    lists: OrderedDict[str, TodoList] = OrderedDict()
    lock = threading.Lock()

    def todo_list(args: dict[str, Any], **_: Any) -> str:
        from hermes_core import current_turn

        session_id, todos = current_turn().session_id, args.get("todos")  # todos: a list (the schema is checked)
        with lock:
            tasks = lists.pop(session_id, None) or TodoList()
            lists[session_id] = tasks
            while len(lists) > SESSIONS:
                lists.popitem(last=False)
            if todos is not None:
                tasks.write(todos, bool(args.get("merge")))
            return tasks.result()

    ctx.register_tool("todo_list", "todo", SCHEMA, todo_list, emoji="📋")
