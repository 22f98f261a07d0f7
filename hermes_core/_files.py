"""hermes-core's own files: written whole or not at all, read whatever a disk or a person left in them
(`json_lines`, `read_json`), and when a cached read of one can be trusted."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

__all__ = ["MAX_SMALL_JSON", "RACY_SECONDS", "BadLine", "json_lines", "locked", "read_json", "write_atomic"]

# The most a small JSON file a person or a tool writes holds (plugin.json, mcp.json, a login file):
# `read_json(path, MAX_SMALL_JSON)` refuses a larger one without reading it whole.
MAX_SMALL_JSON = 1 << 20

# File times are coarse (a kernel tick): a file modified less than this long ago may change
# again without its modification time changing, so a cache keyed by it is not kept ("racy git").
RACY_SECONDS = 2.0


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """One writer of `path` at a time, across processes: an exclusive lock on `<path>.lock` beside
    it, held for the block (where the OS has `fcntl`; elsewhere the atomic replace alone)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows: atomic rename still protects the file
        yield
        return
    with open(path.with_name(path.name + ".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def write_atomic(path: Path, text: str, *, durable: bool = True, mode: int | None = None) -> None:
    """Replace `path` with `text` whole or not at all: a temporary file beside it (with `mode`, else
    the file's own mode, else 0644), flushed and fsynced, renamed over it, and the rename made
    durable. Readers see the old file or the new one, never half of one. `durable=False` skips the
    fsyncs, for a cache that may be lost but must never be torn."""
    import tempfile

    if mode is None:
        mode = path.stat().st_mode & 0o777 if path.exists() else 0o644
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            if durable:
                os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    if not durable:
        return
    with contextlib.suppress(OSError):  # make the rename itself durable where the OS allows
        dir_fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


def _size(count: int) -> str:
    return f"{count >> 20} MB" if count >= 1 << 20 and not count % (1 << 20) else f"{count} bytes"


class BadLine(NamedTuple):
    """A line of a JSON-lines file that holds no JSON value: its number and why, in a few words."""

    number: int
    why: str


def _parse(raw: bytes) -> Any:
    import json

    return json.loads(raw.decode("utf-8-sig"))


def _why(exc: BaseException) -> str:
    if isinstance(exc, UnicodeDecodeError):
        return f"not UTF-8 (byte {exc.start + 1})"
    if isinstance(exc, RecursionError):
        return "nested too deeply"
    return f"not JSON ({exc})"


def json_lines(path: Path) -> Iterator[tuple[int, Any, bytes]]:
    """The values of a JSON-lines file: (line number, value, the line's bytes without its ending). A
    line that holds none (not UTF-8, not JSON, nested past the parser) has a `BadLine` as its value,
    for the caller to name and skip. A BOM, CRLF endings and blank lines are read past. `OSError`
    from opening `path`."""
    with open(path, "rb") as file:
        for number, raw in enumerate(file, 1):
            line = raw.strip()
            if number == 1:
                line = line.removeprefix(b"\xef\xbb\xbf")
            if not line:
                continue
            try:
                yield number, _parse(line), line
            except (ValueError, RecursionError) as exc:
                yield number, BadLine(number, _why(exc)), line


def read_json(path: Path, max_bytes: int | None = None) -> Any:
    """The JSON value of a whole file (a BOM read past); `ValueError` naming the file and why when it
    holds none (not UTF-8, not JSON, nested past the parser) or, with `max_bytes`, when it is larger
    (only that much and a byte more is read); `OSError` from reading it."""
    if max_bytes is None:
        raw = Path(path).read_bytes()
    else:
        with open(path, "rb") as file:
            raw = file.read(max_bytes + 1)
        if len(raw) > max_bytes:
            raise ValueError(f"{path} is larger than {_size(max_bytes)}, the most such a file may hold")
    try:
        return _parse(raw)
    except (ValueError, RecursionError) as exc:
        raise ValueError(f"{path} is {_why(exc)}") from None
