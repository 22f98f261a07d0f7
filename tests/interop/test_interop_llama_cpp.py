"""Interoperability: the agent and `ctx.llm` against llama.cpp's OpenAI-compatible server
(llama-cpp-python), not a server of ours. Marked `interop`: the main run leaves them out;
`.ci/interop` installs the `interop` extra (reusing a cached llama-cpp-python wheel) and
runs them with `-m interop`. No network: the model is a tiny GGUF the test writes itself.

The model's weights are made, not trained, so what it does is known: one attention head
attends evenly to every token and counts `<|im_start|>` against the one BOS token, so the
model picks a tool call while the conversation has at most three messages and a message
after the tool's result; every other choice it makes under a grammar is fixed by its
output layer (`"` first, then `<` and `}`), so tool arguments and JSON are short and valid.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from hermes_core import PluginManager
from hermes_core.agent import Agent
from tests.helpers import hermes, llm_config, plugin_ctx
from tests.helpers.llama import BYTE, EMBD, SKIP, byte_vocabulary, running_llama_server, write_one_layer_model

pytestmark = pytest.mark.interop

IM_START = "<|im_start|>"


def write_model(path: Path) -> Path:
    """A llama-architecture GGUF: a byte vocabulary plus `<|im_start|>`, one layer, 8 dimensions."""
    pytest.importorskip("gguf", reason=SKIP)
    import numpy as np

    tokens, types = byte_vocabulary(IM_START)
    f32 = np.float32
    token_embd = np.zeros((len(tokens), EMBD), f32)
    token_embd[:, 2] = 1.0  # every token: a constant
    token_embd[len(tokens) - 1, 0] = 1.0  # <|im_start|>
    token_embd[1, 1] = 1.0  # BOS
    value = np.zeros((EMBD, EMBD), f32)
    value[0, 0] = value[1, 1] = 1.0
    out = np.zeros((EMBD, EMBD), f32)
    out[3, 0] = out[4, 1] = 1.0  # the head's averages land in dimensions 3 (im_start) and 4 (BOS)
    output = np.zeros((len(tokens), EMBD), f32)
    output[BYTE[ord("m")], 3], output[BYTE[ord("m")], 4] = 1000.0, -4000.0  # 'm' when im_starts > 4 x BOS
    output[BYTE[ord('"')], 2] = 10.0
    output[BYTE[ord("<")], 2] = 5.0
    output[BYTE[ord("}")], 2] = 3.0
    return write_one_layer_model(path, tokens, types, 8192, {"token_embd": token_embd, "attn_v": value,
                                                             "attn_output": out, "output": output})


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """llama-cpp-python's server on 127.0.0.1 with the tiny model; yields its base URL."""
    pytest.importorskip("llama_cpp.server", reason=SKIP)
    folder = tmp_path_factory.mktemp("llama")
    model = write_model(folder / "tiny.gguf")
    with running_llama_server(folder, model, "tiny", "chatml-function-calling", 8192) as url:
        yield url


# The tiny model calls the first tool it is offered: only clock's current_time is left on.
CONFIG = "plugins:\n  disabled: [memory/builtin, cron, todo, skills]\n"


def test_the_server_refuses_null_content_beside_tool_calls(llama_server: str) -> None:
    """What the agent used to send: llama.cpp's server answers it with 500."""
    import openai

    client = openai.OpenAI(base_url=llama_server, api_key="none", max_retries=0)
    messages = [{"role": "user", "content": "time?"},
                {"role": "assistant", "content": None, "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "current_time", "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": "c1", "content": "{}"}]
    with pytest.raises(openai.InternalServerError):
        client.chat.completions.create(model="tiny", messages=messages)  # type: ignore[arg-type]


def test_the_agent_calls_a_tool_and_completes_the_turn_after_its_result(home: Path, llama_server: str) -> None:
    llm_config(home, llama_server, CONFIG, model="tiny")
    with Agent(PluginManager(), max_iterations=4) as agent:
        result = agent.ask("What time is it?")
        messages = agent.messages
    assert result.tool_calls == 1 and result.stopped is None
    call, answer = messages[1], messages[2]
    assert call["role"] == "assistant" and call["content"] == ""
    assert call["tool_calls"][0]["function"]["name"] == "current_time"
    assert answer["role"] == "tool" and answer["tool_call_id"] == call["tool_calls"][0]["id"]
    assert messages[-1]["role"] == "assistant" and "tool_calls" not in messages[-1]


def test_hermes_run_against_llama_cpp_exits_zero(home: Path, llama_server: str) -> None:
    llm_config(home, llama_server, CONFIG, model="tiny")
    result = hermes("run", "What", "time", "is", "it?")
    assert "→ current_time" in result.stderr


def test_complete_structured_returns_a_validated_object(home: Path, llama_server: str) -> None:
    llm_config(home, llama_server, model="tiny")
    schema = {"type": "object", "properties": {"done": {"type": "boolean"}}, "required": ["done"],
              "additionalProperties": False}
    llm = plugin_ctx(home).llm
    first = llm.complete_structured(instructions="Is the task done?", input=[{"type": "text", "text": "It is."}],
                                    json_schema=schema, max_tokens=64)
    assert first.content_type == "json" and isinstance(first.parsed, dict) and isinstance(first.parsed["done"], bool)
    log = (home / "logs" / "agent.log").read_text(encoding="utf-8").splitlines()
    assert "format=json_object attempts=2 outcome=ok" in log[-1]  # json_schema refused, then remembered
    again = llm.complete_structured(instructions="And now?", input=[{"type": "text", "text": "Still."}],
                                    json_schema=schema, max_tokens=64)
    assert isinstance(again.parsed["done"], bool)
    assert "format=json_object attempts=1 outcome=ok" in (home / "logs" / "agent.log").read_text().splitlines()[-1]
    assert json.dumps(again.parsed)


def test_llama_cpp_streams_no_tool_call_and_the_agent_asks_it_for_whole_answers(home: Path,
                                                                                 llama_server: str) -> None:
    """A plugin listens to the stream hooks, so the agent streams. llama-cpp-python's server ends
    the stream of a request with tools empty (it cannot stream tool choice) and drops the
    connection: the agent asks again for the whole answer, remembers it, and the turn completes."""
    from tests.helpers.streams import heard, stream_recorder

    stream_recorder(home)
    llm_config(home, llama_server, CONFIG + "  enabled: [streams]\n", model="tiny")
    result = hermes("run", "What", "time", "is", "it?")
    assert "→ current_time" in result.stderr and "✗" not in result.stderr
    assert not [name for name, _ in heard(home) if name.startswith("on_stream_")]
    log = (home / "logs" / "agent.log").read_text(encoding="utf-8").splitlines()
    assert "attempts=2" in log[0] or "attempts=3" in log[0]  # the empty stream, then whole
    assert "attempts=1 outcome=ok" in log[-1]  # remembered for the rest of the run


def test_llama_cpp_streams_an_answer_without_tools(home: Path, llama_server: str) -> None:
    from tests.helpers.streams import heard, stream_recorder

    stream_recorder(home)
    llm_config(home, llama_server, "plugins:\n  disabled: [memory/builtin, clock, cron, todo, skills]\n  enabled: [streams]\n",
               model="tiny")
    result = hermes("run", "Say", "hello.")
    events = heard(home)
    names = [name for name, _ in events]
    assert names[0] == "on_stream_start" and names[-1] == "on_stream_end" and "on_stream_delta" in names
    end = events[-1][1]
    assert end["finished"] is True and end["error"] is None
    assert end["final_text"] == "".join(kwargs["delta"] for name, kwargs in events if name == "on_stream_delta")
    assert result.stdout == end["final_text"] + "\n"
