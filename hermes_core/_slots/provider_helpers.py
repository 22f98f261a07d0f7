"""The rest of Hermes' `agent.memory_provider` beside the ABC and the recall helpers: threads that
keep their spawner's context, a prefetch's structured result, and which `memory.provider` values
mean "the built-in store".

A provider that does background work (a queued prefetch, a sync) starts its thread with
`spawn_context_thread`, as Hermes asks: the thread runs in a copy of the spawner's context
variables, so the conversation's session variables (`gateway.session_context`) and the plugin's
identity go with it.
"""

from __future__ import annotations

import contextvars
import dataclasses
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = ["CORE_MEMORY_PROVIDER_SENTINELS", "MAX_MEMORY_OBSERVATIONS", "MemoryObservation", "MemoryPrefetchResult",
           "ctx_bound", "is_core_memory_provider", "prefetch_context", "spawn_context_thread"]

# `memory.provider` values that name the built-in store rather than a plugin's provider.
CORE_MEMORY_PROVIDER_SENTINELS = frozenset({"", "default", "builtin", "built-in", "none"})
MAX_MEMORY_OBSERVATIONS = 16  # observations kept from one prefetch


def ctx_bound(fn: Callable[..., Any]) -> Callable[..., Any]:
    """`fn`, to be called later (in another thread) in a copy of the context of now."""
    context = contextvars.copy_context()
    return lambda *args, **kwargs: context.run(fn, *args, **kwargs)


def spawn_context_thread(target: Callable[..., Any], *, name: str, daemon: bool = True, args: Sequence[Any] = (),
                         kwargs: Mapping[str, Any] | None = None) -> threading.Thread:
    """A thread (not started: call `.start()`) running `target(*args, **kwargs)` in a copy of the
    spawner's context variables."""
    return threading.Thread(target=ctx_bound(target), args=tuple(args), kwargs=dict(kwargs or {}), name=name,
                            daemon=daemon)


def is_core_memory_provider(name: str | None) -> bool:
    """Whether a `memory.provider` value means the built-in store (unset, "builtin", "none", ...)."""
    return str(name or "").strip().lower() in CORE_MEMORY_PROVIDER_SENTINELS


@dataclasses.dataclass(frozen=True)
class MemoryObservation:
    """One structured thing a prefetch saw (a record of the provider's own `schema`/`version`)."""

    source_kind: str
    schema: str
    version: int
    payload: Mapping[str, Any]
    provider: str = ""


@dataclasses.dataclass(frozen=True)
class MemoryPrefetchResult:
    """What `prefetch` may return instead of text: the `context` to add to the turn, and the
    observations behind it (at most `MAX_MEMORY_OBSERVATIONS` are kept)."""

    context: str = ""
    observations: Sequence[MemoryObservation] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.observations, (list, tuple)):
            raise TypeError("MemoryPrefetchResult.observations must be a list or tuple")
        object.__setattr__(self, "observations", tuple(self.observations[:MAX_MEMORY_OBSERVATIONS]))


def prefetch_context(result: object) -> object:
    """A `prefetch` result as the text it adds: a `MemoryPrefetchResult` (or any object of that
    shape) gives its `context`; anything else is returned as it is, for the caller to check."""
    context = getattr(result, "context", None)
    return context if isinstance(context, str) and not isinstance(result, str) else result
