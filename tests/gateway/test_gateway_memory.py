"""`hermes gateway run` with the built-in memory: each sender's memories are their own, in their
direct messages and in a group conversation several people share (each message's memory is its
sender's)."""

from __future__ import annotations

import json
from pathlib import Path

from hermes_core.testing import tool_call
from tests.helpers.chat import GatewayProcess, configure

LOCKER = "Alice's locker code is 4417"


def test_a_senders_memories_reach_only_their_own_turns(home: Path, llm_server, chat, monkeypatch) -> None:
    monkeypatch.setenv("FAKECHAT_ALLOW_ALL_USERS", "true")
    configure(home, llm_server.url)
    config = home / "config.yaml"
    config.write_text(config.read_text().replace(
        "platforms:\n", f"platforms:\n  fakechat:\n    enabled: true\n    url: {chat.url}\n"
        "    group_sessions_per_user: false\n"))
    llm_server.reply("", tool_calls=[tool_call("memory_save", {"content": LOCKER})]).reply("Saved.")
    with GatewayProcess() as gateway:
        gateway.wait_for(r"fakechat: connected")
        chat.say("alice-dm", "alice", "Save my locker code: 4417.")
        assert chat.wait_sent(1, "alice-dm")[0]["text"] == "Saved."

        llm_server.reply("No idea.")
        chat.say("bob-dm", "bob", "What is my locker code?")
        assert chat.wait_sent(1, "bob-dm")[0]["text"] == "No idea."
        assert "4417" not in json.dumps(llm_server.requests[-1].messages)

        said = [("alice", "What is my locker code?"), ("bob", "And my locker code?"), ("alice", "My locker code again?")]
        for count, (who, text) in enumerate(said, 1):
            llm_server.reply(f"answer {count}")
            chat.say("room", who, text, chat_type="group")
            assert chat.wait_sent(count, "room")[-1]["text"] == f"answer {count}"
            sent = llm_server.requests[-1].messages
            asked = [m["content"].split("\n\n")[0] for m in sent if m["role"] == "user"]
            assert asked == [t for _, t in said[:count]]  # one conversation, shared
            if who == "alice":
                assert LOCKER in sent[0]["content"] and LOCKER in sent[-1]["content"]
            else:
                assert "4417" not in json.dumps(sent)
        gateway.stop()
