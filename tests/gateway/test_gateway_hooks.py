"""What plugins do around the gateway, through `hermes gateway run` and the CLI: the gateway
hooks at Hermes' moments, `ctx.inject_message` behind `allow_gateway_injection`, and what
`hermes gateway status` and doctor say of platforms that cannot start."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import hermes, hermes_json, llm_config, make_folder_plugin
from tests.helpers.chat import ADAPTER_PLUGIN, FakeChat, GatewayProcess

@pytest.fixture
def chat(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeChat]:
    service = FakeChat()
    monkeypatch.setenv("FAKECHAT_URL", service.url)
    monkeypatch.setenv("FAKECHAT_ALLOW_ALL_USERS", "yes")
    yield service
    service.close()


def configure(home: Path, url: str, plugins: tuple[str, ...], extra: str = "") -> None:
    make_folder_plugin(home / "plugins", "fakechat", ADAPTER_PLUGIN, "name: fakechat\n")
    llm_config(home, url, f"plugins:\n  enabled: [{', '.join(['fakechat', *plugins])}]\n{extra}")


DISPATCH = """
import json, os

def register(ctx):
    def dispatch(event, gateway, session_store):
        if event.text.startswith("spam"):
            return {"action": "skip", "reason": "spam"}
        if event.text.startswith("shout "):
            return {"action": "rewrite", "text": event.text[len("shout "):].upper()}
        return None

    def platform_event(platform, event_type, payload):
        with open(os.path.join(os.environ["HERMES_HOME"], "events.jsonl"), "a") as out:
            out.write(json.dumps([platform, event_type, payload]) + "\\n")

    def who(sender_id="", platform="", **kwargs):
        with open(os.path.join(os.environ["HERMES_HOME"], "senders.txt"), "a") as out:
            out.write(f"{platform}:{sender_id}\\n")

    ctx.register_hook("pre_gateway_dispatch", dispatch)
    ctx.register_hook("gateway_platform_event", platform_event)
    ctx.register_hook("pre_llm_call", who)
"""


def test_pre_gateway_dispatch_skips_or_rewrites_and_platform_events_reach_plugins(home: Path, llm_server,
                                                                                  chat) -> None:
    make_folder_plugin(home / "plugins", "moderator", DISPATCH, "name: moderator\n")
    configure(home, llm_server.url, ("moderator",))
    llm_server.reply("Heard you.")
    with GatewayProcess() as gateway:
        gateway.wait_for(r"fakechat: connected")
        chat.say("c", "dana", "spam spam spam")
        chat.say("c", "dana", "shout hello there")
        assert chat.wait_sent(1, "c")[0]["text"] == "Heard you."
        chat.say("c", "dana", "👍", event="reaction")
        chat.say("c", "dana", "after the reaction")
        llm_server.reply("Still here.")
        chat.wait_sent(2, "c")
        chat.say("c", "dana", "/new")
        assert chat.wait_sent(3, "c")[2]["text"] == "conversation cleared"
        gateway.stop()
    assert [r.messages[-1]["content"] for r in llm_server.requests] == ["HELLO THERE", "after the reaction"]
    assert (home / "senders.txt").read_text().splitlines() == ["fakechat:dana", "fakechat:dana"]
    events = [json.loads(line) for line in (home / "events.jsonl").read_text().splitlines()]
    assert events == [["fakechat", "reaction", {"text": "👍"}]]
    doctor = hermes_json("plugins", "doctor")
    assert doctor["warnings"] == []  # the gateway's hooks fire in this host: none is "never fired"


REMINDER = """
from gateway.session_context import get_session_env

def register(ctx):
    def remind(raw):
        key = get_session_env("HERMES_SESSION_KEY")
        accepted = ctx.inject_message("reminder: " + raw, session_key=key)
        return f"{'accepted' if accepted else 'refused'} for {key}"
    ctx.register_command("remind", remind, description="Remind me later")
"""


@pytest.mark.parametrize("granted", [True, False])
def test_inject_message_starts_a_turn_only_with_the_operators_grant(home: Path, llm_server, chat,
                                                                   granted: bool) -> None:
    make_folder_plugin(home / "plugins", "reminder", REMINDER, "name: reminder\n")
    grant = "  entries:\n    reminder:\n      allow_gateway_injection: true\n" if granted else ""
    configure(home, llm_server.url, ("reminder",), grant)  # `entries:` goes on under `plugins:`
    llm_server.reply("Reminded.")
    with GatewayProcess() as gateway:
        gateway.wait_for(r"fakechat: connected")
        chat.say("r", "erin", "/remind stretch")
        first = chat.wait_sent(1, "r")[0]["text"]
        if granted:
            assert first == "accepted for agent:main:fakechat:dm:r"
            assert chat.wait_sent(2, "r")[1]["text"] == "Reminded."
            assert llm_server.requests[0].messages[-1]["content"] == "reminder: stretch"
        else:
            assert first == "refused for agent:main:fakechat:dm:r"
            gateway.wait_for(r"ctx.inject_message of plugin 'reminder'.*allow_gateway_injection: true")
            assert llm_server.requests == []
        gateway.stop()


def test_status_and_doctor_say_why_a_platform_cannot_start(home: Path, llm_server, chat, monkeypatch) -> None:
    monkeypatch.delenv("FAKECHAT_URL")
    monkeypatch.delenv("WEBHOOK_SECRET", raising=False)
    configure(home, llm_server.url, (), "platforms:\n  webhook:\n    enabled: true\n")
    rows = {r["platform"]: r for r in hermes_json("gateway", "status")["platforms"]}
    assert rows["webhook"]["state"] == "not ready" and rows["fakechat"]["state"] == "disabled"
    assert rows["webhook"]["detail"] == "its configuration is incomplete (missing WEBHOOK_SECRET)"
    assert rows["fakechat"]["detail"] == "not enabled (platforms.fakechat.enabled: true in config.yaml)"
    doctor = hermes("plugins", "doctor")
    assert ("warning: platform 'webhook' of plugin 'webhook' is enabled but cannot start: its configuration is "
            "incomplete (missing WEBHOOK_SECRET)") in doctor.stdout
    assert "platforms: webhook (cannot start)" in doctor.stdout
    result = hermes("gateway", "run", check=1)
    assert result.stderr.splitlines() == [
        "hermes: gateway: webhook: not ready: its configuration is incomplete (missing WEBHOOK_SECRET)",
        "hermes: gateway: no messaging platform is enabled and ready (platforms: api_server, fakechat, webhook); "
        "see `hermes gateway status`",
    ]
    monkeypatch.setenv("WEBHOOK_SECRET", "s3cret")
    rows = {r["platform"]: r for r in hermes_json("gateway", "status")["platforms"]}
    assert rows["webhook"]["state"] == "ready"


def test_the_gateway_needs_a_model(home: Path, chat) -> None:
    make_folder_plugin(home / "plugins", "fakechat", ADAPTER_PLUGIN, "name: fakechat\n")
    result = hermes("gateway", "run", check=1)
    assert result.stderr.startswith("hermes: error: no model is configured")
