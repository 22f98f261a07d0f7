"""The reference hosts' small JSON files (the gateway's pairing codes, status and threads, a batch's statistics),
each replaced whole: readers see the old file or the new one, never half of one."""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

__all__ = ["write_json"]


def write_json(path: Path, data: Any, *, mode: int | None = None) -> None:
    """Replace `path` with `data` as JSON, through a temporary file beside it (given `mode`)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            json.dump(data, file, indent=1, sort_keys=True)
        if mode is not None:
            os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
