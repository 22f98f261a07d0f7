"""The `ctx` a memory provider's `register` gets: Hermes' memory loader lets it call anything.

Hermes loads a memory-provider plugin's `register(ctx)` with a collector that takes
`register_memory_provider` and accepts every other `register_*` call whatever its arguments
(no-op stubs in the versions most published providers were written against). A provider
written against that calls, say, `ctx.register_tool(name, schema, handler)` — which is not
`PluginContext.register_tool`'s signature — and works under Hermes. Here such a call must not
cost the provider its load: a `register_*` call other than `register_memory_provider` is made
when its arguments fit `ctx`'s method; when they do not fit, or the call fails, it is a warning
naming the call (shown by `hermes plugins doctor`), and the load goes on.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable
from typing import Any

from .._runtime.invoke import contained, describe_error

__all__ = ["MemoryCollector"]

log = logging.getLogger("hermes_core.plugins")


class MemoryCollector:
    """`ctx` for a memory provider's registration: the plugin's own `ctx`, forgiving as Hermes'
    memory loader is (see the module); `warnings` gets a line per call it left out."""

    def __init__(self, ctx: Any, plugin_id: str, warnings: list[str]) -> None:
        self._ctx, self._plugin_id, self._warnings = ctx, plugin_id, warnings

    def __getattr__(self, name: str) -> Any:
        member = getattr(self._ctx, name)
        if not name.startswith("register_") or name == "register_memory_provider" or not callable(member):
            return member
        return self._forgiving(name, member)

    def _forgiving(self, name: str, method: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            try:
                inspect.signature(method).bind(*args, **kwargs)
            except TypeError as exc:
                return self._left_out(name, f"its arguments do not fit ctx.{name} ({exc})")
            except ValueError:
                pass  # no signature to check: make the call
            try:
                return method(*args, **kwargs)
            except BaseException as exc:  # noqa: BLE001 - left out, as Hermes' collector would
                contained(exc)
                return self._left_out(name, f"it failed: {describe_error(exc)}")

        return call

    def _left_out(self, name: str, why: str) -> None:
        line = (f"plugin {self._plugin_id!r}: ctx.{name}(...) called while registering its memory provider was "
                f"left out: {why}; Hermes' memory loader accepts such calls, so the provider loads without it")
        self._warnings.append(line)
        log.warning("%s", line)
        return None
