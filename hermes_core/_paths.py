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


def hermes_paths(home: Path | None = None) -> dict[str, Path]:
    """Where hermes-core keeps each kind of file under `home` (default: `$HERMES_HOME`), as
    `hermes paths` prints it: the config, the user's plugin folders, the agent's sessions, the
    built-in memory provider's store, the logs (`agent.log`: one line per `ctx.llm` call) and
    the caches (safe to delete)."""
    home = hermes_home() if home is None else home
    return {
        "home": home,
        "config": home / "config.yaml",
        "plugins": home / "plugins",
        "sessions": home / "sessions.db",
        "memory": home / "memory" / "memories.db",
        "logs": home / "logs",
        "cache": home / ".cache",
    }
