"""The pytest plugin of hermes-core's test kit (entry point `pytest11`)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ._server import ScriptedServer


@pytest.fixture
def llm_server() -> Iterator[ScriptedServer]:
    """A running scripted OpenAI-compatible server; queue replies, then read `requests`."""
    with ScriptedServer() as server:
        yield server
