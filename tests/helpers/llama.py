"""llama-cpp-python's OpenAI-compatible server on 127.0.0.1, for the interoperability group."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from . import free_port


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
