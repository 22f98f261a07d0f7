"""llama-cpp-python's OpenAI-compatible server on 127.0.0.1, and the tiny hand-built models the
interoperability group runs it on."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from . import free_port

SKIP = "the interop extra is not installed (pip install -e '.[interop]')"
EMBD, FF = 8, 16  # the models' width and feed-forward width
BYTE = {b: 3 + b for b in range(256)}  # byte b's token id in `byte_vocabulary`


def byte_vocabulary(*extra: str) -> tuple[list[str], list[int]]:
    """The tokens and token types of a vocabulary of the 256 bytes (after unknown, BOS, EOS), then
    each of `extra` as a control token."""
    tokens = ["<unk>", "<s>", "</s>", *[f"<0x{b:02X}>" for b in range(256)], *extra]
    return tokens, [2, 3, 3, *[6] * 256, *[3] * len(extra)]  # unknown, control, byte


def write_one_layer_model(path: Path, tokens: list[str], types: list[int], context: int,
                          weights: Mapping[str, Any]) -> Path:
    """A llama-architecture GGUF at `path`: `tokens`, one layer of width `EMBD` whose queries, keys
    and feed-forward are zero (even attention, no MLP); `weights` gives the rest:
    `token_embd` (vocabulary x EMBD), `attn_v` and `attn_output` (EMBD x EMBD), `output`
    (vocabulary x EMBD), as numpy float32 arrays."""
    gguf = pytest.importorskip("gguf", reason=SKIP)
    import numpy as np

    f32 = np.float32
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_context_length(context)
    writer.add_embedding_length(EMBD)
    writer.add_block_count(1)
    writer.add_feed_forward_length(FF)
    writer.add_head_count(1)
    writer.add_head_count_kv(1)
    writer.add_rope_dimension_count(EMBD)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_tokenizer_model("llama")
    writer.add_token_list(tokens)
    writer.add_token_scores([0.0] * len(tokens))
    writer.add_token_types(types)
    writer.add_bos_token_id(1)
    writer.add_eos_token_id(2)
    writer.add_unk_token_id(0)
    writer.add_add_bos_token(True)
    writer.add_add_eos_token(False)
    tensors = {
        "token_embd.weight": weights["token_embd"], "output_norm.weight": np.ones(EMBD, f32),
        "output.weight": weights["output"], "blk.0.attn_norm.weight": np.ones(EMBD, f32),
        "blk.0.ffn_norm.weight": np.ones(EMBD, f32), "blk.0.attn_q.weight": np.zeros((EMBD, EMBD), f32),
        "blk.0.attn_k.weight": np.zeros((EMBD, EMBD), f32), "blk.0.attn_v.weight": weights["attn_v"],
        "blk.0.attn_output.weight": weights["attn_output"], "blk.0.ffn_gate.weight": np.zeros((FF, EMBD), f32),
        "blk.0.ffn_up.weight": np.zeros((FF, EMBD), f32), "blk.0.ffn_down.weight": np.zeros((EMBD, FF), f32),
    }
    for name, array in tensors.items():
        writer.add_tensor(name, array)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


@contextlib.contextmanager
def running_llama_server(folder: Path, model: Path, alias: str, chat_format: str, n_ctx: int) -> Iterator[str]:
    """The server on `model` (named `alias` to clients), its log in `folder`; yields its base URL
    once it answers, and stops it after."""
    port = free_port()
    log = (folder / "server.log").open("w")
    server = subprocess.Popen(
        [sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--model_alias", alias,
         "--chat_format", chat_format, "--n_ctx", str(n_ctx), "--n_threads", "1",
         "--host", "127.0.0.1", "--port", str(port)],
        stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    url = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + 120
    try:
        while True:
            try:
                urllib.request.urlopen(f"{url}/models", timeout=2).read()
                break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"llama.cpp's server did not start: {(folder / 'server.log').read_text()[-2000:]}")
                time.sleep(0.2)
        yield url
    finally:
        server.terminate()
        server.wait(timeout=30)
        log.close()
