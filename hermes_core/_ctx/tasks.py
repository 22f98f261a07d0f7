"""`ctx.spawn_task`: a plugin's background coroutine, supervised.

In a thread that runs an event loop the task joins that loop; anywhere else it runs on the
host's background loop. Its failure is logged under the plugin's id (never raised into the
host), and unloading the plugin cancels it.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
import logging
from typing import Any

from .._errors import RegistrationError
from .._runtime.invoke import contained
from .._undo import Undo

__all__ = ["spawn"]

log = logging.getLogger("hermes_core.plugins")


def _report(plugin_id: str, outcome: Any) -> None:
    if outcome.cancelled():
        return
    error = outcome.exception()
    if error is not None:
        log.warning("background task of plugin %r failed: %s: %s", plugin_id, type(error).__name__, error)


class _Raised:
    """A finished outcome holding `error`, for `_report`."""

    def __init__(self, error: BaseException) -> None:
        self.error = error

    def cancelled(self) -> bool:
        return False

    def exception(self) -> BaseException:
        return self.error


def spawn(plugin_id: str, coro: Any, *, name: str | None = None) -> tuple[Any, Undo]:
    """Start `coro`; returns its task (or, off any loop, a concurrent future) and the function that
    cancels it. A task is named `name`, else `plugin:<plugin_id>:task` (Hermes' default)."""
    if not inspect.isawaitable(coro):
        raise RegistrationError(f"ctx.spawn_task of plugin {plugin_id!r} takes a coroutine (call the async "
                                f"function: spawn_task(work()), not spawn_task(work)); got {coro!r}",
                                plugin_id=plugin_id)

    async def guarded(awaitable: Any = coro) -> Any:
        try:
            return await awaitable
        except Exception:
            raise
        except BaseException as exc:  # SystemExit, KeyboardInterrupt...: asyncio would let them stop the loop
            contained(exc)  # the user's Ctrl-C and a cancel go on
            _report(plugin_id, _Raised(exc))
            return None

    coro = guarded()
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        loop = None
    task: asyncio.Task[Any] | concurrent.futures.Future[Any]
    if loop is not None:
        task = loop.create_task(coro, name=name or f"plugin:{plugin_id}:task")
    else:
        from .._runtime.workers import portal

        task = asyncio.run_coroutine_threadsafe(coro, portal())
    task.add_done_callback(lambda outcome: _report(plugin_id, outcome))

    def cancel() -> None:
        if not task.done():
            if isinstance(task, asyncio.Task):
                task.get_loop().call_soon_threadsafe(task.cancel)
            else:
                task.cancel()

    return task, cancel
