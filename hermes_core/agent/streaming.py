"""The agent's streamed answers: shown as they arrive, and told to the plugins' `on_stream_*` hooks.

The agent streams a model request when someone watches it: its display shows the answer on a
terminal, or a plugin registered an `on_stream_start`, `on_stream_delta` or `on_stream_end`
callback (as Hermes counts plugins as stream consumers). The hooks never sit on the path of the
text: as in Hermes, their events go through a bounded queue (1,024 events; the oldest is dropped
when it is full, and an event over 16 KB is dropped whole) to one worker thread that fires them
in order, so a slow callback delays no token. `StreamHooks.close` waits a bounded time for what
is queued when the session ends.
"""

from __future__ import annotations

import collections
import logging
import threading
from typing import TYPE_CHECKING, Any

from hermes_core import leave_sigint_to_the_main_thread

if TYPE_CHECKING:
    from hermes_core import LifecycleHooks, TurnIdentity

    from .display import Display

__all__ = ["STREAM_HOOKS", "StreamHooks", "TurnStream"]

log = logging.getLogger("hermes_core.hooks")
STREAM_HOOKS = ("on_stream_start", "on_stream_delta", "on_stream_end")
QUEUE_SIZE = 1024
EVENT_MAX_BYTES = 16 * 1024
CLOSE_WAIT = 5.0  # seconds the end of a session waits for queued events to be delivered


class StreamHooks:
    """Delivers the stream events of one agent to its plugins, in order, off the token path."""

    def __init__(self, hooks: LifecycleHooks) -> None:
        self._hooks = hooks
        self._queue: collections.deque[tuple[str, dict[str, Any]]] = collections.deque(maxlen=QUEUE_SIZE)
        self._ready = threading.Condition()
        self._busy = False
        self._closed = False
        self._thread: threading.Thread | None = None
        self.dropped = 0  # events dropped (queue full, or too big)

    @property
    def wanted(self) -> bool:
        """Whether any plugin listens to a stream hook."""
        return any(self._hooks.has(name) for name in STREAM_HOOKS)

    def emit(self, hook: str, payload: dict[str, Any]) -> None:
        """Queue one event (`hook` is one of `STREAM_HOOKS`) for delivery; never blocks."""
        if self._closed or not self._hooks.has(hook):
            return
        if sum(len(value.encode()) for value in payload.values() if isinstance(value, str)) > EVENT_MAX_BYTES:
            self.dropped += 1
            return
        with self._ready:
            if len(self._queue) == QUEUE_SIZE:
                self.dropped += 1
            self._queue.append((hook, payload))
            if self._thread is None:
                self._thread = threading.Thread(target=self._deliver, name="hermes-stream-hooks", daemon=True)
                self._thread.start()
            self._ready.notify()

    def _deliver(self) -> None:
        leave_sigint_to_the_main_thread()
        while True:
            with self._ready:
                while not self._queue and not self._closed:
                    self._busy = False
                    self._ready.notify_all()
                    self._ready.wait()
                if not self._queue:
                    self._busy = False
                    self._ready.notify_all()
                    return
                hook, payload = self._queue.popleft()
                self._busy = True
            try:
                getattr(self._hooks, hook)(**payload).run()
            except Exception:  # noqa: BLE001 - the callbacks are contained; building the call must not stop delivery
                log.warning("the %s hook could not be fired; stream events go on", hook, exc_info=True)

    def flush(self, timeout: float = CLOSE_WAIT) -> bool:
        """Wait until every queued event is delivered (at most `timeout` seconds); whether it was."""
        with self._ready:
            return self._ready.wait_for(lambda: not self._queue and not self._busy, timeout)

    def close(self, timeout: float = CLOSE_WAIT) -> None:
        """Deliver what is queued (waiting at most `timeout`), then stop the worker."""
        if self._thread is None:
            return
        self.flush(timeout)
        with self._ready:
            self._closed = True
            self._ready.notify_all()


class TurnStream:
    """The stream sink of one model request of a turn: the display shows the text, the hooks hear it."""

    def __init__(self, display: Display, hooks: StreamHooks, turn: TurnIdentity, iteration: int) -> None:
        self._display, self._hooks, self._turn, self._iteration = display, hooks, turn, iteration
        self._base: dict[str, Any] = {}
        self.streamed = False  # some text of this request reached the display or the hooks

    def start(self, provider: str, model: str) -> None:
        turn = self._turn
        self._base = {"turn_id": turn.turn_id, "iteration": self._iteration, "session_id": turn.session_id,
                      "model": model, "provider": provider, "surface": turn.platform}
        self._hooks.emit("on_stream_start", dict(self._base))

    def delta(self, text: str) -> None:
        self.streamed = True
        self._display.stream_delta(text)
        self._hooks.emit("on_stream_delta", {**self._base, "delta": text, "kind": "text"})

    def end(self, text: str, finished: bool, error: str | None) -> None:
        self._display.stream_end(text, finished, error)
        self._hooks.emit("on_stream_end", {**self._base, "final_text": text, "finished": finished, "error": error})
