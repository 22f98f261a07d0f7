"""The OAuth-protected MCP server of `oauth_server.py`, as a fixture: `oauth_server(ttl=..., sse=..., client=...)` starts one
(a subprocess) and hands back its URLs and what its authorization server did so far."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest

SERVER = Path(__file__).with_name("oauth_server.py")


@attrs.frozen
class OAuthServer:
    mcp: str  # the MCP endpoint (Streamable HTTP)
    issuer: str  # the authorization server

    def counts(self) -> dict[str, int]:
        """What the authorization server did: register, authorize, code_exchange, refresh_exchange."""
        with urllib.request.urlopen(f"{self.issuer}/counts", timeout=30) as response:
            return json.loads(response.read())  # type: ignore[no-any-return]


@pytest.fixture
def oauth_server(tmp_path: Path) -> Iterator[Callable[..., OAuthServer]]:
    processes: list[subprocess.Popen[bytes]] = []

    def start(ttl: int = 3600, sse: bool = False, client: str | None = None, no_scope: bool = False) -> OAuthServer:
        url_file = tmp_path / f"oauth-server-{len(processes)}.json"
        process = subprocess.Popen([sys.executable, str(SERVER), str(url_file), "--ttl", str(ttl),
                                    *(["--sse"] if sse else []), *(["--client", client] if client else []),
                                    *(["--no-scope"] if no_scope else [])])
        processes.append(process)
        deadline = time.monotonic() + 60
        while not url_file.exists():
            assert process.poll() is None and time.monotonic() < deadline, "the OAuth test server did not start"
            time.sleep(0.05)
        urls: dict[str, Any] = json.loads(url_file.read_text())
        return OAuthServer(urls["mcp"], urls["issuer"])

    yield start
    for process in processes:
        process.kill()
        process.wait(timeout=30)
