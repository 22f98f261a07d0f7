"""Hermes' module-level hook API, as plugins call it from `hermes_cli.plugins` and
`plugin_runtime.dispatch`: `VALID_HOOKS` (the names `ctx.register_hook` accepts, read to check a
hook before registering it), `invoke_hook(name, **kwargs)` (every callback of that hook, the
non-None results in order) and `has_hook(name)` (whether any callback is registered, checked
before building a costly payload); `ainvoke_hook` from a coroutine.

Hermes has one plugin manager per process; these reach the hooks of the loader that loaded
plugins last in this one (`serving`), as Hermes' `tools.registry` reaches its tools. With none
yet, no hook has a callback: `invoke_hook` returns `[]`.

>>> from hermes_cli.plugins import has_hook, invoke_hook
>>> if has_hook("gateway_platform_event"):
...     invoke_hook("gateway_platform_event", platform="vk", event_type="joined", payload={})
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any

from ..hookspecs import LIFECYCLE_HOOKS
from .chains import Collect

if TYPE_CHECKING:
    from .runner import HookRunner

__all__ = ["VALID_HOOKS", "ainvoke_hook", "has_hook", "invoke_hook", "serving"]

VALID_HOOKS: frozenset[str] = frozenset(LIFECYCLE_HOOKS)

_current: weakref.ref[HookRunner] | None = None


def serving(runner: HookRunner) -> None:
    """Make `runner` the hooks the module-level calls reach (a loader's, as it loads plugins)."""
    global _current
    _current = weakref.ref(runner)


def _runner() -> HookRunner | None:
    return _current() if _current is not None else None


def has_hook(hook_name: str) -> bool:
    """Whether any plugin registered a callback for `hook_name`."""
    runner = _runner()
    return runner is not None and runner.has(hook_name)


def invoke_hook(hook_name: str, **kwargs: Any) -> list[Any]:
    """Run every callback of `hook_name` with `kwargs` (each isolated and under its time limit, as
    the host's own calls): the results that are not None, in registration order."""
    runner = _runner()
    if runner is None or not runner.has(hook_name):
        return []
    return runner.call(hook_name, Collect(kwargs)).run()


async def ainvoke_hook(hook_name: str, **kwargs: Any) -> list[Any]:
    """`invoke_hook` from a coroutine: async callbacks awaited on its loop, sync ones on a worker."""
    runner = _runner()
    if runner is None or not runner.has(hook_name):
        return []
    return await runner.call(hook_name, Collect(kwargs)).arun()
