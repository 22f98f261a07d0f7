"""Where hermes-core keeps its files."""

from __future__ import annotations

import os
from pathlib import Path

TRUTHY = frozenset({"1", "true", "yes", "on", "y", "t"})


def hermes_home() -> Path:
    """`$HERMES_HOME`, or `~/.hermes` when it is unset or empty."""
    value = os.environ.get("HERMES_HOME", "").strip()
    return Path(value).expanduser() if value else Path.home() / ".hermes"


def env_flag(name: str) -> bool:
    """True when the environment variable `name` holds a truthy value (1, true, yes, on)."""
    return os.environ.get(name, "").strip().lower() in TRUTHY
