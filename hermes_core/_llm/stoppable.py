"""Model requests a stopped turn breaks off in their own thread.

A sync model request blocks its thread in a socket read until the model answers. A turn that is
stopped meanwhile must not wait for that answer. Sending the request from a second thread and
waiting on it (`_runtime.cancel.breakable`) does this for any client, at the price of two thread
hand-offs per request (on a small virtual machine, waking the other CPU is most of what `hermes
serve` adds to a request). For the process's own sync HTTP client there is a cheaper way: its
connections are made through `Connections`, which notes, per thread, the connection that
thread is reading from or writing to; a stopped turn shuts that connection down (`shut`), which
wakes the blocked read at once (closing the socket alone would not), and the request fails in its
own thread, where `transport.post` says `Cancelled`. Both ways keep the same promise: a stopped
turn stops waiting at once and its answer, if one comes, is never used.

`install(http_client)` puts this in place on an httpx client of the openai SDK when its parts are
the ones this module knows (its one transport's connection pool, no proxy mounts) and says
whether it did; when it did not, requests go the thread way, as before.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator
from typing import Any

from .._runtime.cancel import cancel_check

__all__ = ["install", "shut"]

_using: dict[int, Any] = {}  # thread id -> the connection that thread reads from or writes to now


@contextlib.contextmanager
def _used(stream: Any) -> Iterator[None]:
    ident = threading.get_ident()
    _using[ident] = stream
    try:
        # After noting the connection: a stop that came before it is seen here, one that comes
        # after finds the connection in `_using` and shuts it down.
        cancel_check()
        yield
    finally:
        _using.pop(ident, None)


class _Stream:
    """An httpcore network stream, noted in `_using` while it reads or writes.

    A request's head and its body go out in one send: httpcore writes them in two, and each send
    on loopback wakes the model server's process (a read for the head, another for the body). The
    head (the first write after a read, ending with the blank line) is held until the next bytes
    to write, or until the stream is read or closed. A head that cannot be sent when it is joined
    to a read is left to the read, as httpcore leaves a failed request write: the server may have
    answered already (a 413 before the body)."""

    _HOLD_MAX = 64 * 1024  # a longer head, or a body past this, is not copied to join them

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self._head: tuple[bytes, float | None] | None = None  # the request head held, with its write timeout
        self._fresh = True  # nothing written since the last read: the next write is a request's head

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        with _used(self):
            if self._head is not None:
                self._send_head()
            self._fresh = True
            return self._inner.read(max_bytes, timeout)  # type: ignore[no-any-return]

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        if not buffer:
            return
        if self._fresh and self._head is None and buffer.endswith(b"\r\n\r\n") and len(buffer) <= self._HOLD_MAX:
            self._fresh = False
            self._head = (buffer, timeout)
            return
        self._fresh = False
        with _used(self):
            if self._head is not None:
                head = self._head[0]
                self._head = None
                if len(buffer) <= self._HOLD_MAX:
                    buffer = head + buffer
                else:
                    self._inner.write(head, timeout)
            self._inner.write(buffer, timeout)

    def _send_head(self) -> None:
        head, timeout = self._head or (b"", None)
        self._head = None
        try:
            self._inner.write(head, timeout)
        except Exception as exc:  # noqa: BLE001 - httpcore's WriteError: the read says what the server did
            if type(exc).__name__ != "WriteError":  # as httpcore leaves a failed write (a timeout it raises)
                raise

    def close(self) -> None:
        self._head = None
        self._inner.close()

    def start_tls(self, *args: Any, **kwargs: Any) -> _Stream:
        return _Stream(self._inner.start_tls(*args, **kwargs))

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class Connections:
    """An httpcore network backend whose streams are `_Stream`s."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def connect_tcp(self, *args: Any, **kwargs: Any) -> _Stream:
        return _Stream(self._inner.connect_tcp(*args, **kwargs))

    def connect_unix_socket(self, *args: Any, **kwargs: Any) -> _Stream:
        return _Stream(self._inner.connect_unix_socket(*args, **kwargs))

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


def install(http_client: Any) -> bool:
    """Make the connections of `http_client` (an `openai.DefaultHttpxClient`) ones `shut` can
    break off; False (nothing changed) when its parts are not the ones expected."""
    pool = getattr(getattr(http_client, "_transport", None), "_pool", None)
    backend = getattr(pool, "_network_backend", None)
    if backend is None or getattr(http_client, "_mounts", None):  # a proxy's transport: not ours to wrap
        return False
    if not isinstance(backend, Connections):
        pool._network_backend = Connections(backend)  # type: ignore[union-attr]
    return True


def shut(ident: int) -> None:
    """Break off the request thread `ident` is sending or waiting on (none: nothing to do)."""
    stream = _using.get(ident)
    sock = stream.get_extra_info("socket") if stream is not None else None
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)
