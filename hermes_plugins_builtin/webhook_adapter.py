"""The built-in `webhook` platform's adapter (see `webhook`): imported when the gateway starts it.

The agent behind an HTTP endpoint, a messaging platform like any other (its adapter a
`BasePlatformAdapter`).

    platforms:
      webhook:
        enabled: true
        port: 8644            # 0: any free port
        secret: ...           # or $WEBHOOK_SECRET; every request must carry it

`POST /message` with `{"text": ..., "chat_id": ..., "user_id": ..., "user_name": ...}` and the
secret (`Authorization: Bearer <secret>` or `X-Webhook-Secret: <secret>`) answers with
`{"text": <the answer>, "chat_id", "message_id"}` once the agent has answered (`timeout`
seconds at most, 300 by default). With `"callback_url"` it answers 202 at once and posts the
answer there as JSON, signed (`X-Hermes-Signature: sha256=<HMAC of the body with the secret>`).
Each `chat_id` is one conversation, kept across restarts. It listens on 127.0.0.1 (another
`host` needs `allow_remote: true`), and posts only to loopback callbacks unless
`allow_remote_callbacks: true`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import hashlib
import hmac
import json
import logging
import os
import threading
import urllib.error
import urllib.request
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from hermes_core import ConfigError, storable_json
from hermes_core.gateway.config import Platform, PlatformConfig
from hermes_core.gateway.platforms.base import BasePlatformAdapter, SendResult
from hermes_core.gateway.platforms.event import MessageEvent, MessageType, ProcessingOutcome
from hermes_core.hosting import BrowserPolicy, bearer_token, is_loopback, loads_sent, secret_matches

log = logging.getLogger("hermes.gateway.webhook")

SECRET_ENV = "WEBHOOK_SECRET"
MAX_BODY = 1024 * 1024
READ_TIMEOUT = 30.0  # seconds a request may take to arrive whole


def secret(config: PlatformConfig) -> str:
    return str(config.extra.get("secret") or os.getenv(SECRET_ENV, "")).strip()


class WebhookAdapter(BasePlatformAdapter):
    """An HTTP endpoint: each request is a message; its answer is the response (or a callback)."""

    splits_long_messages = True  # one HTTP answer holds any length

    def __init__(self, config: PlatformConfig, **_: Any) -> None:
        super().__init__(config=config, platform=Platform.WEBHOOK)
        extra = config.extra
        self.host = str(extra.get("host") or "127.0.0.1")
        self.port = int(extra.get("port", 8644))
        self.timeout = float(extra.get("timeout", 300))
        self.read_timeout = float(extra.get("read_timeout", READ_TIMEOUT))
        self.secret = secret(config)
        self.remote_callbacks = extra.get("allow_remote_callbacks") is True
        self._server: ThreadingHTTPServer | None = None
        self.browsers = BrowserPolicy()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock = threading.Lock()
        self._waiting: dict[str, concurrent.futures.Future[str | None]] = {}
        self._callbacks: dict[str, str] = {}  # message id → callback URL
        self._chat_callbacks: dict[str, str] = {}  # chat id → its latest callback URL (for later messages)

    async def connect(self, *, is_reconnect: bool = False) -> bool:
        if not self.secret:
            self._set_fatal_error("no_secret", f"set platforms.webhook.secret or ${SECRET_ENV}", retryable=False)
            return False
        if not is_loopback(self.host) and self.config.extra.get("allow_remote") is not True:
            self._set_fatal_error("remote_host", f"{self.host} is not a loopback address; set "
                                  "platforms.webhook.allow_remote: true to listen there", retryable=False)
            return False
        try:
            if self.gateway_runner is not None:  # hosting.allowed_hosts and allowed_origins
                self.browsers = BrowserPolicy.from_config(self.gateway_runner.manager.config)
        except ConfigError as exc:
            self._set_fatal_error("bad_config", str(exc), retryable=False)
            return False
        self._loop = asyncio.get_running_loop()
        self._server = _Server((self.host, self.port), _handler(self))
        self.port = self._server.server_address[1]
        threading.Thread(target=self._server.serve_forever, name="hermes-webhook", daemon=True).start()
        log.info("webhook: listening on http://%s:%d/message", self.host, self.port)
        self._mark_connected()
        return True

    async def disconnect(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            await asyncio.to_thread(server.shutdown)
            server.server_close()
        with self._lock:
            waiting = list(self._waiting.values())
            self._waiting.clear()
        for future in waiting:
            if not future.done():
                future.set_exception(ConnectionAbortedError("the gateway is stopping"))
        self._mark_disconnected()

    async def send(self, chat_id: str, content: str, reply_to: str | None = None,
                   metadata: dict[str, Any] | None = None) -> SendResult:
        with self._lock:
            future = self._waiting.pop(reply_to, None) if reply_to else None
            callback = self._callbacks.pop(reply_to, None) if reply_to else None
        if future is not None:
            if not future.done():
                future.set_result(content)
            return SendResult(success=True, message_id=reply_to)
        callback = callback or self._chat_callbacks.get(chat_id)
        if callback is None:
            return SendResult(success=False, error=f"no request or callback_url is waiting for chat {chat_id!r}")
        body = json.dumps({"text": content, "chat_id": chat_id, "in_reply_to": reply_to}).encode()
        await asyncio.to_thread(self._post, callback, body)
        return SendResult(success=True, message_id=reply_to)

    def _post(self, url: str, body: bytes) -> None:
        """POST a signed answer to a callback URL. A redirect is never followed: the URL was checked
        (loopback unless allowed), where a redirect points was not; a 3xx is a failed send."""
        signature = hmac.new(self.secret.encode(), body, hashlib.sha256).hexdigest()
        request = urllib.request.Request(url, data=body, method="POST", headers={
            "Content-Type": "application/json", "X-Hermes-Signature": f"sha256={signature}"})
        with _NO_REDIRECTS.open(request, timeout=30) as response:  # checked in accept()
            response.read()

    async def get_chat_info(self, chat_id: str) -> dict[str, Any]:
        return {"name": chat_id, "type": "dm"}

    async def on_processing_complete(self, event: MessageEvent, outcome: ProcessingOutcome) -> None:
        """A message that got no answer (a plugin skipped it) ends its request with none."""
        with self._lock:
            future = self._waiting.pop(event.message_id or "", None)
        if future is not None and not future.done():
            future.set_result(None)

    # -- the HTTP side (a server thread per request) ----------------------------------------------

    def accept(self, headers: Any, payload: Any) -> tuple[int, dict[str, Any]]:
        """One request: (status, JSON body)."""
        given = str(headers.get("X-Webhook-Secret") or "").strip() or bearer_token(headers.get("Authorization"))
        if not secret_matches(given, self.secret):
            return 401, {"error": "missing or wrong secret (Authorization: Bearer <secret> or X-Webhook-Secret)"}
        if not isinstance(payload, dict) or not isinstance(payload.get("text"), str) or not payload["text"].strip():
            return 400, {"error": 'the body must be a JSON object with a non-empty "text"'}
        chat_id = str(payload.get("chat_id") or payload.get("user_id") or "default")
        callback = payload.get("callback_url")
        if callback is not None:
            parts = urlsplit(str(callback))
            if parts.scheme not in ("http", "https") or not parts.hostname:
                return 400, {"error": "callback_url must be an http(s) URL"}
            if not is_loopback(parts.hostname) and not self.remote_callbacks:
                return 400, {"error": "callback_url must be on loopback unless "
                                      "platforms.webhook.allow_remote_callbacks is true"}
        message_id = uuid.uuid4().hex[:12]
        user = str(payload.get("user_id") or chat_id)
        source = self.build_source(chat_id=chat_id, chat_type="dm", user_id=user,
                                   user_name=payload.get("user_name") or user, message_id=message_id)
        event = MessageEvent(text=payload["text"], message_type=MessageType.TEXT, source=source,
                             message_id=message_id, raw_message=payload)
        future: concurrent.futures.Future[str | None] = concurrent.futures.Future()
        with self._lock:
            if callback is not None:
                self._callbacks[message_id] = str(callback)
                self._chat_callbacks[chat_id] = str(callback)
            else:
                self._waiting[message_id] = future
        loop = self._loop
        if loop is None or loop.is_closed():
            return 503, {"error": "the gateway is stopping"}
        asyncio.run_coroutine_threadsafe(self.handle_message(event), loop)
        if callback is not None:
            return 202, {"accepted": True, "chat_id": chat_id, "message_id": message_id}
        try:
            answer = future.result(timeout=self.timeout)
        except concurrent.futures.TimeoutError:
            with self._lock:
                self._waiting.pop(message_id, None)
            return 504, {"error": f"no answer within {self.timeout:g}s", "message_id": message_id}
        except ConnectionAbortedError as exc:
            return 503, {"error": str(exc), "message_id": message_id}
        return 200, {"text": answer, "chat_id": chat_id, "message_id": message_id}


class _RefuseRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, req: Any, fp: Any, code: int, msg: str, headers: Any, newurl: str) -> None:
        raise urllib.error.HTTPError(req.full_url, code, f"the callback answered {code} (a redirect to {newurl}); "
                                     "callbacks are never redirected", headers, fp)


_NO_REDIRECTS = urllib.request.build_opener(_RefuseRedirects)


class _Server(ThreadingHTTPServer):
    request_queue_size = 128  # a burst of senders waits in the backlog instead of being reset (the default is 5)
    daemon_threads = True


def _handler(adapter: WebhookAdapter) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        timeout = adapter.read_timeout  # a client that stops sending mid-request lets its thread go
        def log_message(self, format: str, *args: Any) -> None:
            log.debug("webhook: " + format, *args)

        def _answer(self, status: int, body: dict[str, Any]) -> None:
            data = storable_json(body).encode()  # an answer holding a lone surrogate goes out escaped
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            if self.close_connection:
                self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(data)

        def _refused(self) -> bool:
            """A request a browser was made to send (`hosting.BrowserPolicy`), answered with its refusal."""
            refusal = adapter.browsers.refusal(self.command, self.path, self.headers.items(), adapter.host,
                                               adapter.port)
            if refusal is None:
                return False
            self.close_connection = True
            data = refusal.body()
            self.send_response(refusal.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(data)
            return True

        def do_GET(self) -> None:
            if self._refused():
                return
            if self.path.rstrip("/") in ("/health", ""):
                self._answer(200, {"ok": True, "platform": "webhook"})
            else:
                self._answer(404, {"error": "POST /message"})

        def do_POST(self) -> None:
            if self._refused():
                return
            if self.path.rstrip("/") != "/message":
                self._answer(404, {"error": "POST /message"})
                return
            declared = (self.headers.get("Content-Length") or "0").strip()
            if not declared.isdigit():  # "abc", "-1", "1e3": refused at once, the connection closed
                self.close_connection = True
                self._answer(400, {"error": "Content-Length must be a number of bytes"})
                return
            length = int(declared)
            if length > MAX_BODY:
                self.close_connection = True
                self._answer(413, {"error": f"the body is over {MAX_BODY} bytes"})
                return
            try:
                raw = self.rfile.read(length)
            except OSError:  # the client stopped sending (the read timed out) or went away
                self.close_connection = True
                return
            try:
                payload = loads_sent(raw or b"null")  # a lone surrogate in it: U+FFFD
            except (ValueError, RecursionError):
                self._answer(400, {"error": "the body is not JSON"})
                return
            self._answer(*adapter.accept(self.headers, payload))

    return Handler
