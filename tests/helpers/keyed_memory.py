"""A folder memory provider written as a published Hermes one is, that records what each
`initialize` was given (one JSON line per session in `$HERMES_HOME/keyed-init.jsonl`): for the
tests of who a client says it is (`gateway_session_key`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.helpers import make_folder_plugin

KEYED_MEMORY = '''
import json
import os
from pathlib import Path

from agent.memory_provider import MemoryProvider

SEEN = Path(os.environ["HERMES_HOME"]) / "keyed-init.jsonl"


class Keyed(MemoryProvider):
    @property
    def name(self):
        return "keyed"

    def is_available(self):
        return True

    def initialize(self, session_id, **kwargs):
        with SEEN.open("a") as out:
            out.write(json.dumps({"session_id": session_id, **kwargs}, default=str) + "\\n")

    def get_tool_schemas(self):
        return []


def register(ctx):
    ctx.register_memory_provider(Keyed())
'''

SELECT = "memory:\n  provider: keyed_memory\n"  # the config that selects it


def install(home: Path) -> None:
    make_folder_plugin(home / "plugins", "keyed_memory", KEYED_MEMORY, "name: keyed-memory\nversion: 0.1.0\n")


def initialized(home: Path) -> list[dict[str, Any]]:
    """What each of the provider's `initialize` calls was given, in order."""
    seen = home / "keyed-init.jsonl"
    return [json.loads(line) for line in seen.read_text().splitlines()] if seen.exists() else []
