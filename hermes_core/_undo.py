"""Taking back one registration: every registry's `add` returns the `Undo` that removes exactly
what it added, which a plugin's record keeps so that a failed load or an unload leaves nothing."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, MutableMapping
from typing import Any, TypeVar

__all__ = ["Undo", "put"]

Undo = Callable[[], None]

K = TypeVar("K")
V = TypeVar("V")
_NOTHING: Any = object()


def put(table: MutableMapping[K, V], key: K, value: V, lock: Any = None) -> Undo:
    """`table[key] = value`, and the undo that puts back what was there before (or removes the key),
    but only while `table[key]` is still this value: a later registration under the same key is
    never taken back by an earlier one's undo. `lock` (held by the caller while it puts) is taken
    by the undo."""
    previous = table.get(key, _NOTHING)
    table[key] = value

    def undo() -> None:
        with lock if lock is not None else contextlib.nullcontext():
            if table.get(key, _NOTHING) is value:
                if previous is _NOTHING:
                    del table[key]
                else:
                    table[key] = previous

    return undo
