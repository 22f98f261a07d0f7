"""The built-in `api_server` platform's adapter (see `api_server`): the API server of `hermes serve`
on the gateway's event loop, started by `connect` and stopped by `disconnect`. Its requests are
answered by the API server itself, not through the gateway's message handler: each is a turn of
the reference agent, with the caller's key and identity."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from hermes_core.api_server import ApiServer, Keys, settings
from hermes_core.gateway.config import Platform, PlatformConfig
from hermes_core.gateway.platforms.base import BasePlatformAdapter, SendResult
from hermes_core import ConfigError
from hermes_core.hosting import BoundedRequests, BrowserPolicy, GuardBrowsers, is_loopback, listening_socket

log = logging.getLogger("hermes.gateway")


class ApiServerAdapter(BasePlatformAdapter):
    """The API server as a gateway platform."""

    def __init__(self, config: PlatformConfig, **_: Any) -> None:
        super().__init__(config, Platform("api_server"))
        self._server: Any = None
        self._task: asyncio.Task[None] | None = None
        self._api: ApiServer | None = None

    async def connect(self, *, is_reconnect: bool = False) -> bool:
        import uvicorn

        manager = self.gateway_runner.manager
        chosen = settings(manager.config)
        keys = Keys.from_config(manager.config, main_key=chosen.key or None)
        if not is_loopback(chosen.host) and not keys.any:
            self._set_fatal_error("no_key", f"{chosen.host} is not a loopback address; set API_SERVER_KEY",
                                  retryable=False)
            return False
        try:
            browsers = BrowserPolicy.from_config(manager.config)
        except ConfigError as exc:
            self._set_fatal_error("bad_config", str(exc), retryable=False)
            return False
        self._api = ApiServer(manager, keys_=keys, model_name=chosen.model_name)
        sock = listening_socket(chosen.host, chosen.port, what="the api_server platform")
        app = GuardBrowsers(BoundedRequests(self._api.app(), max_body=self._api.max_body), browsers, chosen.host,
                            sock.getsockname()[1])
        self._server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
        self._server.capture_signals = contextlib.nullcontext  # the gateway handles the signals
        self._task = asyncio.get_running_loop().create_task(self._server.serve(sockets=[sock]))
        while not self._server.started and not self._task.done():
            await asyncio.sleep(0.01)
        if self._task.done():
            self._set_fatal_error("not_started", "the API server stopped as it started", retryable=True)
            return False
        log.info("api_server: listening on http://%s:%d/v1", chosen.host, sock.getsockname()[1])
        self._mark_connected()
        return True

    async def disconnect(self) -> None:
        server, task, self._server, self._task = self._server, self._task, None, None
        if server is not None and task is not None:
            server.should_exit = True
            with contextlib.suppress(Exception):
                await task
        self._mark_disconnected()

    async def send(self, chat_id: str, content: str, reply_to: str | None = None,
                   metadata: dict[str, Any] | None = None) -> SendResult:
        return SendResult(success=False, error="the API server answers its own requests; it sends no messages")

    async def get_chat_info(self, chat_id: str) -> dict[str, Any]:
        return {"name": chat_id, "type": "dm"}
