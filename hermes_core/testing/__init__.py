"""The test kit: what plugin authors (and hermes-core itself) use in their test suites.

Installed with hermes-core and registered as a pytest plugin (entry point `pytest11`), so
its fixtures are available in any test suite without imports:

- `llm_server`: a running `ScriptedServer`, an OpenAI-compatible server on 127.0.0.1.

Names are imported on first use: pytest loads this package in every run of every project
that has hermes-core installed, and should not pay for the server unless a test uses it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._server import Fault, RecordedRequest, Reply, ScriptedServer, tool_call

__all__ = ["ScriptedServer", "Reply", "Fault", "RecordedRequest", "tool_call"]


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module 'hermes_core.testing' has no attribute {name!r}")
    value = getattr(importlib.import_module("hermes_core.testing._server"), name)
    globals()[name] = value
    return value
