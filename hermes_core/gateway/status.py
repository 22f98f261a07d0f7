"""`gateway.status`'s scoped locks, as Hermes' adapters use them: one credential (a bot token, a
mailbox) used by one gateway process at a time on this machine.

`acquire_scoped_lock(scope, identity, metadata=None)` returns `(True, None)` when this process now
holds it (or already did), else `(False, the holder's record)` (`pid`, `scope`, `metadata`, ...);
a lock whose process has ended is taken over. `release_scoped_lock(scope, identity)` lets it go.
The lock files live in `$HERMES_HOME/gateway/locks/` (a hash of the identity in the name, never
the credential itself).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import time
from pathlib import Path
from typing import Any

from hermes_core import hermes_home
from hermes_core.hosting import read_json

__all__ = ["acquire_scoped_lock", "release_scoped_lock"]


def _path(scope: str, identity: str) -> Path:
    digest = hashlib.sha256(f"{scope}\0{identity}".encode()).hexdigest()[:24]
    safe = "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in scope)[:40]
    return hermes_home() / "gateway" / "locks" / f"{safe}-{digest}.lock"


def _alive(pid: Any) -> bool:
    try:
        os.kill(int(pid), 0)
    except (OSError, ValueError, TypeError):
        return False
    return True


def acquire_scoped_lock(scope: str, identity: str, metadata: dict[str, Any] | None = None
                        ) -> tuple[bool, dict[str, Any] | None]:
    """Hold the lock on `identity` in `scope` for this process (see the module)."""
    path = _path(scope, str(identity))
    path.parent.mkdir(parents=True, exist_ok=True)
    record = {"pid": os.getpid(), "scope": scope, "acquired_at": time.time(), "metadata": dict(metadata or {})}
    for _ in range(3):
        try:
            descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            try:
                holder = read_json(path)
            except (OSError, ValueError):
                holder = {}
            if isinstance(holder, dict) and holder.get("pid") == os.getpid():
                return True, None
            if isinstance(holder, dict) and _alive(holder.get("pid")):
                return False, holder
            with contextlib.suppress(FileNotFoundError):
                path.unlink()  # its process is gone: take it over
            continue
        with os.fdopen(descriptor, "w", encoding="utf-8") as file:
            json.dump(record, file)
        return True, None
    return False, None


def release_scoped_lock(scope: str, identity: str) -> None:
    """Let the lock go if this process holds it."""
    path = _path(scope, str(identity))
    try:
        holder = read_json(path)
    except (OSError, ValueError):
        return
    if isinstance(holder, dict) and holder.get("pid") == os.getpid():
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
