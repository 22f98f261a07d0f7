"""The servers the fleet tests start: a PostgreSQL cluster shared by the session with a database per
test, restartable under the clients' feet; nginx balancing real HTTP hosts on loopback, failing over
when one stops, passing streams through as they are written. And the rule for a server that is not
installed: a skip that names the install command, a failure under CI=true."""

from __future__ import annotations

import contextlib
import http.client
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests.helpers import ROOT
from tests.helpers.postgres import PgCluster
from tests.helpers.servers import unavailable

Nginx = Callable[[Sequence[str | int]], str]


def test_each_test_gets_a_database_of_its_own(pg_url: str, pg_cluster: PgCluster) -> None:
    other = pg_cluster.create_database()
    try:
        with psycopg.connect(pg_url) as conn:
            conn.execute("CREATE TABLE notes (body text)")
            conn.execute("INSERT INTO notes VALUES ('here')")
        with psycopg.connect(other) as conn:
            assert conn.execute("SELECT to_regclass('notes')").fetchone() == (None,)
        with psycopg.connect(pg_url) as conn:
            assert conn.execute("SELECT body FROM notes").fetchall() == [("here",)]
    finally:
        pg_cluster.drop_database(other.rsplit("/", 1)[1])
    assert pg_url.startswith(f"postgresql://{pg_cluster.user}:{pg_cluster.password}@127.0.0.1:{pg_cluster.port}/t_")


def test_clients_reconnect_after_the_cluster_restarts_and_keep_what_was_committed(
        pg_url: str, pg_cluster: PgCluster) -> None:
    before = psycopg.connect(pg_url, autocommit=True)
    before.execute("CREATE TABLE runs (id int)")
    before.execute("INSERT INTO runs VALUES (1)")
    pg_cluster.stop()
    with pytest.raises(psycopg.OperationalError, match="Connection refused"):
        psycopg.connect(pg_url, connect_timeout=5)
    pg_cluster.start()
    with pytest.raises(psycopg.OperationalError):  # the session the stop ended
        before.execute("SELECT 1")
    before.close()
    pg_cluster.restart()
    with psycopg.connect(pg_url) as after:
        assert after.execute("SELECT id FROM runs").fetchall() == [(1,)]


def test_a_dropped_database_leaves_no_pool_of_this_process_working_in_the_background(
        pg_cluster: PgCluster, tmp_path: Path) -> None:
    """A hermes-core store's pool on a database outlives the store (one pool per URL in a process):
    dropping the database closes it, so that no worker thread of it goes on connecting (and drawing
    from the global `random`, which hypothesis takes for a strategy using it) during later tests."""
    import datetime as dt

    from hermes_core.cron.shared import SharedJobs

    url = pg_cluster.create_database()
    name = url.rsplit("/", 1)[1]
    with SharedJobs(tmp_path, url) as jobs:
        jobs.add("every 1h", "check the build", dt.datetime.now(dt.timezone.utc), dt.timezone.utc)
        assert [job["prompt"] for job in jobs.read()] == ["check the build"]
    assert [t for t in threading.enumerate() if name in t.name]  # the pool's workers, still there
    pg_cluster.drop_database(name)
    assert [t.name for t in threading.enumerate() if name in t.name and t.is_alive()] == []


def test_a_wrong_password_is_refused_by_the_server(pg_url: str, pg_cluster: PgCluster) -> None:
    wrong = pg_url.replace(f":{pg_cluster.password}@", ":not-the-password@")
    with pytest.raises(psycopg.OperationalError, match=f'password authentication failed for user "{pg_cluster.user}"'):
        psycopg.connect(wrong, connect_timeout=5)


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, IndexError):
        return False


@pytest.mark.skipif(sys.platform != "linux", reason="the server learns of its parent's death on Linux")
def test_a_killed_test_process_leaves_no_server_behind() -> None:
    code = ("import time; from tests.helpers.postgres import PgCluster; c = PgCluster.create(); "
            "print(c.pid, c.folder, flush=True); time.sleep(600)")
    with subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, stdout=subprocess.PIPE, text=True) as child:
        assert child.stdout is not None
        pid, folder = child.stdout.readline().split()
        child.kill()
    try:
        deadline = time.monotonic() + 60  # the server gets SIGQUIT when its parent dies, and ends
        while _alive(int(pid)) and time.monotonic() < deadline:
            time.sleep(0.05)
        if _alive(int(pid)):
            os.kill(int(pid), signal.SIGKILL)
            pytest.fail("the server outlived the test process that started it")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


class _Host(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, name: str) -> None:
        self.name = name
        self.stream_seen = threading.Event()
        self.stream_waited: list[bool] = []
        super().__init__(("127.0.0.1", 0), _Handler)


class _Handler(BaseHTTPRequestHandler):
    server: _Host

    def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
        if self.path == "/stream":  # one event, then the next only once the client has read the first
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            self.wfile.write(b"data: one\n\n")
            self.wfile.flush()
            self.server.stream_waited.append(self.server.stream_seen.wait(timeout=30))
            self.wfile.write(b"data: two\n\n")
            return
        body = self.server.name.encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:  # noqa: N802
        self.rfile.read(int(self.headers["Content-Length"]))
        self.do_GET()

    def log_message(self, *args: Any) -> None:
        pass


@contextlib.contextmanager
def http_host(name: str) -> Iterator[_Host]:
    """A tiny HTTP server on 127.0.0.1 answering GET with `name`, served by a thread until the block ends."""
    host = _Host(name)
    thread = threading.Thread(target=host.serve_forever, daemon=True)
    thread.start()
    try:
        yield host
    finally:
        host.shutdown()
        host.server_close()


def get(url: str, post: bytes | None = None) -> tuple[str, str]:
    """The body and the X-Upstream header of GET `url` (POST with a body `post`)."""
    with urllib.request.urlopen(url, data=post, timeout=30) as response:
        return response.read().decode(), response.headers["X-Upstream"]


def test_nginx_balances_round_robin_and_passes_requests_on_when_a_host_stops(nginx: Nginx) -> None:
    with http_host("a") as a, http_host("b") as b:
        ports = {"a": a.server_address[1], "b": b.server_address[1]}
        url = nginx([f"127.0.0.1:{ports['a']}", ports["b"]])
        answers = [get(f"{url}/who") for _ in range(4)]
        assert answers[0][0] != answers[1][0] and answers[:2] == answers[2:]
        assert all(upstream == f"127.0.0.1:{ports[name]}" for name, upstream in answers)
        b.shutdown()
        b.server_close()
        after = [get(f"{url}/who", post=b"{}") for _ in range(4)]  # a POST too: nothing reached the stopped host
        assert [name for name, _ in after] == ["a"] * 4
        assert f"127.0.0.1:{ports['b']}, 127.0.0.1:{ports['a']}" in [upstream for _, upstream in after]


def test_nginx_passes_a_stream_through_as_it_is_written(nginx: Nginx) -> None:
    with http_host("a") as host:
        url = nginx([host.server_address[1]])
        conn = http.client.HTTPConnection(url.removeprefix("http://"), timeout=60)
        conn.request("GET", "/stream")
        response = conn.getresponse()
        assert response.status == 200
        assert response.readline() == b"data: one\n"  # before the host writes the rest
        host.stream_seen.set()
        assert response.read() == b"\ndata: two\n\n"
        conn.close()
        assert host.stream_waited == [True]


@pytest.mark.parametrize("ci", ["true", ""])
def test_a_server_that_is_not_installed_skips_with_the_install_command_or_fails_under_ci(
        ci: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", ci)
    expected = pytest.fail.Exception if ci else pytest.skip.Exception
    with pytest.raises(expected) as raised:
        unavailable("nginx is not installed", "apt-get install nginx")
    assert "nginx is not installed" in str(raised.value) and "`apt-get install nginx`" in str(raised.value)
