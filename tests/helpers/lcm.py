"""The lcm store tests' messages and engine, shared with the process those tests kill mid-run."""

from __future__ import annotations

import json
from pathlib import Path

from hermes_plugins_builtin.lcm import LcmEngine


def kinds_of_messages(word: str) -> list[dict]:
    """Every shape a stored message takes, each holding `word` and a word of its own."""
    return [
        {"role": "user", "content": f"Please look at {word}1 — naïve café 東京 in module.py", "name": "ada"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {
            "name": "read_file", "arguments": json.dumps({"path": f"{word}2.py"})}}]},
        {"role": "tool", "tool_call_id": "c1", "content": f"def {word}3():\n    return 1\n" * 50},
        {"role": "assistant", "content": f"Reading {word}4 next.", "tool_calls": [{"id": "c2", "type": "function",
                                                                                   "function": {"name": "ls", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c2", "content": ""},
        {"role": "user", "content": [{"type": "text", "text": f"see {word}5"},
                                     {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]},
        {"content": f"{word}6 comes before its role", "role": "assistant"},
    ]


def window(middle: list[dict]) -> list[dict]:
    """`middle` between a head and a tail the engine keeps (protect_first_n 1, protect_last_n 2)."""
    return [{"role": "system", "content": "You are a test agent."}, *middle,
            {"role": "user", "content": "and now?"}, {"role": "assistant", "content": "Done."}]


def engine_at(path: Path, session_id: str = "s1") -> LcmEngine:
    engine = LcmEngine(context_length=2_000, path=path)
    engine.protect_first_n, engine.protect_last_n = 1, 2
    engine.on_session_start(session_id)
    return engine
