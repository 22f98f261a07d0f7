"""`hermes gateway run` tells the plugins which conversation a session is, as Hermes' gateway does:
the memory provider's `initialize` gets the chat's session key as `gateway_session_key`
(`agent:main:<platform>:<chat type>:<chat id>[:<user>]`), the same each time that chat comes back."""

from __future__ import annotations

from pathlib import Path

from tests.helpers.chat import GatewayProcess, configure
from tests.helpers.keyed_memory import SELECT, initialized, install


def _fakechat_with_keyed_memory(home: Path, llm_server, chat, monkeypatch) -> None:
    """A home whose gateway talks to the fake chat `chat` (everyone let in) with the keyed memory plugin."""
    monkeypatch.setenv("FAKECHAT_ALLOW_ALL_USERS", "true")
    install(home)
    configure(home, llm_server.url, extra=SELECT)
    config = home / "config.yaml"
    config.write_text(config.read_text().replace(
        "platforms:\n", f"platforms:\n  fakechat:\n    enabled: true\n    url: {chat.url}\n"))


def test_the_memory_provider_gets_the_chats_session_key(home: Path, llm_server, chat, monkeypatch) -> None:
    _fakechat_with_keyed_memory(home, llm_server, chat, monkeypatch)
    with GatewayProcess() as gateway:
        gateway.wait_for(r"fakechat: connected")
        llm_server.reply("Hello Alice.")
        chat.say("alice-dm", "alice", "Hi")
        assert chat.wait_sent(1, "alice-dm")[0]["text"] == "Hello Alice."
        llm_server.reply("Hello room.")
        chat.say("room", "bob", "Hi all", chat_type="group")
        assert chat.wait_sent(1, "room")[0]["text"] == "Hello room."
        gateway.stop()
    keys = [seen.get("gateway_session_key") for seen in initialized(home)]
    assert keys == ["agent:main:fakechat:dm:alice-dm", "agent:main:fakechat:group:room:bob"]


def test_the_memory_provider_gets_the_chat_and_who_wrote_as_hermes_hands_them(home: Path, llm_server, chat,
                                                                            monkeypatch) -> None:
    _fakechat_with_keyed_memory(home, llm_server, chat, monkeypatch)
    with GatewayProcess() as gateway:
        gateway.wait_for(r"fakechat: connected")
        llm_server.reply("Hello room.")
        chat.say("room", "bob", "Hi all", chat_type="group")
        assert chat.wait_sent(1, "room")[0]["text"] == "Hello room."
        gateway.stop()
    [seen] = initialized(home)
    assert {key: seen.get(key) for key in ("platform", "user_id", "user_name", "chat_id", "chat_type", "agent_context",
                                           "agent_identity", "agent_workspace", "hermes_home")} == {
        "platform": "fakechat", "user_id": "bob", "user_name": "Bob", "chat_id": "room", "chat_type": "group",
        "agent_context": "primary", "agent_identity": "default", "agent_workspace": "hermes", "hermes_home": str(home)}
    assert "thread_id" not in seen and "chat_name" not in seen  # the adapter said none: none handed on
