"""Built-in context engine `lcm`: lossless context management.

    context: {engine: lcm}
    lcm: {threshold: 0.5, protect_first_n: 3, protect_last_n: 20, fan_in: 4}

What leaves the window is not lost: each compression stores the middle messages whole in
SQLite (`$HERMES_HOME/lcm/lcm.db`, per session) and puts a compact summary node in their
place that says what it covers. When the window holds more than `fan_in` nodes, the oldest
`fan_in` are folded into a parent node (a summary of summaries), so the window stays small
however long the conversation gets, and every node still leads down to the messages. The
model reaches back with two tools: `lcm_grep` (full-text search over everything stored)
and `lcm_expand` (a node's messages, whole). Node summaries are extractive (the opening of
each message), so compressing needs no LLM call, and it does not index: the first `lcm_grep`
after a compression indexes what is new. Durability and the file's format: `_lcm_store`.
"""

from __future__ import annotations

import json
import re
from collections import deque
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from hermes_core import MemoryStoreError, estimate_tokens, message_text, repair_tool_pairing, split_for_compression
from hermes_core import config_keys as keys

from ._engine_base import ThresholdEngine
from ._lcm_store import LcmStore, Node

__all__ = ["LcmEngine", "TOOL_SCHEMAS"]

NODE = re.compile(r"^\[lcm node (\d+) ")
SUMMARY_LINES = 6
LINE_CHARS = 120
EXPAND_MESSAGES = 40
EXPAND_CHARS = 40_000

TOOL_SCHEMAS: list[dict[str, Any]] = [
    {
        "name": "lcm_grep",
        "description": "Search everything earlier in this conversation that was compressed out of view "
        "(full text, best matches first). Each hit names the lcm node that holds it.",
        "parameters": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "Words to look for."},
                "limit": {"type": "integer", "minimum": 1, "maximum": 50, "description": "At most this many (10)."},
            },
            "required": ["query"],
            "additionalProperties": False,
        },
    },
    {
        "name": "lcm_expand",
        "description": "Bring back the full messages an lcm node stands for (as shown in '[lcm node N ...]').",
        "parameters": {
            "type": "object",
            "properties": {
                "node_id": {"type": "integer", "minimum": 1},
                "offset": {"type": "integer", "minimum": 0, "description": "Skip this many messages (paging)."},
            },
            "required": ["node_id"],
            "additionalProperties": False,
        },
    },
]


def _error(message: str) -> str:
    return json.dumps({"error": message}, ensure_ascii=False)


def _opening(message: Mapping[str, Any]) -> str:
    text = " ".join(message_text(message).split())
    return f"{message.get('role')}: {text[: LINE_CHARS - 1] + '…' if len(text) > LINE_CHARS else text}"


def _node_message(node: Node) -> dict[str, Any]:
    span = f"messages #{node.first_seq}–#{node.last_seq}"
    covers = f"{span}, in {len(node.children)} nodes" if node.children else span
    return {"role": "user", "content": f"[lcm node {node.node_id} · level {node.level} · {covers} · stored whole: "
                                       f"lcm_expand(node_id={node.node_id}) brings them back]\n{node.summary}"}


class LcmEngine(ThresholdEngine):
    """Lossless compression: old messages move to SQLite behind a DAG of summary nodes."""

    name = "lcm"
    settings = (keys.LCM_THRESHOLD, keys.LCM_PROTECT_FIRST_N, keys.LCM_PROTECT_LAST_N, keys.LCM_FAN_IN)
    threshold_percent = keys.LCM_THRESHOLD.default
    protect_first_n = keys.LCM_PROTECT_FIRST_N.default
    protect_last_n = keys.LCM_PROTECT_LAST_N.default
    fan_in = keys.LCM_FAN_IN.default

    def __init__(self, *, context_length: int = 128_000, path: str | Path | None = None) -> None:
        self._path = Path(path) if path is not None else None
        self._store: LcmStore | None = None
        self.session_id = "default"
        self.update_model("", context_length)

    def __deepcopy__(self, memo: dict[int, Any]) -> LcmEngine:
        return type(self)(context_length=self.context_length, path=self._path)

    @property
    def store(self) -> LcmStore:
        if self._store is None:
            if self._path is None:
                from hermes_core import hermes_home

                self._path = hermes_home() / "lcm" / "lcm.db"
            self._store = LcmStore(self._path)
        return self._store

    # -- the host's calls ---------------------------------------------------------------------

    def on_session_start(self, session_id: str, **kwargs: Any) -> None:
        self.session_id = session_id
        home = kwargs.get("hermes_home")
        if home and self._path is None:
            self._path = Path(home) / "lcm" / "lcm.db"
        super().on_session_start(session_id, **kwargs)

    def on_session_end(self, session_id: str, messages: Sequence[dict[str, Any]]) -> None:
        if self._store is not None:
            self._store.close()  # everything is already stored; the next start reopens it

    def compress(
        self, messages: list[dict[str, Any]], current_tokens: int | None = None, focus_topic: str | None = None,
        force: bool = False, memory_context: str = "",
    ) -> list[dict[str, Any]]:
        messages = list(messages)
        head_end, tail_start = split_for_compression(messages, self.protect_first_n, self.protect_last_n)
        if head_end >= tail_start:
            return repair_tool_pairing(messages)
        self.compression_count += 1
        nodes: list[Node] = []
        run: list[dict[str, Any]] = []
        for message in messages[head_end:tail_start]:
            existing = self._node_of(message)
            if existing is None:
                run.append(message)
                continue
            nodes += self._leaf(run) + [existing]
            run = []
        nodes += self._leaf(run)
        width = max(int(self.fan_in), 2)
        queue = deque(nodes)  # the oldest `width` folded into a parent, until `width` are left
        while len(queue) > width:
            group = [queue.popleft() for _ in range(width)]
            summary = "\n".join(line for child in group for line in child.summary.splitlines()[:2])
            queue.appendleft(self.store.add_parent(self.session_id, group, summary))
        result = repair_tool_pairing([*messages[:head_end], *map(_node_message, queue), *messages[tail_start:]])
        self.last_prompt_tokens = estimate_tokens(result)
        return result

    def _node_of(self, message: Mapping[str, Any]) -> Node | None:
        """The stored node a window message stands for (a node this session wrote)."""
        content = message.get("content")
        match = NODE.match(content) if message.get("role") == "user" and isinstance(content, str) else None
        return self.store.node(self.session_id, int(match.group(1))) if match else None

    def _leaf(self, run: list[dict[str, Any]]) -> list[Node]:
        if not run:
            return []
        lines = [_opening(m) for m in run[:SUMMARY_LINES]]
        if len(run) > SUMMARY_LINES:
            lines.append(f"… and {len(run) - SUMMARY_LINES} more messages")
        return [self.store.add_leaf(self.session_id, run, "\n".join(lines))]

    # -- tools --------------------------------------------------------------------------------

    def get_tool_schemas(self) -> list[dict[str, Any]]:
        return json.loads(json.dumps(TOOL_SCHEMAS))

    def handle_tool_call(self, name: str, args: dict[str, Any], **kwargs: Any) -> str:
        if not isinstance(args, Mapping):
            return _error(f"{name}: arguments must be an object")
        try:
            if name == "lcm_grep":
                return self._grep(args)
            if name == "lcm_expand":
                return self._expand(args)
        except MemoryStoreError as exc:
            return _error(str(exc))
        return _error(f"context engine 'lcm' has no tool {name!r} (it has lcm_grep, lcm_expand)")

    def _grep(self, args: Mapping[str, Any]) -> str:
        query, limit = args.get("query"), args.get("limit", 10)
        if not isinstance(query, str) or not query.strip():
            return _error("lcm_grep: 'query' must be a non-empty string")
        if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= 50:
            return _error("lcm_grep: 'limit' must be an integer from 1 to 50")
        hits = self.store.grep(self.session_id, query, limit)
        return json.dumps({"results": hits, "count": len(hits)}, ensure_ascii=False)

    def _expand(self, args: Mapping[str, Any]) -> str:
        node_id, offset = args.get("node_id"), args.get("offset", 0)
        if not isinstance(node_id, int) or isinstance(node_id, bool) or not 0 < node_id < 2**63:
            return _error(f"lcm_expand: 'node_id' must be a node number, not {node_id!r}")
        if not isinstance(offset, int) or isinstance(offset, bool) or not 0 <= offset < 2**63:
            return _error("lcm_expand: 'offset' must be a non-negative integer")
        node = self.store.node(self.session_id, node_id)
        if node is None:
            return _error(f"lcm_expand: this conversation has no lcm node {node_id}")
        page = self.store.messages(self.session_id, node.first_seq, node.last_seq, offset, EXPAND_MESSAGES)
        shown: list[dict[str, Any]] = []
        size = 0
        for seq, message in page:
            size += len(json.dumps(message, ensure_ascii=False))
            if shown and size > EXPAND_CHARS:
                break
            shown.append({"seq": seq, "message": message})
        total = node.last_seq - node.first_seq + 1
        reply: dict[str, Any] = {"node_id": node.node_id, "level": node.level, "children": list(node.children),
                                 "total": total, "offset": offset, "messages": shown}
        if offset + len(shown) < total:
            reply["next_offset"] = offset + len(shown)
        return json.dumps(reply, ensure_ascii=False)

    def get_status(self) -> dict[str, Any]:
        stored, nodes = self.store.counts(self.session_id)
        return {**super().get_status(), "stored_messages": stored, "nodes": nodes}
