"""What the prompt's files gave, remembered by a long-lived process (`hermes serve`, the gateway)
for its next new conversation: a file's text by its path and what `os.stat` says of it (modified
and changed times, size, inode), and what reading it made (scanned, capped, rendered) by that text.
A file edited since is read again; one modified within the last `SETTLED` seconds is not
remembered at all, since an edit within the file system's clock tick could keep all four the same.

>>> texts = Memo(64)
>>> texts.put("/home/SOUL.md", ((1, 1, 12, 7), "You are Quill."))
>>> texts.get("/home/SOUL.md")
((1, 1, 12, 7), 'You are Quill.')
"""

from __future__ import annotations

import os
import stat
import threading
import time
from typing import Any

__all__ = ["Memo", "Signature", "signature", "settled", "SETTLED", "MEMO_CHARS"]

SETTLED = 2.0  # seconds since a file's last change after which its times tell every later change
MEMO_CHARS = 1_000_000  # a longer text is not remembered (the caps keep at most 500,000 characters)

Signature = tuple[int, int, int, int]


class Memo:
    """A small map shared by the process's threads: the oldest entry goes when it is full."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._entries: dict[Any, Any] = {}
        self._lock = threading.Lock()

    def get(self, key: Any) -> Any:
        return self._entries.get(key)

    def put(self, key: Any, value: Any) -> None:
        with self._lock:
            self._entries.pop(key, None)
            self._entries[key] = value
            while len(self._entries) > self.size:
                del self._entries[next(iter(self._entries))]

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()


def signature(path: str) -> Signature | None:
    """What `os.stat` says of a regular file at `path` (None: no such file, or not a regular file,
    such as a folder or a pipe); `OSError` for a file that cannot be looked at for another reason."""
    try:
        found = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    if not stat.S_ISREG(found.st_mode):
        return None
    return (found.st_mtime_ns, found.st_ctime_ns, found.st_size, found.st_ino)


def settled(sign: Signature) -> bool:
    """Whether a file with this signature last changed long enough ago for its times to tell the next change."""
    return time.time_ns() - max(sign[0], sign[1]) > SETTLED * 1e9
