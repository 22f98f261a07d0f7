"""Arize Phoenix, an OpenTelemetry backend the tests start: its OTLP/HTTP receiver and its REST API
on a free port of 127.0.0.1, its gRPC receiver on another, its database in a temporary folder.

    server = PhoenixServer.create()          # started, healthy
    server.url                               # http://127.0.0.1:PORT: OTLP/HTTP at /v1/traces
    server.spans("my-project")               # the project's spans, through GET /v1/projects/{name}/spans
    server.close()                           # stop it and remove the folder

Phoenix comes from PyPI into a virtualenv of its own, never the project's (its pins are not ours):
`python3 dev.py test --otel` installs it once into `~/.cache/hermes-core-otel/phoenix`
(`HERMES_OTEL_CACHE` moves the cache), whose `hermes-requirement` file, written last, says it is whole.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

from . import free_port
from .servers import dies_with_parent, server_folder, unavailable

INSTALL = "python3 dev.py test --otel"
START_SECONDS = 180.0  # a first start creates its database and runs its migrations: tens of seconds on a busy machine


class PhoenixError(RuntimeError):
    """Phoenix did not start; the message ends with its log."""


def program() -> Path | None:
    """The `phoenix` program of the cached virtualenv, when it is installed whole."""
    cache = Path(os.environ.get("HERMES_OTEL_CACHE") or Path.home() / ".cache" / "hermes-core-otel") / "phoenix"
    found = cache / ("Scripts" if os.name == "nt" else "bin") / "phoenix"
    return found if (cache / "hermes-requirement").exists() and found.exists() else None


class PhoenixServer:
    def __init__(self, folder: Path, command: Path) -> None:
        self.folder, self.command = folder, command
        self.log_path = folder / "phoenix.log"
        self.port = self.grpc_port = 0
        self._process: subprocess.Popen[bytes] | None = None

    @classmethod
    def create(cls) -> PhoenixServer:
        """A new server, started and healthy. Skips (fails under CI=true) when Phoenix is not installed."""
        command = program()
        if command is None:
            unavailable("Arize Phoenix is not installed in the otel group's cache", INSTALL)
        server = cls(server_folder("hermes-phoenix-"), command)
        try:
            for attempt in range(3):  # another process may take a free port before Phoenix binds it
                server.port, server.grpc_port = free_port(), free_port()
                try:
                    server.start()
                    break
                except PhoenixError as exc:
                    if "address already in use" not in str(exc).lower() or attempt == 2:
                        raise
        except BaseException:
            server.close()
            raise
        return server

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        """Start Phoenix and return once `/healthz` answers."""
        environment = {k: v for k, v in os.environ.items() if not k.startswith(("PHOENIX_", "OTEL_"))}
        environment.update({
            "PHOENIX_HOST": "127.0.0.1", "PHOENIX_PORT": str(self.port), "PHOENIX_GRPC_PORT": str(self.grpc_port),
            "PHOENIX_WORKING_DIR": str(self.folder / "work"),  # its SQLite database, in the folder
            "PHOENIX_TELEMETRY_ENABLED": "false", "PHOENIX_ALLOW_EXTERNAL_RESOURCES": "false",  # loopback only
        })
        with self.log_path.open("ab") as log:
            self._process = subprocess.Popen(
                [str(self.command), "serve"], env=environment, stdin=subprocess.DEVNULL, stdout=log,
                stderr=subprocess.STDOUT, cwd=self.folder, preexec_fn=dies_with_parent(signal.SIGTERM))
        deadline = time.monotonic() + START_SECONDS
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise PhoenixError(f"phoenix serve exited with code {self._process.returncode}:\n{self.log()}")
            try:
                with urllib.request.urlopen(f"{self.url}/healthz", timeout=2) as answer:
                    if answer.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.25)
        self.stop()
        raise PhoenixError(f"phoenix serve did not answer /healthz within {START_SECONDS:g} s:\n{self.log()}")

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")[-4000:] if self.log_path.exists() else ""

    def get(self, path: str, **query: Any) -> Any:
        """GET `path` of Phoenix's REST API (`/v1/...`), its JSON."""
        url = f"{self.url}{path}" + (f"?{urllib.parse.urlencode(query, doseq=True)}" if query else "")
        with urllib.request.urlopen(url, timeout=30) as answer:
            return json.loads(answer.read())

    def spans(self, project: str) -> list[dict[str, Any]]:
        """Every span of `project`, oldest first ([] while Phoenix has no such project yet)."""
        found: list[dict[str, Any]] = []
        cursor = None
        while True:
            query: dict[str, Any] = {"limit": 1000, "sort": "start_time", "order": "asc"}
            if cursor:
                query["cursor"] = cursor
            try:
                page = self.get(f"/v1/projects/{urllib.parse.quote(project, safe='')}/spans", **query)
            except urllib.error.HTTPError as exc:
                if exc.code == 404:  # no span of it arrived yet
                    return []
                raise
            found.extend(page["data"])
            cursor = page.get("next_cursor")
            if not cursor:
                return found

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=30)

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.folder, ignore_errors=True)
