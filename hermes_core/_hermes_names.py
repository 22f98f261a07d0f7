"""Hermes' import names, answered by hermes-core where no real module of that name exists.

Hermes plugins import `agent.memory_provider`, `agent.context_engine`, ... for a base class or
a helper, often inside `try/except ImportError` with a stand-in class to fall back on.
hermes-core installs no `agent` package into site-packages: a finder at the end of
`sys.meta_path` serves these names, and only when nothing before it (a real Hermes Agent
installation, any module on `sys.path`) has one, as modules holding hermes-core's equivalents.
While a plugin loads, the names it imports are recorded, so `hermes plugins doctor` can say
which it used.

>>> install()
>>> from agent.memory_provider import MemoryProvider    # hermes_core.MemoryProvider
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import threading
import types
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["SERVED", "install", "recording"]

# A served module: the hermes-core modules its names come from, and the names.
SERVED: dict[str, tuple[tuple[str, tuple[str, ...]], ...]] = {
    "agent": (),
    "agent.memory_provider": (
        ("hermes_core._memory", ("MemoryProvider",)),
        ("hermes_core._recall", ("RecallStatus", "is_trivial_prompt", "INDICATOR_GLYPH")),
    ),
    "agent.context_engine": (
        ("hermes_core._context_engine", ("ContextEngine",)),
        ("hermes_core._redact", ("sanitize_memory_context", "MEMORY_CONTEXT_MAX_CHARS")),
    ),
    "agent.context_compressor": (
        ("hermes_plugins_builtin.compressor", ("ContextCompressor", "SUMMARY_MARK")),
        ("hermes_core._context_engine", ("resolve_model_threshold",)),
    ),
}
PACKAGES = frozenset(name.rpartition(".")[0] for name in SERVED if "." in name)
MARK = "__hermes_core_serves__"  # set on every served module: the Hermes name it stands for

_recorders = threading.local()


class _HermesNames(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Serves the names of `SERVED` that no finder before it could find."""

    def find_spec(self, fullname: str, path: object = None, target: object = None) -> importlib.machinery.ModuleSpec | None:
        if fullname not in SERVED:
            return None
        parent = fullname.rpartition(".")[0]
        if parent and not hasattr(sys.modules.get(parent), MARK):
            return None  # a real package of that name: not ours to add to
        return importlib.util.spec_from_loader(fullname, self, is_package=fullname in PACKAGES)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType | None:
        return None

    def exec_module(self, module: types.ModuleType) -> None:
        name = module.__name__
        exported: list[str] = []
        for source, names in SERVED[name]:
            backing = importlib.import_module(source)
            for attr in names:
                setattr(module, attr, getattr(backing, attr))
            exported += names
        module.__all__ = exported  # type: ignore[attr-defined]
        module.__doc__ = f"Hermes' {name}, served by hermes-core (no Hermes Agent installation was found)."
        setattr(module, MARK, name)
        names_seen = getattr(_recorders, "names", None)
        if names_seen is not None and name not in PACKAGES:
            names_seen.append(name)


_FINDER = _HermesNames()


def install() -> None:
    """Put the finder at the end of `sys.meta_path` (once): real modules are always found first."""
    if _FINDER not in sys.meta_path:
        sys.meta_path.append(_FINDER)


@contextmanager
def recording() -> Iterator[list[str]]:
    """The Hermes names imported in this thread inside the block. Served modules are dropped
    from `sys.modules` first, so that a plugin's imports are seen even when an earlier plugin
    imported the same names (their classes stay the same objects)."""
    for name in [n for n, module in sys.modules.items() if hasattr(module, MARK)]:
        del sys.modules[name]
    previous = getattr(_recorders, "names", None)
    seen: list[str] = []
    _recorders.names = seen
    try:
        yield seen
    finally:
        _recorders.names = previous
