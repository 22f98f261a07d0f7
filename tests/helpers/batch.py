"""What the batch tests share: a tool plugin, the scripted model's answers, datasets and output rows."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hermes_core.testing import Fault, Reply, tool_call
from tests.helpers import llm_config, make_folder_plugin

LOOKUP = '''
import json

def lookup(args, **kwargs):
    if args["key"] == "missing":
        raise KeyError(args["key"])
    return json.dumps({"value": args["key"].upper()})

def register(ctx):
    ctx.register_tool("lookup", "facts", {"name": "lookup", "description": "Look a key up.",
                      "parameters": {"type": "object", "properties": {"key": {"type": "string"}},
                                     "required": ["key"]}}, lookup)
    ctx.register_tool("other", "misc", {"name": "other", "parameters": {"type": "object"}}, lambda a, **k: "{}")
'''


def answer(body: Any, delay: float = 0.0) -> Reply | Fault:
    """The next step of a conversation: 'look up K' calls lookup(K) once, then answers with the result."""
    messages = body["messages"]
    last = messages[-1]
    if last["role"] == "tool":
        return Reply(f"The answer is {last['content']}", delay=delay, usage={"prompt_tokens": 100, "completion_tokens": 10})
    prompt = next(m["content"] for m in messages if m["role"] == "user")
    if "explode" in prompt:
        return Fault("status", 400, b'{"error": {"message": "this prompt is refused", "type": "scripted"}}')
    if prompt.startswith("look up "):
        key = prompt.split()[2]
        return Reply("Let me look.", tool_calls=[tool_call("lookup", {"key": key}, call_id=f"c-{key}")], delay=delay,
                     usage={"prompt_tokens": 100, "completion_tokens": 10})
    return Reply(f"Echo: {prompt}", delay=delay, usage={"prompt_tokens": 100, "completion_tokens": 10})


def setup_home(home: Path, llm_server: Any) -> Path:
    """`home` with the tool plugin enabled and the scripted model answering with `answer`."""
    make_folder_plugin(home / "plugins", "facts", LOOKUP, "name: facts\n")
    llm_config(home, llm_server.url, "  pricing: {scripted-model: {input: 10, output: 20}}\n"
                                     "plugins:\n  enabled: [facts]\n")
    llm_server.answer(answer)
    return home


def dataset(path: Path, lines: list[Any]) -> Path:
    path.write_text("".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines))
    return path


def rows(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "trajectories.jsonl").read_text().splitlines()]
