"""A folder plugin that records the stream hooks it hears, and reading what it heard."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.helpers import make_folder_plugin

# Records the stream hooks (and the interim message's flag), one JSON line each.
STREAM_RECORDER = """
import json, os
from pathlib import Path

LOG = Path(os.environ["HERMES_HOME"]) / "stream.jsonl"

def _recorder(name):
    def record(**kwargs):
        with LOG.open("a", encoding="utf-8") as out:
            out.write(json.dumps([name, kwargs]) + "\\n")
    return record

def register(ctx):
    for name in ("on_stream_start", "on_stream_delta", "on_stream_end", "on_interim_message"):
        ctx.register_hook(name, _recorder(name))
"""


def stream_recorder(home: Path) -> None:
    make_folder_plugin(home / "plugins", "streams", STREAM_RECORDER, "name: streams\n")


def heard(home: Path) -> list[tuple[str, dict[str, Any]]]:
    path = home / "stream.jsonl"
    return [tuple(json.loads(line)) for line in path.read_text().splitlines()] if path.exists() else []
