"""Approvals and interactive actions through `hermes gateway run` (a subprocess) with the fake chat
adapter, written as published adapters are: a tool call a `pre_tool_call` hook puts to a human is
asked of the chat and waits for `/approve` / `/deny` or an approval button
(`tools.approval.resolve_gateway_approval`, as Hermes' adapters call it); a plugin's
`ctx.register_slack_action_handler` handler answers the actions an adapter reports."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hermes_core import PluginManager
from hermes_core.testing import Reply, tool_call
from tests.helpers import make_folder_plugin
from tests.helpers.chat import GUARD, FakeChat, GatewayProcess, configure

def wiped(home: Path) -> list[str]:
    path = home / "wiped.txt"
    return path.read_text().split() if path.exists() else []


def texts(chat: FakeChat, chat_id: str, count: int) -> list[str]:
    return [s["text"] for s in chat.wait_sent(count, chat_id) if s["path"] == "/send"]


def test_a_tool_call_put_to_a_human_waits_for_the_chats_answer(home: Path, llm_server, chat,
                                                               monkeypatch) -> None:
    monkeypatch.setenv("FAKECHAT_ALLOW_ALL_USERS", "true")
    make_folder_plugin(home / "plugins", "guard", GUARD, "name: guard\n")
    configure(home, llm_server.url, plugins=("guard",))
    llm_server.push(Reply("", tool_calls=[tool_call("wipe", {"path": "/tmp/a"})]), Reply("Wiped /tmp/a."),
                    Reply("", tool_calls=[tool_call("wipe", {"path": "/tmp/b"})]), Reply("Not wiped."),
                    Reply("", tool_calls=[tool_call("wipe", {"path": "/tmp/c"})]), Reply("Wiped /tmp/c."),
                    Reply("", tool_calls=[tool_call("wipe", {"path": "/tmp/d"})]), Reply("Wiped /tmp/d too."))
    with GatewayProcess() as gateway:
        gateway.wait_for(r"fakechat: connected")
        chat.say("c1", "alice", "wipe /tmp/a")
        card = texts(chat, "c1", 1)[0]
        assert card.startswith("⚠️ Approval needed: it deletes files\nwipe(") and "/approve session" in card
        assert wiped(home) == []  # the call waits for the chat
        chat.say("c1", "alice", "/approve")
        assert texts(chat, "c1", 3)[1:] == ["Approved this once.", "Wiped /tmp/a."]
        assert wiped(home) == ["/tmp/a"]

        chat.say("c1", "alice", "wipe /tmp/b")
        texts(chat, "c1", 4)
        chat.say("c1", "alice", "/deny too risky")
        assert texts(chat, "c1", 6)[4:] == ["Denied.", "Not wiped."]
        result = llm_server.requests[3].body["messages"][-1]["content"]
        assert result.startswith("Tool call 'wipe' was not approved (deny): it deletes files.")

        chat.say("c1", "alice", "wipe /tmp/c")
        texts(chat, "c1", 7)
        chat.say("c1", "alice", "/approve session")
        assert texts(chat, "c1", 9)[7:] == ["Approved for this conversation.", "Wiped /tmp/c."]
        chat.say("c1", "alice", "wipe /tmp/d")  # the rule is approved for this conversation: no card
        assert texts(chat, "c1", 10)[9:] == ["Wiped /tmp/d too."]
        chat.say("c2", "bob", "/approve")  # another conversation waits for nothing
        assert texts(chat, "c2", 1) == ["Nothing is waiting for an approval here."]
        gateway.stop()
    assert wiped(home) == ["/tmp/a", "/tmp/c", "/tmp/d"]
    heard = [json.loads(line) for line in (home / "approvals.log").read_text().splitlines()]
    assert heard[:2] == [["pre_approval_request", None, "plugin_rule:wipe", "gateway"],
                         ["post_approval_response", "once", "plugin_rule:wipe", "gateway"]]
    assert [h[1] for h in heard if h[0] == "post_approval_response"] == ["once", "deny", "session", "session"]


def test_an_approval_button_answers_through_hermes_resolve_gateway_approval(home: Path, llm_server, chat,
                                                                            monkeypatch) -> None:
    monkeypatch.setenv("FAKECHAT_ALLOW_ALL_USERS", "true")
    monkeypatch.setenv("FAKECHAT_BUTTONS", "1")
    make_folder_plugin(home / "plugins", "guard", GUARD, "name: guard\n")
    configure(home, llm_server.url, plugins=("guard",), extra="approvals:\n  timeout: 60\n")
    llm_server.push(Reply("", tool_calls=[tool_call("wipe", {"path": "/tmp/x"})]), Reply("Done."))
    with GatewayProcess() as gateway:
        gateway.wait_for(r"fakechat: connected")
        chat.say("c1", "alice", "wipe /tmp/x")
        card = chat.wait_sent(1, "c1")[0]
        assert card["buttons"] == ["once", "deny"] and card["text"].startswith("Approve? wipe(")
        chat.press("c1", "alice", button="once", session_key=card["session_key"])
        assert texts(chat, "c1", 2)[1:] == ["Done."]
        gateway.stop()
    assert wiped(home) == ["/tmp/x"]


def test_an_unanswered_approval_times_out_and_the_call_is_denied(home: Path, llm_server, chat,
                                                                  monkeypatch) -> None:
    monkeypatch.setenv("FAKECHAT_ALLOW_ALL_USERS", "true")
    make_folder_plugin(home / "plugins", "guard", GUARD, "name: guard\n")
    configure(home, llm_server.url, plugins=("guard",), extra="approvals:\n  timeout: 1\n")
    llm_server.push(Reply("", tool_calls=[tool_call("wipe", {"path": "/tmp/y"})]), Reply("It timed out."))
    with GatewayProcess() as gateway:
        gateway.wait_for(r"fakechat: connected")
        chat.say("c1", "alice", "wipe /tmp/y")
        assert texts(chat, "c1", 2)[1:] == ["It timed out."]
        gateway.stop()
    assert wiped(home) == []
    assert "(timeout)" in llm_server.requests[1].body["messages"][-1]["content"]


ACTIONS = '''
import os, re

def register(ctx):
    def log(line):
        with open(os.path.join(os.environ["HERMES_HOME"], "actions.log"), "a") as out:
            out.write(line + "\\n")

    async def on_approve(ack, body, action):
        await ack()
        log(f"approve {action['value']} by {body['user']['id']}")

    def on_any_sweep(ack, body, action):  # a plain function is called too
        log(f"sweep {action['action_id']}")

    async def broken(ack, body, action):
        raise RuntimeError("the handler broke")

    ctx.register_slack_action_handler("inbox_sweep_approve", on_approve)
    ctx.register_slack_action_handler(re.compile(r"^sweep_"), on_any_sweep)
    ctx.register_slack_action_handler({"action_id": "poll", "block_id": "b1"}, broken)
'''


def test_a_plugins_action_handlers_answer_the_actions_an_adapter_reports(home: Path, llm_server, chat,
                                                                         monkeypatch) -> None:
    monkeypatch.setenv("FAKECHAT_ALLOW_ALL_USERS", "true")
    make_folder_plugin(home / "plugins", "sweeper", ACTIONS, "name: sweeper\n")
    configure(home, llm_server.url, plugins=("sweeper",))
    with GatewayProcess() as gateway:
        gateway.wait_for(r"fakechat: connected")
        chat.press("c1", "alice", action={"action_id": "inbox_sweep_approve", "block_id": "b0", "value": "42"})
        chat.press("c1", "alice", action={"action_id": "sweep_all", "block_id": "b0", "value": ""})
        chat.press("c1", "alice", action={"action_id": "poll", "block_id": "b1", "value": ""})
        chat.press("c1", "alice", action={"action_id": "poll", "block_id": "b2", "value": ""})  # no handler
        acks = [s for s in chat.wait_sent(4, "c1") if s["path"] == "/acks"]
        gateway.wait_for(r"the handler broke")
        gateway.stop()
    assert [(a["handled"], a["acked"]) for a in acks] == [(True, True), (True, False), (True, True), (False, False)]
    assert (home / "actions.log").read_text().splitlines() == ["approve 42 by alice", "sweep sweep_all"]


@pytest.mark.parametrize(("action_id", "callback", "problem"), [
    ("", lambda *a: None, "an empty action_id"),
    ("  ", lambda *a: None, "an empty action_id"),
    (42, lambda *a: None, "an action_id of type int"),
    ({"action_id": 3}, lambda *a: None, "whose action_id is neither a string nor a pattern"),
    ("go", "not callable", "a non-callable callback"),
])
def test_an_action_handler_hermes_would_refuse_is_a_value_error(home: Path, action_id, callback, problem) -> None:
    manager = PluginManager(home=home, discover_plugins=False).load()
    caught = {}

    def register(ctx):
        with pytest.raises(ValueError) as raised:
            ctx.register_slack_action_handler(action_id, callback)
        caught["message"] = str(raised.value)

    assert manager.add_plugin(register, "sweeper").status == "ok"
    assert caught["message"].startswith("Plugin 'sweeper' tried to register a Slack action handler with ")
    assert problem in caught["message"] and manager.get_slack_action_handlers() == []


def test_an_approval_is_asked_in_the_chat_the_answer_goes_to_as_the_adapter_named_it(home: Path, llm_server, chat,
                                                                                       monkeypatch) -> None:
    monkeypatch.setenv("FAKECHAT_ALLOW_ALL_USERS", "true")
    make_folder_plugin(home / "plugins", "guard", GUARD, "name: guard\n")
    configure(home, llm_server.url, plugins=("guard",))
    llm_server.push(Reply("", tool_calls=[tool_call("wipe", {"path": "/tmp/a"})]), Reply("Wiped /tmp/a."))
    with GatewayProcess() as gateway:
        gateway.wait_for(r"fakechat: connected")
        chat.say("c\ud800", "alice", "wipe /tmp/a")  # the adapter's json.loads gives a lone surrogate
        card = texts(chat, "c\ud800", 1)[0]  # asked where the answer goes, not in a chat "c\ufffd"
        assert card.startswith("⚠️ Approval needed: it deletes files")
        chat.say("c\ud800", "alice", "/approve")
        assert texts(chat, "c\ud800", 3)[1:] == ["Approved this once.", "Wiped /tmp/a."]
        gateway.stop()
    assert wiped(home) == ["/tmp/a"]
    assert not [s for s in chat.sent if s["chat_id"] != "c\ud800"], chat.sent
