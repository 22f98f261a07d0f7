"""The test kit: what plugin authors (and hermes-core itself) use in their test suites.

Installed with hermes-core and registered as a pytest plugin (entry point `pytest11`), so
its fixtures are available in any test suite without imports:

- `llm_server`: a running `ScriptedServer`, an OpenAI-compatible server on 127.0.0.1.

A plugin's skills: `check_plugin_skills(plugin)` (or `plugin_skill_problems`): valid Agent Skills
frontmatter, every file inside its skill's folder.

Contract suites (subclass them in a test file): `ContextEngineContract`, `MemoryProviderContract`. Hypothesis
strategies: `hermes_core.testing.strategies`. Both need hypothesis (`hermes-core[testing]`).

Names are imported on first use: pytest loads this package in every run of every project
that has hermes-core installed, and should not pay for the server unless a test uses it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from . import strategies
    from ._engine_contract import ContextEngineContract
    from ._memory_contract import MemoryProviderContract
    from ._server import Fault, RecordedRequest, Reply, ScriptedServer, tool_call
    from ._skills_contract import check_plugin_skills, plugin_skill_problems

_EXPORTS = {
    **dict.fromkeys(["ScriptedServer", "Reply", "Fault", "RecordedRequest", "tool_call"], "_server"),
    "MemoryProviderContract": "_memory_contract",
    "ContextEngineContract": "_engine_contract",
    **dict.fromkeys(["check_plugin_skills", "plugin_skill_problems"], "_skills_contract"),
}
__all__ = [*_EXPORTS, "strategies"]


def __getattr__(name: str) -> Any:
    if name == "strategies":
        return importlib.import_module("hermes_core.testing.strategies")
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'hermes_core.testing' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"hermes_core.testing.{module}"), name)
    globals()[name] = value
    return value
