"""For the gateway's tests: a fake chat service on 127.0.0.1 (what a platform adapter talks to),
the adapter plugin that talks to it (written as published Hermes adapters are), and
`hermes gateway run` as a subprocess whose stderr lines can be waited for."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tests.helpers import HERMES, free_port, llm_config, make_folder_plugin


class FakeChat:
    """A chat service: `say(chat, user, text)` is a message someone writes; the adapter fetches
    them from `GET /updates?after=N` and answers with `POST /send`, which `sent` records.
    `fail_sends(n)`: the next n sends get a 500; `down(True)`: /updates answers 503."""

    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []
        self.sent: list[dict[str, Any]] = []
        self._failing = 0
        self._down = False
        self._changed = threading.Condition()
        chat = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _json(self, status: int, body: Any) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                try:
                    self.wfile.write(data)
                except OSError:  # the adapter went away (the gateway stopped)
                    pass

            def do_GET(self) -> None:
                after = int(parse_qs(urlsplit(self.path).query).get("after", ["0"])[0])
                self._json(*chat._updates(after))

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                self._json(*chat._send({**json.loads(raw), "path": self.path, "raw": raw.decode(),
                                        "signature": self.headers.get("X-Hermes-Signature")}))

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def _updates(self, after: int) -> tuple[int, Any]:
        with self._changed:
            self._changed.wait_for(lambda: self._down or any(m["id"] > after for m in self.messages), timeout=1)
            if self._down:
                return 503, {"error": "the service is down"}
            return 200, [m for m in self.messages if m["id"] > after]

    def _send(self, body: dict[str, Any]) -> tuple[int, Any]:
        with self._changed:
            if self._failing:
                self._failing -= 1
                return 500, {"error": "the service failed to send"}
            self.sent.append({**body, "at": time.monotonic()})
            self._changed.notify_all()
            return 200, {"ok": True, "message_id": f"out-{len(self.sent)}"}

    def say(self, chat_id: str, user_id: str, text: str, chat_type: str = "dm", event: str = "") -> str:
        with self._changed:
            message = {"id": len(self.messages) + 1, "chat_id": chat_id, "user_id": user_id, "text": text,
                       "chat_type": chat_type, "event": event}
            self.messages.append(message)
            self._changed.notify_all()
            return str(message["id"])

    def press(self, chat_id: str, user_id: str, **fields: Any) -> None:
        """Someone presses a button: an update carrying `fields` (`button` and `session_key` for an
        approval card, `action` for an interactive action)."""
        with self._changed:
            self.messages.append({"id": len(self.messages) + 1, "chat_id": chat_id, "user_id": user_id, "text": "",
                                  "chat_type": "dm", "event": "", **fields})
            self._changed.notify_all()

    def fail_sends(self, count: int) -> None:
        with self._changed:
            self._failing = count

    def down(self, down: bool) -> None:
        with self._changed:
            self._down = down
            self._changed.notify_all()

    def wait_sent(self, count: int, chat_id: str | None = None, timeout: float = 30) -> list[dict[str, Any]]:
        """The sends (to `chat_id`, or all) once there are `count` of them."""
        def mine() -> list[dict[str, Any]]:
            return [s for s in self.sent if chat_id is None or s["chat_id"] == chat_id]

        with self._changed:
            if not self._changed.wait_for(lambda: len(mine()) >= count, timeout=timeout):
                raise AssertionError(f"{len(mine())} of {count} sends to {chat_id or 'any chat'}: {self.sent}")
            return mine()


# A platform plugin as published Hermes adapters are written: Hermes' gateway names, a
# BasePlatformAdapter subclass, ctx.register_platform with Hermes' keywords.
ADAPTER_PLUGIN = '''
import asyncio, json, os, urllib.request

from gateway.config import Platform, PlatformConfig
from gateway.platforms.base import BasePlatformAdapter, MessageEvent, MessageType, SendResult
from gateway.session_context import get_session_env
from tools.approval import resolve_gateway_approval


class FakeChatAdapter(BasePlatformAdapter):
    MAX_MESSAGE_LENGTH = 60
    SEND_RETRY_DELAY = 0.2

    def __init__(self, config: PlatformConfig, **kwargs):
        super().__init__(config=config, platform=Platform("fakechat"))
        self.url = config.extra["url"]
        self._after = 0
        self._task = None

    async def connect(self, *, is_reconnect=False):
        refusals = os.path.join(os.environ["HERMES_HOME"], "fakechat-refusals")
        if os.path.exists(refusals):
            left = int(open(refusals).read())
            if left > 0:
                open(refusals, "w").write(str(left - 1))
                raise ConnectionError("the chat service refused the login")
        self._task = asyncio.create_task(self._poll())
        self._mark_connected()
        return True

    def _call(self, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url + path, data=data, headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.loads(response.read())

    async def _poll(self):
        while True:
            try:
                updates = await asyncio.to_thread(self._call, f"/updates?after={self._after}")
            except Exception as exc:
                self._set_fatal_error("poll_failed", f"polling failed: {exc}", retryable=True)
                await self._notify_fatal_error()
                return
            for update in updates:
                self._after = update["id"]
                if update.get("button"):  # an approval card's button, as Hermes' adapters answer it
                    resolve_gateway_approval(update["session_key"], update["button"])
                    continue
                if update.get("action"):  # an interactive element, reported as Slack reports it
                    body = {"type": "block_actions", "user": {"id": update["user_id"]},
                            "channel": {"id": update["chat_id"]}, "actions": [update["action"]]}
                    acked = []

                    async def ack(*args, **kwargs):
                        acked.append(True)

                    handled = await self.handle_slack_action(ack, body, update["action"])
                    await asyncio.to_thread(self._call, "/acks", {"chat_id": update["chat_id"], "handled": handled,
                                                                  "acked": bool(acked)})
                    continue
                if update.get("event"):  # a reaction: a platform event, not a message
                    source = self.build_source(chat_id=update["chat_id"], user_id=update["user_id"])
                    await self._platform_event_handler({"platform": "fakechat", "event_type": update["event"],
                                                        "payload": {"text": update["text"]}}, source)
                    continue
                source = self.build_source(chat_id=update["chat_id"], chat_type=update["chat_type"],
                                           user_id=update["user_id"], user_name=update["user_id"].title())
                await self.handle_message(MessageEvent(text=update["text"], message_type=MessageType.TEXT,
                                                       source=source, message_id=str(update["id"])))

    async def disconnect(self):
        if self._task is not None:
            self._task.cancel()
        self._mark_disconnected()

    async def send(self, chat_id, content, reply_to=None, metadata=None):
        answer = await asyncio.to_thread(self._call, "/send", {"chat_id": chat_id, "text": content,
                                                               "reply_to": reply_to})
        return SendResult(success=True, message_id=answer["message_id"])

    async def get_chat_info(self, chat_id):
        return {"name": chat_id, "type": "dm"}

    @classmethod
    def supports_exec_approval_buttons(cls):
        return bool(os.getenv("FAKECHAT_BUTTONS"))

    async def send_exec_approval(self, chat_id, command, session_key, description=None, metadata=None,
                                 allow_permanent=True, allow_session=True, smart_denied=False):
        if not self.supports_exec_approval_buttons():
            return await super().send_exec_approval(chat_id, command, session_key, description, metadata)
        answer = await asyncio.to_thread(self._call, "/send", {
            "chat_id": chat_id, "text": f"Approve? {command} ({description})", "buttons": ["once", "deny"],
            "session_key": session_key})
        return SendResult(success=True, message_id=answer["message_id"])


def register(ctx):
    ctx.register_platform(
        name="fakechat", label="Fake Chat", adapter_factory=lambda config: FakeChatAdapter(config),
        check_fn=lambda: True, validate_config=lambda config: bool(config.extra.get("url")),
        required_env=["FAKECHAT_URL"], install_hint="pip install fakechat-sdk", emoji="💬",
        allowed_users_env="FAKECHAT_ALLOWED_USERS", allow_all_env="FAKECHAT_ALLOW_ALL_USERS",
        max_message_length=60, platform_hint="You are on Fake Chat.",
        env_enablement_fn=lambda: {"url": os.environ["FAKECHAT_URL"]} if os.getenv("FAKECHAT_URL") else None,
    )
'''


class HermesProcess:
    """A long-running `hermes` command in the background: its stderr lines, `wait_for(pattern)`, `stop()`."""

    command: tuple[str, ...] = ()

    def __init__(self, *args: str, env: dict[str, str] | None = None) -> None:
        self.lines: list[str] = []
        self._seen = threading.Condition()
        self.process = subprocess.Popen([str(HERMES), *self.command, *args], stdout=subprocess.DEVNULL,
                                        stderr=subprocess.PIPE, text=True, env=env)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stderr is not None
        with self.process.stderr:
            for line in self.process.stderr:
                with self._seen:
                    self.lines.append(line.rstrip("\n"))
                    self._seen.notify_all()
        with self._seen:
            self.lines.append("<exit>")
            self._seen.notify_all()

    def wait_for(self, pattern: str, timeout: float = 30, count: int = 1) -> str:
        """The `count`-th stderr line matching `pattern` (a regular expression), once it is written."""
        def found() -> list[str]:
            return [line for line in self.lines if re.search(pattern, line)]

        with self._seen:
            if not self._seen.wait_for(lambda: len(found()) >= count or "<exit>" in self.lines, timeout=timeout):
                raise AssertionError(f"no line matching {pattern!r} within {timeout}s: {self.lines}")
            if len(found()) < count:
                raise AssertionError(f"the gateway exited before a line matching {pattern!r}: {self.lines}")
            return found()[count - 1]

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 30) -> int:
        if self.process.poll() is None:
            self.process.send_signal(sig)
        try:
            return self.process.wait(timeout=timeout)
        finally:
            self.kill()

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        with self._seen:  # the reader closes stderr once it has read to the end
            self._seen.wait_for(lambda: "<exit>" in self.lines, timeout=10)

    def __enter__(self) -> HermesProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.kill()


class GatewayProcess(HermesProcess):
    """`hermes gateway run` in the background."""

    command = ("gateway", "run")


def post_json(url: str, body: Any, headers: dict[str, str] | None = None, timeout: float = 30) -> tuple[int, Any]:
    """POST `body` as JSON: (status, parsed JSON answer), also for an error status."""
    import urllib.error
    import urllib.request

    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"null")


def configure(home: Path, url: str, *, port: int = 0, plugins: tuple[str, ...] = (), extra: str = "") -> str:
    """The scripted model, the fake chat plugin and `plugins`, the webhook on `port`; its URL."""
    make_folder_plugin(home / "plugins", "fakechat", ADAPTER_PLUGIN, "name: fakechat\n")
    port = port or free_port()
    enabled = ", ".join(["fakechat", *plugins])
    llm_config(home, url, f"plugins:\n  enabled: [{enabled}]\nplatforms:\n  webhook:\n    enabled: true\n"
                          f"    port: {port}\n    secret: s3cret\ngateway:\n  reconnect_delay: 0.3\n"
                          f"  shutdown_grace: 5\n{extra}")
    return f"http://127.0.0.1:{port}/message"


# A plugin in the pattern of published guards: a tool that deletes, and a pre_tool_call hook that puts
# each call of it to a human (Hermes' `approve`), listening to the approval hooks.
GUARD = '''
import json, os

def register(ctx):
    def wipe(args, **kwargs):
        with open(os.path.join(os.environ["HERMES_HOME"], "wiped.txt"), "a") as out:
            out.write(args.get("path", "") + "\\n")
        return json.dumps({"wiped": args.get("path")})

    def guard(tool_name, args, **kwargs):
        if tool_name == "wipe":
            return {"action": "approve", "message": "it deletes files", "rule_key": "wipe"}
        return None

    ctx.register_tool("wipe", "guard", {"name": "wipe", "parameters": {"type": "object", "properties": {
        "path": {"type": "string"}}}}, wipe)
    ctx.register_hook("pre_tool_call", guard)
    for name in ("pre_approval_request", "post_approval_response"):
        def heard(name=name, **kwargs):
            with open(os.path.join(os.environ["HERMES_HOME"], "approvals.log"), "a") as out:
                out.write(json.dumps([name, kwargs.get("choice"), kwargs.get("pattern_key"), kwargs.get("surface")]) + "\\n")
        ctx.register_hook(name, heard)
'''
