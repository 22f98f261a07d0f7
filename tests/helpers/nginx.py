"""nginx started by a test as a real load balancer in front of hosts on 127.0.0.1: round robin,
the next host when one refuses or times out, streams (SSE) passed through unbuffered. Its config,
pid file, logs and temporary files live in a folder of its own; the test owns the master process
(`daemon off`) and stops it.

Each request opens a new connection to its host (no upstream keepalive): a host that died is then
refused before anything is sent, so nginx passes even a POST on to the next host, where a reused
connection found dead mid-request would give a 502.

Every response carries `X-Upstream`: the host (or hosts, comma-separated, after a failover) nginx
passed the request to, so a test can say which host answered without the host's help."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from . import free_port
from .servers import dies_with_parent, server_folder, unavailable

INSTALL = "apt-get install nginx"

CONFIG = """\
daemon off;
master_process on;
worker_processes 1;
{user}pid {folder}/nginx.pid;
error_log {folder}/error.log warn;
events {{ worker_connections 1024; }}
http {{
    access_log {folder}/access.log;
    client_body_temp_path {folder}/client_body;
    proxy_temp_path {folder}/proxy;
    fastcgi_temp_path {folder}/fastcgi;
    uwsgi_temp_path {folder}/uwsgi;
    scgi_temp_path {folder}/scgi;
    client_max_body_size 64m;
    upstream hosts {{
{servers}
    }}
    server {{
        listen 127.0.0.1:{port};
        location / {{
            proxy_pass http://hosts;
            proxy_http_version 1.1;
            proxy_set_header Host $http_host;
            proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
            proxy_buffering off;
            proxy_cache off;
            proxy_connect_timeout 1s;
            proxy_send_timeout 300s;
            proxy_read_timeout 300s;
            proxy_next_upstream error timeout;
            add_header X-Upstream $upstream_addr always;
        }}
    }}
}}
"""


def nginx_binary() -> Path | None:
    """Debian's /usr/sbin/nginx, else the `nginx` on PATH."""
    if Path("/usr/sbin/nginx").exists():
        return Path("/usr/sbin/nginx")
    found = shutil.which("nginx")
    return Path(found) if found else None


def _address(upstream: str | int) -> str:
    return f"127.0.0.1:{upstream}" if isinstance(upstream, int) else upstream


def _worker_user() -> str:
    """As root, the workers run as nobody (its own group's name differs between systems)."""
    if os.geteuid() != 0:
        return ""
    import grp
    import pwd

    nobody = pwd.getpwnam("nobody")
    return f"user nobody {grp.getgrgid(nobody.pw_gid).gr_name};\n"


@contextlib.contextmanager
def running_nginx(upstreams: Sequence[str | int]) -> Iterator[str]:
    """nginx balancing over `upstreams` ("127.0.0.1:PORT", or a port), on a free loopback port;
    yields its base URL (`http://127.0.0.1:PORT`) once it listens, and stops it after. Skips (fails
    under CI=true) when nginx is not installed; fails when it is but does not start."""
    binary = nginx_binary()
    if binary is None:
        unavailable("nginx is not installed", INSTALL)
    if not upstreams:
        raise ValueError("nginx needs at least one upstream host")
    folder = server_folder("hermes-nginx-")
    servers = "\n".join(f"        server {_address(u)} max_fails=1 fail_timeout=1s;" for u in upstreams)
    process = None
    try:
        for attempt in range(3):  # another process may take the free port before nginx binds it
            port = free_port()
            config = folder / "nginx.conf"
            config.write_text(CONFIG.format(folder=folder, port=port, servers=servers, user=_worker_user()))
            with (folder / "stderr.log").open("wb") as log:
                process = subprocess.Popen(
                    [binary, "-p", folder, "-c", config, "-e", folder / "error.log"], stdin=subprocess.DEVNULL,
                    stdout=log, stderr=subprocess.STDOUT, cwd=folder, preexec_fn=dies_with_parent(signal.SIGTERM))
            if _listening(process, port):
                break
            errors = "".join((folder / name).read_text(errors="replace") for name in ("stderr.log", "error.log")
                             if (folder / name).exists())
            if "Address already in use" not in errors or attempt == 2:
                pytest.fail(f"nginx did not start:\n{errors[-3000:]}", pytrace=False)
        yield f"http://127.0.0.1:{port}"
    finally:
        if process is not None and process.poll() is None:
            process.send_signal(signal.SIGTERM)  # a fast shutdown: open streams are cut, not waited for
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        shutil.rmtree(folder, ignore_errors=True)


def _listening(process: subprocess.Popen[bytes], port: int) -> bool:
    """True once nginx accepts connections on `port`; False when it exits first."""
    deadline = time.monotonic() + 30
    while process.poll() is None and time.monotonic() < deadline:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return True
        time.sleep(0.05)
    if process.poll() is None:
        process.kill()
        process.wait()
    return False
