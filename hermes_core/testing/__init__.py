"""The test kit: what plugin authors (and hermes-core itself) use in their test suites.

Installed with hermes-core and registered as a pytest plugin (entry point `pytest11`), so
its fixtures are available in any test suite without imports:

- `llm_server`: a running `ScriptedServer`, an OpenAI-compatible server on 127.0.0.1.
"""

from __future__ import annotations

from ._server import Fault, RecordedRequest, Reply, ScriptedServer, tool_call

__all__ = ["Fault", "RecordedRequest", "Reply", "ScriptedServer", "tool_call"]
