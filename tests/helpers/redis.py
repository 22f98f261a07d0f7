"""A redis-server the tests start: in a temporary folder, on a free port of 127.0.0.1, without
persistence (a restart starts empty, as a Redis used for hot counters may), one per test.

    server = RedisServer.create()   # started
    server.url                      # redis://127.0.0.1:PORT/0
    server.restart()                # the same port, empty: clients reconnect
    server.close()                  # stop and remove the folder
"""

from __future__ import annotations

import contextlib
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

from . import free_port
from .servers import dies_with_parent, server_folder, unavailable

INSTALL = "apt-get install redis-server"
PROGRAM = "/usr/bin/redis-server"


class RedisError(RuntimeError):
    """The server did not start; the message ends with its log."""


class RedisServer:
    def __init__(self, folder: Path, program: str) -> None:
        self.folder, self.program = folder, program
        self.log_path = folder / "redis.log"
        self.port = 0
        self._process: subprocess.Popen[bytes] | None = None

    @classmethod
    def create(cls) -> RedisServer:
        """A new server, started. Skips (fails under CI=true) when redis-server or redis-py is missing."""
        import importlib.util

        if importlib.util.find_spec("redis") is None:
            unavailable("redis-py is not installed", "pip install -e '.[redis]'")
        program = shutil.which("redis-server") or (PROGRAM if Path(PROGRAM).exists() else None)
        if program is None:
            unavailable("redis-server is not installed", INSTALL)
        server = cls(server_folder("hermes-redis-"), program)
        try:
            for attempt in range(3):  # another worker may take the free port before the server binds it
                server.port = free_port()
                try:
                    server.start()
                    break
                except RedisError as exc:
                    if "Address already in use" not in str(exc) or attempt == 2:
                        raise
        except BaseException:
            server.close()
            raise
        return server

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def start(self) -> None:
        """Start the server (a no-op when it runs) and return once it answers PING."""
        if self.running:
            return
        with self.log_path.open("ab") as log:
            self._process = subprocess.Popen(
                [self.program, "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.folder),
                 "--save", "", "--appendonly", "no", "--protected-mode", "no", "--daemonize", "no"],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, cwd=self.folder,
                preexec_fn=dies_with_parent(signal.SIGTERM))
        deadline = time.monotonic() + 20
        while True:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1) as sock:
                    sock.sendall(b"PING\r\n")
                    if sock.recv(16).startswith(b"+PONG"):
                        return
            except OSError:
                pass
            if self._process.poll() is not None:
                self._process = None
                raise RedisError(f"redis-server did not start:\n{self.log()}")
            if time.monotonic() > deadline:
                self.stop()
                raise RedisError(f"redis-server was not ready within 20 s:\n{self.log()}")
            time.sleep(0.02)

    def stop(self) -> None:
        """Stop the server at once (SIGKILL: what it held is gone, as after a crash)."""
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.kill()
            process.wait()

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """The server stopped (SIGSTOP) for as long as the block runs: it answers nothing, as one too busy
        to; its clients' commands wait, then time out. Continued (SIGCONT) after, with all it held."""
        assert self._process is not None
        self._process.send_signal(signal.SIGSTOP)
        try:
            yield
        finally:
            self._process.send_signal(signal.SIGCONT)

    def restart(self) -> None:
        """Stop then start again, empty, on the same port."""
        self.stop()
        self.start()

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.folder, ignore_errors=True)

    def log(self, tail: int = 3000) -> str:
        text = self.log_path.read_text(errors="replace") if self.log_path.exists() else "(no log)"
        return text[-tail:]
