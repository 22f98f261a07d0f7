"""Tool schemas already checked: the `parameters` of a tool that passed jsonschema's check of
the JSON Schema metaschema are remembered in `$HERMES_HOME/.cache/valid-schemas.json`, by a
digest of their canonical JSON, so that a start-up registering the same tools again neither
imports jsonschema (a tenth of a second) nor checks each schema again (about a millisecond a tool).

The memory holds only under the same hermes-core and the same jsonschema files (path, size,
modification time); any other, a damaged file or one another process is writing is no memory
at all, and every schema is checked. Only valid schemas are remembered: an invalid one is always
checked, so its error is always said. Writing is atomic and may lose a concurrent process's
additions (they are checked again next time), never tear the file.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .._files import read_json

__all__ = ["SchemaMemory"]

_FILE = "valid-schemas.json"
_MAX = 4096  # digests kept (the newest)


def _code_key() -> list[Any]:
    """What a check's answer depends on: hermes-core's version and jsonschema's files."""
    import importlib.util

    from .._version import __version__

    spec = importlib.util.find_spec("jsonschema")
    origin = spec.origin if spec is not None else None
    try:
        stat = os.stat(origin) if origin else None
    except OSError:
        stat = None
    return [__version__, origin, stat and stat.st_size, stat and stat.st_mtime_ns]


class SchemaMemory:
    """The valid schemas remembered under one home's cache (`known`, `remember`). `of(home)` is
    the process's one memory of that home: every agent session offers its engines' tools through
    it, and reading the file once per process (not once per session) is what it is for."""

    _homes: dict[Path | None, SchemaMemory] = {}
    _homes_lock = threading.Lock()

    @classmethod
    def of(cls, home: Path | None) -> SchemaMemory:
        with cls._homes_lock:
            memory = cls._homes.get(home)
            if memory is None:
                memory = cls._homes[home] = cls(home)
            return memory

    def __init__(self, home: Path | None) -> None:
        self._path = home / ".cache" / _FILE if home is not None else None
        self._lock = threading.Lock()
        self._known: dict[str, None] | None = None
        self._key: list[Any] | None = None

    @staticmethod
    def digest(parameters: Mapping[str, Any]) -> str | None:
        try:
            text = json.dumps(parameters, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        except (TypeError, ValueError):
            return None  # not JSON: always checked
        import hashlib

        return hashlib.sha256(text.encode()).hexdigest()[:32]

    def _load(self) -> dict[str, None]:
        if self._known is None:
            self._key = _code_key()
            self._known = {}
            if self._path is not None:
                try:
                    data = read_json(self._path)
                except (OSError, ValueError):
                    data = None
                if isinstance(data, dict) and data.get("key") == self._key and isinstance(data.get("valid"), list):
                    self._known = dict.fromkeys(str(d) for d in data["valid"])
        return self._known

    def known(self, digest: str | None) -> bool:
        """Whether the schema of `digest` was found valid before (by this code)."""
        if digest is None or self._path is None:
            return False
        with self._lock:
            return digest in self._load()

    def remember(self, digest: str | None) -> None:
        """Keep `digest` (a schema just found valid)."""
        if digest is None or self._path is None:
            return
        from .._files import write_atomic

        with self._lock:
            known = self._load()
            if digest in known:
                return
            known[digest] = None
            while len(known) > _MAX:
                del known[next(iter(known))]
            try:
                self._path.parent.mkdir(parents=True, exist_ok=True)
                write_atomic(self._path, json.dumps({"key": self._key, "valid": list(known)}), durable=False)
            except OSError:
                pass  # a cache: failing to keep it is no error
