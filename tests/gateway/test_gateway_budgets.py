"""`hermes gateway run` with `budgets.caller`: each sender's turns count against that sender's own
budget (`caller:<platform>:<sender>`), so one sender past it is told so in one line while another
goes on."""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests.helpers import hermes
from tests.helpers.chat import GatewayProcess, configure


def test_a_senders_budget_holds_that_sender_alone(home: Path, llm_server, chat, monkeypatch) -> None:
    monkeypatch.setenv("FAKECHAT_ALLOW_ALL_USERS", "true")
    configure(home, llm_server.url)
    config = home / "config.yaml"
    config.write_text(config.read_text().replace(
        "platforms:\n", f"platforms:\n  fakechat:\n    enabled: true\n    url: {chat.url}\n")
        + "budgets:\n  caller: {requests_per_minute: 1, on_limit: refuse}\n")
    llm_server.always("Hello.")
    with GatewayProcess() as gateway:
        gateway.wait_for(r"fakechat: connected")
        chat.say("alice-dm", "alice", "Hi")
        assert chat.wait_sent(1, "alice-dm")[0]["text"] == "Hello."
        chat.say("alice-dm", "alice", "Hi again")
        first = chat.wait_sent(2, "alice-dm")[1]["text"]  # the refusal, in pieces "... (1/N)" on this platform
        pieces = int(first.rsplit("/", 1)[1].rstrip(")")) if first.endswith(")") and "/" in first else 1
        refused = " ".join(" ".join(re.sub(r"\s*\(\d+/\d+\)$", "", piece["text"]).split())
                           for piece in chat.wait_sent(1 + pieces, "alice-dm")[1:])
        chat.say("bob-dm", "bob", "Hi")
        assert chat.wait_sent(1, "bob-dm")[0]["text"] == "Hello."
        gateway.stop()
    assert "caller 'fakechat:alice' is at their LLM budget" in refused and "budgets.caller" in refused, refused
    assert len(llm_server.requests) == 2
    rows = {row["plugin"]: row for row in json.loads(hermes("plugins", "usage", "--json").stdout)}
    assert rows["caller:fakechat:alice"]["refusals"] == 1 and rows["caller:fakechat:bob"]["requests"] == 1
