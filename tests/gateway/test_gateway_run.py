"""`hermes gateway run` as a subprocess against the scripted model: the built-in webhook
platform end to end, an adapter plugin written as published Hermes adapters are (served
`BasePlatformAdapter`, `ctx.register_platform`) driven by a fake chat service on loopback,
authorisation and pairing, conversations side by side, adapters that fail, and a restart that
resumes a conversation."""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from hermes_core.testing import Reply
from tests.helpers import free_port, hermes, llm_config, make_folder_plugin
from tests.helpers.chat import FakeChat, GatewayProcess, configure, post_json

SECRET = {"Authorization": "Bearer s3cret"}


def whole(chat: FakeChat, chat_id: str, answers: int = 1) -> list[str]:
    """The first `answers` answers sent to `chat_id`, each put back together from its numbered
    pieces (joined with a space where the split took one)."""
    texts: list[str] = []
    pieces: list[str] = []
    sent = 0
    while len(texts) < answers:
        sent += 1
        text = chat.wait_sent(sent, chat_id)[sent - 1]["text"]
        numbered = re.search(r" \((\d+)/(\d+)\)$", text)
        pieces.append(text[: numbered.start()] if numbered else text)
        if numbered is None or numbered.group(1) == numbered.group(2):
            texts.append(" ".join(pieces))
            pieces = []
    return texts


def test_the_webhook_answers_and_a_restart_resumes_the_conversation(home: Path, llm_server, chat) -> None:
    url = configure(home, llm_server.url)
    llm_server.reply("Nice to meet you, Ada.").reply("Your name is Ada.")
    with GatewayProcess() as gateway:
        gateway.wait_for(r"^hermes: gateway: webhook: connected$")
        gateway.wait_for(r"^hermes: gateway: fakechat: connected$")
        status, body = post_json(url, {"text": "my name is Ada", "chat_id": "ada"}, SECRET)
        assert (status, body["text"], body["chat_id"]) == (200, "Nice to meet you, Ada.", "ada")
        second = hermes("gateway", "run", check=1).stderr
        assert re.fullmatch(r"hermes: gateway: another gateway is running for .*home \(pid \d+\); stop it first\n",
                            second), second
        shown = hermes("gateway", "status").stdout
        assert re.search(r"gateway: running \(pid \d+", shown), shown
        assert re.search(r"webhook +webhook +connected", shown) and re.search(r"fakechat +fakechat +connected", shown)
        assert gateway.stop() == 0
        assert gateway.lines[-2:] == ["hermes: gateway: stopped", "<exit>"]
    assert "gateway: not running" in hermes("gateway", "status").stdout
    status_file = home / "gateway" / "status.json"
    for damaged in (b"[" * 100_000 + b"]" * 100_000, b'{"state": "running", "pid": "\xff"}'):
        status_file.write_bytes(damaged)  # nested past the parser; not UTF-8: no gateway runs, said so
        shown = hermes("gateway", "status")
        assert "gateway: not running" in shown.stdout and "Traceback" not in shown.stderr
    with GatewayProcess() as gateway:
        gateway.wait_for(r"webhook: connected")
        status, body = post_json(url, {"text": "what is my name?", "chat_id": "ada"}, SECRET)
        assert (status, body["text"]) == (200, "Your name is Ada.")
        gateway.stop()
    resumed = [m.get("content") for m in llm_server.requests[1].messages]
    assert resumed[-3:] == ["my name is Ada", "Nice to meet you, Ada.", "what is my name?"]
    sessions = json.loads(hermes("sessions", "list", "--json").stdout)
    assert len(sessions) == 1 and sessions[0]["messages"] == 4


def test_the_webhook_checks_its_secret_and_posts_to_a_callback(home: Path, llm_server, chat) -> None:
    url = configure(home, llm_server.url)
    llm_server.reply("Called back.")
    with GatewayProcess() as gateway:
        gateway.wait_for(r"webhook: connected")
        assert post_json(url, {"text": "hi"}, {"Authorization": "Bearer wrong"})[0] == 401
        assert post_json(url, {"text": "hi"})[0] == 401
        assert post_json(url, {"text": "  "}, SECRET)[0] == 400
        status, body = post_json(url, {"text": "hi", "callback_url": "http://example.com/cb"}, SECRET)
        assert status == 400 and "loopback" in body["error"]
        status, body = post_json(url, {"text": "call me back", "chat_id": "cb", "callback_url": chat.url + "/cb"},
                                 {"X-Webhook-Secret": "s3cret"})
        assert status == 202 and body["accepted"] is True
        (sent,) = chat.wait_sent(1, "cb")
        assert sent["path"] == "/cb" and sent["text"] == "Called back." and sent["in_reply_to"] == body["message_id"]
        expected = hmac.new(b"s3cret", sent["raw"].encode(), hashlib.sha256).hexdigest()
        assert sent["signature"] == f"sha256={expected}"
        assert len(llm_server.requests) == 1  # the refused requests never reached the model
        gateway.stop()


def test_an_adapter_plugin_answers_split_to_its_platform_limit(home: Path, llm_server, chat, monkeypatch) -> None:
    monkeypatch.setenv("FAKECHAT_ALLOW_ALL_USERS", "true")
    configure(home, llm_server.url)
    answer = " ".join(f"word{n}" for n in range(30))  # ~200 characters; the platform takes 60
    llm_server.reply(answer)
    with GatewayProcess() as gateway:
        gateway.wait_for(r"fakechat: connected")
        first = chat.say("c1", "alice", "tell me a long story")
        sent = chat.wait_sent(1, "c1")
        gateway.stop()
    sent = chat.sent
    assert len(sent) > 1 and all(len(s["text"]) <= 60 for s in sent)
    assert [s["reply_to"] for s in sent] == [first] + [None] * (len(sent) - 1)
    assert " ".join(re.sub(r" \(\d+/\d+\)$", "", s["text"]) for s in sent).split() == answer.split()
    request = llm_server.requests[0].body
    assert request["messages"][-1] == {"role": "user", "content": "tell me a long story"}


def test_strangers_are_refused_paired_or_let_in(home: Path, llm_server, chat, monkeypatch) -> None:
    monkeypatch.setenv("FAKECHAT_ALLOWED_USERS", "alice")
    configure(home, llm_server.url)
    llm_server.reply("Hello Alice.").reply("Hello Bob.")
    with GatewayProcess() as gateway:
        gateway.wait_for(r"fakechat: connected")
        chat.say("alice-dm", "alice", "hi")
        assert chat.wait_sent(1, "alice-dm")[0]["text"] == "Hello Alice."
        chat.say("bob-dm", "bob", "hi")
        (pairing,) = whole(chat, "bob-dm")
        code = re.search(r"pairing code: `([A-Z2-9]{8})`", pairing).group(1)
        assert f"hermes pairing approve fakechat {code}" in pairing
        chat.say("room", "bob", "hi all", chat_type="group")
        gateway.wait_for(r"fakechat: ignored a message from bob \(not allowed\)")
        assert len(llm_server.requests) == 1  # neither of Bob's messages reached the model
        assert hermes("pairing", "approve", "fakechat", "WRONGCOD", check=1).stderr.startswith(
            "hermes: error: no pending pairing code 'WRONGCOD' on fakechat")
        assert hermes("pairing", "approve", "fakechat", code.lower()).stdout.strip() == "approved bob (Bob) on fakechat"
        chat.say("bob-dm", "bob", "hi again")
        assert whole(chat, "bob-dm", 2)[1] == "Hello Bob."
        gateway.stop()
    stored = (home / "platforms" / "pairing" / "fakechat-approved.json").read_text()
    assert "bob" in stored and code not in (home / "platforms" / "pairing" / "fakechat-pending.json").read_text()
    assert json.loads(hermes("pairing", "list", "--json").stdout)["approved"] == [
        {"platform": "fakechat", "user_id": "bob", "user_name": "Bob"}]
    (home / "platforms" / "pairing" / "fakechat-pending.json").write_bytes(b"[" * 100_000 + b"]" * 100_000)
    assert json.loads(hermes("pairing", "list", "--json").stdout)["pending"] == []  # unreadable: nothing waits


SLOW_HOOK = """
import time

def register(ctx):
    def slow(user_message="", **kwargs):
        if "slow" in str(user_message):
            time.sleep(3)
    ctx.register_hook("pre_llm_call", slow)
"""


def test_conversations_run_side_by_side_each_in_order(home: Path, llm_server, chat, monkeypatch) -> None:
    monkeypatch.setenv("FAKECHAT_ALLOW_ALL_USERS", "true")
    make_folder_plugin(home / "plugins", "slowpoke", SLOW_HOOK, "name: slowpoke\n")
    configure(home, llm_server.url, plugins=("slowpoke",))
    llm_server.always("ok")
    with GatewayProcess() as gateway:
        gateway.wait_for(r"fakechat: connected")
        first = chat.say("a", "alice", "a slow question")
        second = chat.say("a", "alice", "and a quick one")
        other = chat.say("b", "bob", "a quick question")
        chat.wait_sent(2, "a")
        gateway.stop()
    order = [(s["chat_id"], s["reply_to"]) for s in sorted(chat.sent, key=lambda s: s["at"])]
    assert order == [("b", other), ("a", first), ("a", second)]


def test_a_failing_adapter_is_retried_while_the_others_run(home: Path, llm_server, chat, monkeypatch) -> None:
    monkeypatch.setenv("FAKECHAT_ALLOW_ALL_USERS", "true")
    (home / "fakechat-refusals").write_text("2")
    url = configure(home, llm_server.url)
    llm_server.reply("From the webhook.").reply("Back again.").reply("Sent twice.")
    with GatewayProcess() as gateway:
        gateway.wait_for(r"webhook: connected")
        assert gateway.wait_for(r"fakechat: connecting failed") == (
            "hermes: gateway: fakechat: connecting failed: ConnectionError: the chat service refused the login; "
            "connecting again in 0.3s")
        assert post_json(url, {"text": "still there?"}, SECRET)[1]["text"] == "From the webhook."
        gateway.wait_for(r"fakechat: connecting failed: .*; connecting again in 0.6s")
        gateway.wait_for(r"^hermes: gateway: fakechat: connected \(attempt 3\)$")
        chat.down(True)  # the receive loop fails: the adapter reports it, the gateway reconnects
        gateway.wait_for(r"fakechat: connection lost: polling failed: HTTP Error 503.*; connecting again in 0.3s")
        chat.down(False)
        gateway.wait_for(r"fakechat: connected again$")
        chat.say("c", "carol", "are you back?")
        assert chat.wait_sent(1, "c")[0]["text"] == "Back again."
        chat.fail_sends(1)  # the first send of the next answer fails: retried
        chat.say("c", "carol", "again?")
        assert chat.wait_sent(2, "c")[1]["text"] == "Sent twice."
        gateway.wait_for(r"fakechat: sending to c failed .*HTTP Error 500.*; retrying")
        assert gateway.stop() == 0
    shown = json.loads(hermes("gateway", "status", "--json").stdout)
    assert shown["running"] is False
    assert {p["platform"]: p["state"] for p in shown["platforms"]} == {"api_server": "disabled", "fakechat": "ready",
                                                                       "webhook": "ready"}


def test_sigint_lets_a_running_turn_finish(home: Path, llm_server, chat) -> None:
    url = configure(home, llm_server.url)
    llm_server.push(Reply("Worth the wait.", delay=1.5))
    with GatewayProcess() as gateway:
        gateway.wait_for(r"webhook: connected")
        import threading

        answers: list[tuple[int, dict]] = []
        asking = threading.Thread(target=lambda: answers.append(post_json(url, {"text": "take your time"}, SECRET)))
        asking.start()
        while not llm_server.requests:
            pass
        gateway.process.send_signal(signal.SIGINT)
        gateway.wait_for(r"stopping: 1 running turn\(s\) may take up to 5s to finish")
        asking.join(30)
        assert answers == [(200, {"text": "Worth the wait.", "chat_id": "default", "message_id": answers[0][1]["message_id"]})]
        assert gateway.stop() == 0
    (session,) = json.loads(hermes("sessions", "list", "--json").stdout)
    assert session["messages"] == 2


def test_the_webhook_refuses_bad_framing_follows_no_redirect_and_takes_a_burst(home: Path, llm_server, chat) -> None:
    """Hostile senders: a callback that redirects elsewhere is not followed (the signed answer
    goes nowhere else); a malformed or negative Content-Length is a 400 at once; a sender that stops
    mid-body loses its connection after the read timeout; 60 senders at once all get an answer."""
    import http.server
    import socket
    import threading

    stolen: list[str] = []

    class Redirecting(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_POST(self) -> None:
            if self.path == "/steal":
                stolen.append(self.headers.get("X-Hermes-Signature", ""))
            self.send_response(302 if self.path == "/cb" else 200)
            self.send_header("Location", f"http://127.0.0.1:{trap.server_address[1]}/steal")
            self.send_header("Content-Length", "0")
            self.end_headers()

        do_GET = do_POST  # urllib turns a redirected POST into a GET

    trap = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Redirecting)
    threading.Thread(target=trap.serve_forever, daemon=True).start()
    url = configure(home, llm_server.url)
    config = home / "config.yaml"  # a read timeout of a second, under platforms.webhook
    config.write_text(config.read_text().replace("    secret: s3cret\n", "    secret: s3cret\n    read_timeout: 1\n"))
    port = int(url.split(":")[2].split("/")[0])
    llm_server.reply("Signed answer.")
    try:
        with GatewayProcess() as gateway:
            gateway.wait_for(r"webhook: connected")
            status, _ = post_json(url, {"text": "hi", "chat_id": "r", "callback_url":
                                        f"http://127.0.0.1:{trap.server_address[1]}/cb"}, SECRET)
            assert status == 202
            gateway.wait_for(r"302")  # the failed send is reported, with the redirect it refused
            assert stolen == []
            for length in (b"abc", b"-5"):
                with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
                    sock.sendall(b"POST /message HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Type: application/json\r\n"
                                 b"Content-Length: %b\r\n\r\n" % (port, length))
                    assert sock.recv(200).startswith(b"HTTP/1.1 400 ")
            with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
                sock.sendall(b"POST /message HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Type: application/json\r\n"
                             b"Content-Length: 100\r\n\r\n{\"te" % port)
                assert sock.recv(200) == b""  # closed after the read timeout, no thread pinned for good
            answers: list[int] = []
            burst = [threading.Thread(target=lambda: answers.append(post_json(url, {"text": "x"}, {})[0]))
                     for _ in range(60)]
            for thread in burst:
                thread.start()
            for thread in burst:
                thread.join(60)
            assert answers == [401] * 60  # every sender got its answer, none a reset
            assert "Traceback" not in "\n".join(gateway.lines)
            gateway.stop()
    finally:
        trap.shutdown()
        trap.server_close()


def test_a_lone_surrogate_in_a_webhook_message_is_read_as_a_replacement_character(home: Path, llm_server,
                                                                                   chat) -> None:
    url = configure(home, llm_server.url)
    llm_server.reply("Read it.")
    with GatewayProcess() as gateway:
        gateway.wait_for(r"webhook: connected")
        status, answer = post_json(url, {"text": "half \ud800 a pair", "chat_id": "c\udc80", "user": "u\ud800"},
                                   SECRET)
        gateway.stop()
    assert (status, answer["text"], answer["chat_id"]) == (200, "Read it.", "c\ufffd"), answer
    assert "half \ufffd a pair" in json.dumps(llm_server.requests[0].messages, ensure_ascii=False)
    assert not [line for line in gateway.lines if "UnicodeEncodeError" in line or "Traceback" in line]


def test_a_lone_surrogate_an_adapter_hands_over_is_read_as_a_replacement_character(home: Path, llm_server, chat,
                                                                                    monkeypatch) -> None:
    monkeypatch.setenv("FAKECHAT_ALLOW_ALL_USERS", "true")
    configure(home, llm_server.url)
    llm_server.reply("Read it.")
    with GatewayProcess() as gateway:
        gateway.wait_for(r"fakechat: connected")
        chat.say("c\ud800", "u\udc80", "half \ud800 a pair")  # the adapter's json.loads gives lone surrogates
        (sent,) = chat.wait_sent(1, "c\ud800")  # answered in the chat the adapter named, as it named it
        gateway.stop()
    assert sent["text"] == "Read it."
    assert "half \ufffd a pair" in json.dumps(llm_server.requests[0].messages, ensure_ascii=False)
    assert not [line for line in gateway.lines if "UnicodeEncodeError" in line or "Traceback" in line], gateway.lines
    sessions = json.loads(hermes("sessions", "list", "--json").stdout)
    assert len(sessions) == 1 and sessions[0]["messages"] == 2


TAGGED = '''
import dataclasses


@dataclasses.dataclass(kw_only=True)
class TaggedEvent(MessageEvent):  # an InitVar without a default: dataclasses.replace refuses to copy it
    tag: dataclasses.InitVar[str]

    def __post_init__(self, tag):
        self.tagged = tag


class FakeChatAdapter(BasePlatformAdapter):'''


def test_an_adapters_own_event_class_that_cannot_be_replaced_is_still_answered(home: Path, llm_server, chat,
                                                                               monkeypatch) -> None:
    from tests.helpers.chat import ADAPTER_PLUGIN

    monkeypatch.setenv("FAKECHAT_ALLOW_ALL_USERS", "true")
    configure(home, llm_server.url)
    tagged = ADAPTER_PLUGIN.replace("class FakeChatAdapter(BasePlatformAdapter):", TAGGED).replace(
        "self.handle_message(MessageEvent(", 'self.handle_message(TaggedEvent(tag="t", ')
    assert "TaggedEvent(tag=" in tagged
    make_folder_plugin(home / "plugins", "fakechat", tagged, "name: fakechat\n")
    llm_server.reply("Read it.")
    with GatewayProcess() as gateway:
        gateway.wait_for(r"fakechat: connected")
        chat.say("c1", "u1", "half \ud800 a pair")
        (sent,) = chat.wait_sent(1, "c1")
        gateway.stop()
    assert sent["text"] == "Read it."
    assert "half \ufffd a pair" in json.dumps(llm_server.requests[0].messages, ensure_ascii=False)
    assert not [line for line in gateway.lines if "Traceback" in line or "InitVar" in line], gateway.lines
