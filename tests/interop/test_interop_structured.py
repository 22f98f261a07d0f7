"""Interoperability: `complete_structured` reads a raw control character in a JSON string, as
llama.cpp's server lets one through. Marked `interop` (see test_interop_llama_cpp.py).

In `json_object` mode with a schema, llama-cpp-python turns the schema into a grammar whose
string character is `[^"\\]` (llama_grammar.py, PRIMITIVE_RULES["char"]): a raw tab or newline
byte is as welcome there as a letter, though `json.loads` rejects it.

The model below makes, not learns, such an answer: one attention head averages "this token is a
tab" against the one BOS token, so the model wants a tab only while it has written none, and
otherwise prefers `"`; the schema's grammar fixes the rest. Its answer is `{"note":"<TAB>"}`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import llm_config, plugin_ctx
from tests.helpers.llama import BYTE, EMBD, SKIP, byte_vocabulary, running_llama_server, write_one_layer_model

pytestmark = pytest.mark.interop

TAB = "\t"


def write_tab_model(path: Path) -> Path:
    """A llama-architecture GGUF: a byte vocabulary, one layer, 8 dimensions.

    Every token carries a constant (dimension 2); a tab also dimension 0, BOS dimension 1. The
    head (zero queries and keys: even attention) averages those two into dimensions 3 and 4, so
    the tab's logit, 1e5 x (BOS average - 2 x tab average), is large while no tab has been
    written (the prompt has none) and very negative after one. The constant part of the output
    layer prefers `"` (10) to `:`, `}` and end of text (5), and those to a space (0).
    """
    pytest.importorskip("gguf", reason=SKIP)
    import numpy as np

    tokens, types = byte_vocabulary()
    f32 = np.float32
    token_embd = np.zeros((len(tokens), EMBD), f32)
    token_embd[:, 2] = 1.0  # every token: a constant
    token_embd[BYTE[ord(TAB)], 0] = 1.0  # a tab
    token_embd[1, 1] = 1.0  # BOS
    value = np.zeros((EMBD, EMBD), f32)
    value[0, 0] = value[1, 1] = 1.0
    out = np.zeros((EMBD, EMBD), f32)
    out[3, 0] = out[4, 1] = 1.0  # the head's averages land in dimensions 3 (tabs) and 4 (BOS)
    output = np.zeros((len(tokens), EMBD), f32)
    output[BYTE[ord(TAB)], 3], output[BYTE[ord(TAB)], 4] = -2e5, 1e5  # a tab while tabs < BOS / 2
    output[BYTE[ord('"')], 2] = 10.0
    for token in (BYTE[ord(":")], BYTE[ord("}")], 2):  # 2: end of text
        output[token, 2] = 5.0
    return write_one_layer_model(path, tokens, types, 4096, {"token_embd": token_embd, "attn_v": value,
                                                             "attn_output": out, "output": output})


@pytest.fixture(scope="module")
def tab_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """llama-cpp-python's server on 127.0.0.1 with the tab model; yields its base URL."""
    pytest.importorskip("llama_cpp.server", reason=SKIP)
    folder = tmp_path_factory.mktemp("llama-tab")
    model = write_tab_model(folder / "tab.gguf")
    with running_llama_server(folder, model, "tab", "chatml", 4096) as url:
        yield url


def test_complete_structured_accepts_a_raw_tab_in_a_string_from_llama_cpp(home: Path, tab_server: str) -> None:
    llm_config(home, tab_server, model="tab")
    schema = {"type": "object", "properties": {"note": {"type": "string"}}, "required": ["note"],
              "additionalProperties": False}
    result = plugin_ctx(home).llm.complete_structured(
        instructions="Write a note.", input=[{"type": "text", "text": "Anything will do."}],
        json_schema=schema, max_tokens=32)
    assert result.text == '{"note":"\t"}'  # a raw tab byte, not the escape `\t`
    with pytest.raises(json.JSONDecodeError, match="Invalid control character"):
        json.loads(result.text)  # what a strict parser makes of it
    assert result.content_type == "json" and result.parsed == {"note": TAB}
    log = (home / "logs" / "agent.log").read_text(encoding="utf-8").splitlines()
    assert "format=json_object attempts=2 outcome=ok" in log[-1]  # the schema's grammar wrote it
