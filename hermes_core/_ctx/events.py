"""`ctx.emit` / `ctx.subscribe`: fire-and-forget events between plugins, delivered in order on one thread."""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from typing import Any

from .._errors import HermesError, RegistrationError
from .._runtime.interrupts import leave_sigint_to_the_main_thread
from .._runtime.invoke import contained
from .._undo import Undo

__all__ = ["EventBus"]

log = logging.getLogger("hermes_core.plugins")


EVENT_DEPTH_MAX = 8
EVENT_PENDING_MAX = 64


class EventBus:
    """Plugins' events: `emit` puts `<plugin id>:<event>` on a queue (at most 64 pending) that
    one worker thread delivers to the subscribers in order; a subscriber that raises is
    logged; an event emitted from inside a delivery more than 8 deep is dropped. The
    `hermes:` namespace is the host's."""

    def __init__(self) -> None:
        self._subscribers: list[tuple[str, Callable[..., Any], str]] = []
        self._queue: queue.Queue[tuple[str, Any, int]] = queue.Queue(EVENT_PENDING_MAX)
        self._worker: threading.Thread | None = None
        self._lock = threading.Lock()
        self._local = threading.local()

    def subscribe(self, plugin_id: str, event: str, callback: Callable[..., Any]) -> Undo:
        if not isinstance(event, str) or not event:
            raise RegistrationError(f"ctx.subscribe: an event name is a non-empty string, not {event!r}",
                                    plugin_id=plugin_id)
        if not callable(callback):
            raise RegistrationError(f"ctx.subscribe({event!r}): the callback is not callable", plugin_id=plugin_id)
        entry = (event, callback, plugin_id)
        with self._lock:
            self._subscribers.append(entry)

        def undo() -> None:
            with self._lock:
                if entry in self._subscribers:
                    self._subscribers.remove(entry)

        return undo

    def emit(self, plugin_id: str | None, event: str, payload: Any = None) -> bool:
        """Queue `event` (namespaced `<plugin id>:` for a plugin); whether it was accepted."""
        if not isinstance(event, str) or not event:
            raise HermesError(f"ctx.emit: an event name is a non-empty string, not {event!r}")
        if plugin_id is not None:
            if event.startswith("hermes:"):
                raise HermesError(f"ctx.emit({event!r}) of plugin {plugin_id!r}: the 'hermes:' namespace is the host's")
            prefix = f"{plugin_id}:"
            event = event if event.startswith(prefix) else prefix + event
        depth = getattr(self._local, "depth", 0)
        if depth >= EVENT_DEPTH_MAX:
            log.warning("event %r dropped: emitted %d deliveries deep", event, depth)
            return False
        try:
            self._queue.put_nowait((event, payload, depth + 1))
        except queue.Full:
            log.warning("event %r dropped: %d events are already waiting", event, EVENT_PENDING_MAX)
            return False
        self._start()
        return True

    def _start(self) -> None:
        with self._lock:
            if self._worker is None or not self._worker.is_alive():
                self._worker = threading.Thread(target=self._run, name="hermes-events", daemon=True)
                self._worker.start()

    def _run(self) -> None:
        leave_sigint_to_the_main_thread()
        while True:
            event, payload, depth = self._queue.get()
            with self._lock:
                targets = [(cb, pid) for name, cb, pid in self._subscribers if name in (event, "*")]
            self._local.depth = depth
            for callback, plugin_id in targets:
                try:
                    callback(event, payload)
                except BaseException as exc:  # noqa: BLE001 - a subscriber never stops delivery
                    contained(exc)
                    log.warning("subscriber of plugin %r to %r failed: %s: %s", plugin_id, event,
                                type(exc).__name__, exc)
            self._local.depth = 0
            self._queue.task_done()

    def join(self) -> None:
        """Wait until every queued event has been delivered (for hosts and tests)."""
        self._queue.join()
