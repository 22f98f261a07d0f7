"""The pytest plugin of hermes-core's test kit (entry point `pytest11`).

Loaded by every pytest run once hermes-core is installed, so it imports nothing heavy until
a fixture is used.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from ._server import ScriptedServer


@pytest.fixture
def llm_server() -> Iterator[ScriptedServer]:
    """A running scripted OpenAI-compatible server; queue replies, then read `requests`."""
    from ._server import ScriptedServer

    with ScriptedServer() as server:
        yield server
