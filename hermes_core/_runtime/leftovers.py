"""What plugin code leaves running (non-daemon threads, pending asyncio tasks), whose it is,
and a CLI exit that does not wait for it.

Python waits for every non-daemon thread before a process ends, so a plugin that starts one
in `register` and never stops it would make every `hermes` command hang on exit. The loader
notes the threads each plugin's registration starts (`noting`); at exit `finish` names what
is still running, by plugin, in one line each, flushes the output and ends the process
without waiting for it. A thread started elsewhere is named by the plugin whose code it is
running, when its stack shows one.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import weakref
from collections.abc import Callable, Iterable, Iterator
from typing import Any

__all__ = ["closing", "finish", "lingering", "noting"]

_started: weakref.WeakKeyDictionary[threading.Thread, str] = weakref.WeakKeyDictionary()
_modules: dict[str, str] = {}  # a plugin's module name → its id
_lock = threading.Lock()
_closers: list[Callable[[], Any]] = []


def closing(callback: Callable[[], Any]) -> None:
    """Run `callback()` when the CLI finishes, before what is still running is named: the host's own
    background work (its MCP connections) is closed, not reported as a plugin's."""
    with _lock:
        if callback not in _closers:
            _closers.append(callback)


@contextlib.contextmanager
def noting(plugin_id: str) -> Iterator[None]:
    """Note the threads started while the block runs (a plugin's registration) as `plugin_id`'s."""
    before = set(threading.enumerate())
    try:
        yield
    finally:
        with _lock:
            for thread in threading.enumerate():
                if thread not in before:
                    _started.setdefault(thread, plugin_id)


def note_module(plugin_id: str, module_name: str | None) -> None:
    """`module_name` is `plugin_id`'s code: a thread running it is that plugin's."""
    if module_name:
        with _lock:
            _modules[module_name] = plugin_id


def _owner_by_code(names: Iterable[str]) -> str | None:
    for name in names:
        for module, plugin_id in list(_modules.items()):
            if name == module or name.startswith(module + "."):
                return plugin_id
    return None


def _thread_owner(thread: threading.Thread) -> str | None:
    owner = _started.get(thread)
    if owner is not None:
        return owner
    frame = sys._current_frames().get(thread.ident or -1)
    names = []
    while frame is not None:
        names.append(str(frame.f_globals.get("__name__", "")))
        frame = frame.f_back
    names.append(type(thread).__module__)
    return _owner_by_code(names)


def _pending_tasks() -> list[Any]:
    if "hermes_core._runtime.workers" not in sys.modules:  # not imported: no background loop was ever started
        return []
    from .workers import running_portal

    loop = running_portal()
    if loop is None:
        return []
    import asyncio

    for _ in range(3):
        try:
            return [task for task in asyncio.all_tasks(loop) if not task.done()]
        except RuntimeError:  # the set changed while it was read: the loop is busy, count it again
            continue
    return []


def lingering() -> list[str]:
    """One line per non-daemon thread still running and per pending background task, naming
    the plugin it belongs to when that is known."""
    lines = []
    for thread in threading.enumerate():
        if thread is threading.main_thread() or thread.daemon or not thread.is_alive():
            continue
        owner = _thread_owner(thread)
        who = f"plugin {owner!r}" if owner else "plugin code"
        lines.append(f"{who} left thread {thread.name!r} running (a non-daemon thread)")
    for task in _pending_tasks():
        chain: list[Any] = []
        coro: Any = task.get_coro()
        while coro is not None and len(chain) < 50:  # the coroutines it awaits, outermost first
            chain.append(coro)
            coro = getattr(coro, "cr_await", None)
        names = [str(c.cr_frame.f_globals.get("__name__", "")) for c in chain if getattr(c, "cr_frame", None)]
        owner = _owner_by_code(names)
        who = f"plugin {owner!r}" if owner else "plugin code"
        lines.append(f"{who} left asyncio task {getattr(chain[-1] if chain else task, '__qualname__', task)!s} pending")
    return lines


def finish(run: Callable[[], Any], warn: Callable[[str], None]) -> Any:
    """`run()` (the CLI's body, which ends in `SystemExit`); when plugin code left threads or
    tasks running, `warn` names each, the output is flushed and the process ends at once with
    the exit code, instead of waiting for them."""
    try:
        return run()
    except SystemExit as done:
        for callback in list(_closers):
            with contextlib.suppress(Exception):
                callback()
        left = lingering()
        if not left:
            raise
        code = done.code if isinstance(done.code, int) else (0 if done.code is None else 1)
        if done.code is not None and not isinstance(done.code, int):
            print(done.code, file=sys.stderr)
        for line in left:
            warn(f"{line}; exiting without waiting for it")
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(code)
