"""`hermes serve --port 0` as a subprocess, for the API server's tests: its base URL, and stock
`openai` clients for it (closed with it)."""

from __future__ import annotations

import re

import openai

from tests.helpers.chat import HermesProcess

KEY = "full-access-key-0123456789"  # the API_SERVER_KEY the tests set


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
        client = openai.OpenAI(base_url=self.url, api_key=key or "none", default_headers=headers or None,
                               max_retries=0)
        self._clients.append(client)
        return client

    def kill(self) -> None:
        for client in self._clients:
            client.close()
        super().kill()
