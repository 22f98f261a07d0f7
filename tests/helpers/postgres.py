"""A PostgreSQL cluster the tests start: `initdb` into a temporary folder, the server on a free port
of 127.0.0.1 (its unix socket inside the folder), settings for speed over durability. One cluster
serves a whole test session (one per xdist worker); each test gets a database of its own.

As root (the CI machines) `initdb` and `postgres` run as the package's `postgres` user, since both
refuse root; otherwise as the current user. Logins over TCP take the password (scram-sha-256), so
a wrong one is refused as it would be on a real server."""

from __future__ import annotations

import os
import re
import secrets
import shutil
import signal
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any

from . import free_port
from .servers import dies_with_parent, server_folder, unavailable

INSTALL = "apt-get install postgresql"
USER = "hermes"
SETTINGS = {  # speed over durability: the cluster lives for one test session
    "listen_addresses": "'127.0.0.1'",
    "fsync": "off",
    "synchronous_commit": "off",
    "full_page_writes": "off",
    "wal_level": "minimal",
    "max_wal_senders": "0",
    "max_wal_size": "'1GB'",
    "max_parallel_workers_per_gather": "0",  # two cores shared by every worker
    "max_connections": "200",  # a few hosts' pools and the test's own connections
    "shared_buffers": "'32MB'",
    "log_min_messages": "warning",
    "timezone": "'UTC'",
}


def postgres_bindir() -> Path | None:
    """The folder of PostgreSQL's programs: the newest /usr/lib/postgresql/<version>/bin (Debian's
    packages), else the folder of the `postgres` on PATH; None when neither has `initdb` next to it."""

    def version(path: Path) -> tuple[int, ...]:
        return tuple(int(part) for part in re.findall(r"\d+", path.parent.parent.name))

    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/postgres"), key=version)
    on_path = shutil.which("postgres")
    candidates = [path.parent for path in reversed(found)] + ([Path(on_path).resolve().parent] if on_path else [])
    return next((folder for folder in candidates if (folder / "initdb").exists()), None)


class ClusterError(RuntimeError):
    """The cluster did not initialise, start or stop; the message ends with its log."""


class PgCluster:
    """One PostgreSQL server in a temporary folder on 127.0.0.1:`port`, for `user` with `password`.

        cluster = PgCluster.create()       # initdb and start
        url = cluster.create_database()    # postgresql://hermes:...@127.0.0.1:PORT/t_...
        cluster.restart()                  # the same port: clients reconnect
        cluster.close()                    # stop and remove the folder
    """

    def __init__(self, folder: Path, bindir: Path, owner: tuple[int, int] | None) -> None:
        self.folder = folder
        self.bindir = bindir
        self.data = folder / "data"
        self.log_path = folder / "postgres.log"
        self.user = USER
        self.password = f"pw-{secrets.token_hex(8)}"  # distinctive: a test can check it is never printed
        self.port = 0
        self._owner = owner
        self._process: subprocess.Popen[bytes] | None = None

    @classmethod
    def create(cls) -> PgCluster:
        """A new cluster, started. Skips (fails under CI=true) when PostgreSQL is not installed;
        ClusterError when it is but does not start."""
        import importlib.util

        if importlib.util.find_spec("psycopg") is None:
            unavailable("psycopg is not installed", "pip install -e '.[postgres]'")
        bindir = postgres_bindir()
        if bindir is None:
            unavailable("PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/initdb)", INSTALL)
        owner = None
        if os.geteuid() == 0:
            import pwd

            try:
                entry = pwd.getpwnam("postgres")
            except KeyError:
                unavailable("running as root with no `postgres` user to run PostgreSQL as", INSTALL)
            owner = (entry.pw_uid, entry.pw_gid)
        cluster = cls(server_folder("hermes-pg-", owner), bindir, owner)
        try:
            cluster._initdb()
            for attempt in range(3):  # another worker may take the free port before the server binds it
                cluster.port = free_port()
                cluster._configure()
                try:
                    cluster.start()
                    break
                except ClusterError as exc:
                    if "Address already in use" not in str(exc) or attempt == 2:
                        raise
        except BaseException:
            cluster.close()
            raise
        return cluster

    def url_for(self, dbname: str) -> str:
        """The URL of database `dbname` on this cluster (created or not), with the password."""
        return f"postgresql://{self.user}:{self.password}@127.0.0.1:{self.port}/{dbname}"

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    @property
    def pid(self) -> int | None:
        """The server's (postmaster's) process id while it runs."""
        return self._process.pid if self.running and self._process else None

    def start(self) -> None:
        """Start the server (a no-op when it runs) and return once it accepts connections."""
        if self.running:
            return
        pid_file = self.data / "postmaster.pid"
        with self.log_path.open("ab") as log:
            self._process = subprocess.Popen(
                [self.bindir / "postgres", "-D", self.data], stdin=subprocess.DEVNULL, stdout=log,
                stderr=subprocess.STDOUT, cwd=self.folder, preexec_fn=dies_with_parent(signal.SIGQUIT),
                **self._as_owner())
        deadline = time.monotonic() + 60
        while True:  # ready when postmaster.pid's status line (the 8th) says so, as `pg_ctl -w` waits
            lines = pid_file.read_text().splitlines() if pid_file.exists() else []
            if len(lines) >= 8 and lines[0].strip() == str(self._process.pid) and lines[7].strip() == "ready":
                return
            if self._process.poll() is not None:
                self._process = None
                raise ClusterError(f"PostgreSQL did not start:\n{self.log()}")
            if time.monotonic() > deadline:
                self.stop(immediate=True)
                raise ClusterError(f"PostgreSQL was not ready within 60 s:\n{self.log()}")
            time.sleep(0.05)

    def stop(self, immediate: bool = False) -> None:
        """Stop the server (a no-op when it is stopped): a fast shutdown, which ends every session, or
        with `immediate` a crash-like one (no checkpoint; the next start recovers)."""
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        process.send_signal(signal.SIGQUIT if immediate else signal.SIGINT)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    def restart(self) -> None:
        """Stop then start again, on the same port: connections open before are broken."""
        self.stop()
        self.start()

    def create_database(self, name: str | None = None) -> str:
        """A new empty database (`t_<uuid>` unless named), started first if it is stopped; its URL."""
        from psycopg import sql

        name = name or f"t_{uuid.uuid4().hex}"
        self.start()
        with self._admin() as conn:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        return self.url_for(name)

    def drop_database(self, name: str) -> None:
        """Drop `name` if it exists, ending the sessions still connected to it; this process's pool
        on it is closed first, its worker threads waited for. A pool left open on a dropped database
        goes on connecting in the background (psycopg_pool draws each connection's expiry jitter
        from the global `random`), which a hypothesis test takes, when it lands while the next
        example is drawn, for a strategy using `random`: a failure that does not reproduce."""
        from psycopg import sql

        self._close_pools(name)
        self.start()
        with self._admin() as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))

    def _close_pools(self, name: str) -> None:
        from hermes_core.hosting import close_state_pools

        # a connection being made under load is waited for, not left behind
        close_state_pools(lambda url: url.database == name and url.port == self.port, timeout=30)

    def close(self) -> None:
        """Stop the server and remove its folder."""
        self.stop()
        shutil.rmtree(self.folder, ignore_errors=True)

    def log(self, tail: int = 3000) -> str:
        text = self.log_path.read_text(errors="replace") if self.log_path.exists() else "(no log)"
        return text[-tail:]

    def _admin(self) -> Any:
        import psycopg

        return psycopg.connect(self.url_for("postgres"), autocommit=True, connect_timeout=10)

    def _as_owner(self) -> dict[str, Any]:
        if self._owner is None:
            return {}
        return {"user": self._owner[0], "group": self._owner[1], "extra_groups": []}

    def _initdb(self) -> None:
        pwfile = self.folder / "pwfile"
        pwfile.write_text(self.password + "\n")
        if self._owner:
            os.chown(pwfile, *self._owner)
        base = [str(self.bindir / "initdb"), "-D", str(self.data), "-U", self.user, f"--pwfile={pwfile}", "-E", "UTF8",
                "--auth-local=trust", "--auth-host=scram-sha-256", "--no-sync", "--no-instructions"]
        for locale in (["--locale=C.UTF-8"], ["--no-locale"]):  # C.UTF-8: text search folds non-ASCII case
            result = subprocess.run([*base, *locale], stdin=subprocess.DEVNULL, capture_output=True, text=True,
                                    cwd=self.folder, **self._as_owner())
            if result.returncode == 0:
                break
            shutil.rmtree(self.data, ignore_errors=True)
        pwfile.unlink()
        if result.returncode:
            raise ClusterError(f"initdb failed:\n{result.stdout[-1500:]}{result.stderr[-1500:]}")

    def _configure(self) -> None:
        settings = {**SETTINGS, "port": str(self.port), "unix_socket_directories": f"'{self.folder}'"}
        conf = self.data / "postgresql.auto.conf"  # read last: these win over postgresql.conf
        conf.write_text("".join(f"{key} = {value}\n" for key, value in settings.items()))
        if self._owner:
            os.chown(conf, *self._owner)
