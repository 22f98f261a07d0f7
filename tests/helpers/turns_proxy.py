"""A TCP proxy on 127.0.0.1 that counts round trips: how many times a client spoke again after the
server had answered (a pipelined batch of statements is one; a statement waited for is one each).

    >>> with TurnsProxy("127.0.0.1", 5432) as proxy:
    ...     ...  # connect to proxy.port
    ...     proxy.reset(); work(); assert proxy.turns == 1
"""

from __future__ import annotations

import select
import socket
import threading
from types import TracebackType


class TurnsProxy:
    def __init__(self, host: str, port: int) -> None:
        self.upstream = (host, port)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self._listener.getsockname()[1])
        self._lock = threading.Lock()
        self._turns = 0
        self._closed = False

    @property
    def turns(self) -> int:
        with self._lock:
            return self._turns

    def reset(self) -> None:
        with self._lock:
            self._turns = 0

    def __enter__(self) -> TurnsProxy:
        threading.Thread(target=self._accept, daemon=True).start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self._closed = True
        self._listener.close()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            server = socket.create_connection(self.upstream)
            threading.Thread(target=self._pump, args=(client, server), daemon=True).start()

    def _pump(self, client: socket.socket, server: socket.socket) -> None:
        answered = True  # the client's first words are a turn
        peers = {client: server, server: client}
        try:
            while not self._closed:
                ready, _, _ = select.select(list(peers), [], [], 0.5)
                for sock in ready:
                    data = sock.recv(65536)
                    if not data:
                        return
                    if sock is client:
                        if answered:
                            with self._lock:
                                self._turns += 1
                        answered = False
                    else:
                        answered = True
                    peers[sock].sendall(data)
        except OSError:
            return
        finally:
            client.close()
            server.close()
