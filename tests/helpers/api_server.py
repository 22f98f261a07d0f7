"""For the API server's tests: `hermes serve` as a subprocess, one HTTP request at a time, and a
wait for a condition."""

from __future__ import annotations

import json
import re
import time
import urllib.error
import urllib.request
from typing import Any

import openai

from tests.helpers.chat import HermesProcess

KEY = "full-access-key-0123456789"


class Serve(HermesProcess):
    """`hermes serve --port 0`: `url` is the base URL from its first stderr line."""

    command = ("serve",)

    def __init__(self, *args: str) -> None:
        super().__init__("--port", "0", *args)
        first = self.wait_for(r".")
        match = re.match(r"(http://\S+/v1) ", first)
        assert match, self.lines
        self.url = match.group(1)
        self.root = self.url.removesuffix("/v1")
        self._clients: list[openai.OpenAI] = []

    def client(self, key: str | None = KEY, **headers: str) -> openai.OpenAI:
        """A stock openai client for the server (closed when the server is killed)."""
        client = openai.OpenAI(base_url=self.url, api_key=key or "none", default_headers=headers or None,
                               max_retries=0)
        self._clients.append(client)
        return client

    def kill(self) -> None:
        for client in self._clients:
            client.close()
        super().kill()


def call(url: str, body: Any = None, *, key: str | None = KEY, method: str | None = None,
         headers: dict[str, str] | None = None, raw: bytes | None = None) -> tuple[int, Any, dict[str, str]]:
    """One HTTP request: (status, parsed JSON body, headers), also for an error status."""
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    sent = {"Content-Type": "application/json", **({"Authorization": f"Bearer {key}"} if key else {}),
            **(headers or {})}
    request = urllib.request.Request(url, data=data, method=method or ("POST" if data is not None else "GET"),
                                     headers=sent)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read() or b"null"), dict(response.headers)
    except urllib.error.HTTPError as error:
        with error:
            return error.code, json.loads(error.read() or b"null"), dict(error.headers)


def sse_events(url: str, body: Any = None, *, key: str | None = KEY) -> list[tuple[str | None, Any]]:
    """The (event, data) pairs of a server-sent event stream."""
    request = urllib.request.Request(url, data=json.dumps(body).encode() if body is not None else None,
                                     headers={"Content-Type": "application/json", "Authorization": f"Bearer {key}"})
    events: list[tuple[str | None, Any]] = []
    with urllib.request.urlopen(request, timeout=30) as response:
        event = None
        for line in response.read().decode().splitlines():
            if line.startswith("event: "):
                event = line[7:]
            elif line.startswith("data: "):
                data = line[6:]
                events.append((event, data if data == "[DONE]" else json.loads(data)))
                event = None
    return events


def until(condition: Any, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)
