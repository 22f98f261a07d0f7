"""The files a host keeps: JSON replaced whole, one writer at a time, one process per job.

>>> write_json(home / "gateway" / "status.json", {"state": "running"})
>>> with locked(home / "pairing" / "codes.json"):        # one writer of that file at a time, across processes
...     change_it()
>>> with only_one(home / "gateway" / "gateway.lock"):   # AlreadyRunningError while another process holds it
...     serve()
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import IO, Any

from .._errors import AlreadyRunningError
from .._files import BadLine, json_lines, locked, read_json, write_atomic
from .._messages import storable_text

__all__ = ["BadLine", "Held", "json_lines", "loads_sent", "locked", "only_one", "read_json", "write_json", "write_text"]

_ESCAPED_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F]")


def loads_sent(raw: bytes) -> Any:
    """The JSON value a client sent (`json.loads`, raising as it does), with every escaped lone
    surrogate ("\\ud800", which JSON allows) in its strings, keys too, read as U+FFFD: what a
    request names then never fails to encode in a store, a log, a file or a model request.

    >>> loads_sent(b'{"name": "half \\\\ud800"}')
    {'name': 'half \ufffd'}
    """
    value = json.loads(raw)
    if _ESCAPED_SURROGATE.search(raw):
        value = json.loads(storable_text(json.dumps(value, ensure_ascii=False)))
    return value


def write_json(path: Path, data: Any, *, mode: int | None = None, durable: bool = True) -> None:
    """Replace `path` with `data` as JSON (indented, keys sorted), whole or not at all, its folder
    made if need be: readers see the old file or the new one. `mode`: its permissions (0o600 for a
    file holding secrets); `durable=False` skips the fsyncs, for a file rewritten often that may
    go back a step in a power cut (a status file), but is never torn."""
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, json.dumps(data, indent=1, sort_keys=True), durable=durable, mode=mode)


def write_text(path: Path, text: str, *, mode: int | None = None, durable: bool = True) -> None:
    """Replace `path` with `text` (UTF-8), whole or not at all, as `write_json` does."""
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, text, durable=durable, mode=mode)


class Held:
    """This process's hold on a lock of `only_one`: kept until `release()`, the end of the `with`
    block, or the end of the process (a killed process lets go at once: the OS drops its lock)."""

    __slots__ = ("path", "_handle")

    def __init__(self, path: Path, handle: IO[str]) -> None:
        self.path, self._handle = path, handle

    def release(self) -> None:
        """Let the lock go (idempotent)."""
        self._handle.close()

    def __enter__(self) -> Held:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def only_one(path: Path) -> Held:
    """Make this process the only one doing the job `path` locks (a gateway of one home, a batch run
    on one folder): an exclusive lock on the file, which holds this process's id while it holds the
    lock. `AlreadyRunningError` (its `pid`: the holder's) when another process holds it. Where the
    OS has no `fcntl` (Windows) the file is written and nothing is locked."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle = open(path, "a+", encoding="utf-8", errors="replace")  # noqa: SIM115 - held until release()
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows: keeping to one is the operator's care
        pass
    else:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            text = handle.read().strip()
            handle.close()
            pid = int(text) if text.isdigit() else None
            holder = f"process {pid}" if pid is not None else "another process"
            raise AlreadyRunningError(f"{path} is held by {holder}", path=path, pid=pid) from None
    handle.seek(0)
    handle.truncate()
    handle.write(str(os.getpid()))
    handle.flush()
    return Held(path, handle)
