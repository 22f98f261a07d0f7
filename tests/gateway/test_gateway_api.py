"""Hermes' gateway names as plugins use them, through the public API: registering a platform,
`Platform`, session keys, splitting an answer, the session variables, pairing codes, and
whether a platform is ready."""

from __future__ import annotations

import importlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hermes_core import Config, PluginManager
from hermes_core.gateway.config import Platform, PlatformConfig, platform_config
from hermes_core.gateway.pairing import PairingStore
from hermes_core.gateway.platforms.base import BasePlatformAdapter, fence_after
from hermes_core.gateway.readiness import readiness
from hermes_core.gateway.session import SessionSource, build_session_key, neutralize_untrusted_inline_text
from hermes_core.gateway.session_context import get_session_env, reset_session_vars, set_session_vars
from tests.helpers import make_folder_plugin, write_config

ADAPTER = """
from gateway.config import Platform, PlatformConfig
from gateway.platforms.base import BasePlatformAdapter, MessageEvent, MessageType, SendResult
from gateway.session import SessionSource, build_session_key
from gateway.session_context import get_session_env

class IrcAdapter(BasePlatformAdapter):
    async def connect(self, *, is_reconnect=False):
        return True
    async def disconnect(self):
        pass
    async def send(self, chat_id, content, reply_to=None, metadata=None):
        return SendResult(success=True)
    async def get_chat_info(self, chat_id):
        return {}

def register(ctx):
    ctx.register_platform(name="irc", label="IRC", adapter_factory=lambda cfg: IrcAdapter(cfg, Platform("irc")),
                          check_fn=lambda: True, required_env=["IRC_SERVER"], allowed_users_env="IRC_ALLOWED_USERS",
                          emoji="💬", max_message_length=450, {extra})
"""


def load(home: Path, extra: str = "") -> PluginManager:
    make_folder_plugin(home / "plugins", "irc", ADAPTER.replace("{extra}", extra), "name: irc\n")
    write_config(home, "plugins:\n  enabled: [irc]\n")
    return PluginManager().load()


def test_a_platform_registers_with_hermes_fields_and_its_names_are_served(home: Path) -> None:
    manager = load(home, "pii_safe=True")
    record = manager.record("irc")
    assert record.status == "ok", record.failure
    assert record.registered["platforms"] == ["irc"]
    assert set(record.hermes_names) >= {"gateway.config", "gateway.platforms.base", "gateway.session",
                                        "gateway.session_context"}
    entry = manager.platforms.get("irc")
    assert (entry.label, entry.plugin_id, entry.required_env, entry.max_message_length, entry.pii_safe) == (
        "IRC", "irc", ["IRC_SERVER"], 450, True)
    adapter = entry.adapter_factory(PlatformConfig(enabled=True))
    assert isinstance(adapter, BasePlatformAdapter) and adapter.platform is Platform("irc") is Platform("IRC")
    manager.remove_plugin("irc")
    assert manager.platforms.get("irc") is None  # unloading takes the platform away


def test_an_argument_hermes_does_not_know_is_a_type_error_naming_it(home: Path) -> None:
    record = load(home, "colour='blue'").record("irc")
    assert record.status == "failed"
    assert str(record.failure).startswith("TypeError: ctx.register_platform('irc') of plugin 'irc': unknown argument "
                                          "colour (PlatformEntry takes adapter_factory, allow_all_env,")


def test_plugins_that_probe_for_newer_keywords_fall_back_as_under_hermes(home: Path) -> None:
    make_folder_plugin(home / "plugins", "probe", """
def register(ctx):
    try:
        ctx.register_platform("probe", "Probe", object, lambda: True, future_field=1)
    except TypeError:
        ctx.register_platform("probe", "Probe", object, lambda: True)
""", "name: probe\n")
    write_config(home, "plugins:\n  enabled: [probe]\n")
    manager = PluginManager().load()
    assert manager.record("probe").status == "ok" and manager.platforms.names() == ["api_server", "probe", "webhook"]


def test_hermes_session_keys() -> None:
    def key(**fields) -> str:
        return build_session_key(SessionSource(platform=Platform("irc"), **fields))

    assert key(chat_id="alice", user_id="alice") == "agent:main:irc:dm:alice"
    assert key(chat_id="#chan", chat_type="group", user_id="alice") == "agent:main:irc:group:#chan:alice"
    assert build_session_key(SessionSource(platform=Platform("irc"), chat_id="#chan", chat_type="group",
                                           user_id="alice"), group_sessions_per_user=False) == \
        "agent:main:irc:group:#chan"
    assert key(chat_id="c", chat_type="group", thread_id="t9", user_id="bob") == "agent:main:irc:group:c:t9"
    slack = SessionSource(platform=Platform.SLACK, chat_id="C1", chat_type="channel", user_id="U1", scope_id="T1")
    assert build_session_key(slack, profile="work") == "agent:work:slack:channel:T1:C1:U1"


@given(text=st.text(alphabet=st.sampled_from("ab \n`py"), max_size=600), limit=st.integers(30, 200))
def test_an_answer_is_split_to_the_limit_and_nothing_is_lost(text: str, limit: int) -> None:
    pieces = BasePlatformAdapter.truncate_message(text, limit)
    assert all(len(piece) <= limit for piece in pieces)
    if len(pieces) == 1:
        assert pieces == [text]
        return
    bodies = [re.sub(r" \(\d+/\d+\)$", "", piece) for piece in pieces]
    assert [re.search(r"\((\d+)/(\d+)\)$", p).groups() for p in pieces] == [
        (str(n), str(len(pieces))) for n in range(1, len(pieces) + 1)]
    if max(map(len, text.splitlines())) < (limit - 10) // 6:  # fences short enough to close and reopen
        assert all(fence_after(body) is None for body in bodies[:-1])  # every code block cut in two is closed
    # Closing and reopening adds only fences and their language: every other character is kept, in order.
    assert re.sub(r"[`py\s]", "", "".join(bodies)) == re.sub(r"[`py\s]", "", text)


def test_a_code_block_cut_in_two_is_closed_and_reopened_with_its_own_fence() -> None:
    code = "".join(f"line {n}\n" for n in range(12))
    text = f"Here:\n`````python title\n{code}````\nstill code\n``````\nafter"
    pieces = BasePlatformAdapter.truncate_message(text, 60)
    assert len(pieces) > 2 and all(len(piece) <= 60 for piece in pieces)
    bodies = [re.sub(r" \(\d+/\d+\)$", "", piece) for piece in pieces]
    assert bodies[0].startswith("Here:\n`````python title\n") and bodies[0].endswith("\n`````")
    assert all(body.startswith("`````python\n") for body in bodies[1:])
    assert all(body.endswith("\n`````") for body in bodies[:-1])  # "````" inside does not close it
    assert bodies[-1].endswith("``````\nafter")
    assert "".join(re.sub(r"^`````python\n|\n`````$", "", body) for body in bodies[1:]).count("line") == \
        len(re.findall("line", text)) - bodies[0].count("line")
    ticks = "`" * 13 + " " + "`" * 17  # backticks that open no block (CommonMark): plain text
    assert "".join(re.sub(r" \(\d+/\d+\)$", "", p) for p in BasePlatformAdapter.truncate_message(ticks, 30)) == \
        ticks.replace(" ", "")


def test_session_variables_are_the_conversations_else_the_environment(monkeypatch) -> None:
    monkeypatch.setenv("HERMES_SESSION_PLATFORM", "from-env")
    reset_session_vars()
    assert get_session_env("HERMES_SESSION_PLATFORM") == "from-env"
    set_session_vars(platform="irc", chat_id="#c", session_key="agent:main:irc:dm:a", cwd="/ignored")
    assert (get_session_env("HERMES_SESSION_PLATFORM"), get_session_env("HERMES_SESSION_KEY")) == (
        "irc", "agent:main:irc:dm:a")
    assert get_session_env("HERMES_SESSION_USER_ID", "none") == ""  # set, to "", for this conversation
    assert get_session_env("PATH") == os.environ["PATH"]
    reset_session_vars()


def test_pairing_codes_are_hashed_limited_and_locked_out(tmp_path: Path) -> None:
    store = PairingStore(root=tmp_path)
    code = store.generate_code("irc", "alice", "Alice")
    assert code and len(code) == 8 and set(code) <= set("ABCDEFGHJKLMNPQRSTUVWXYZ23456789")
    assert code not in (tmp_path / "irc-pending.json").read_text()
    assert oct((tmp_path / "irc-pending.json").stat().st_mode)[-3:] == "600"
    assert store.generate_code("irc", "alice") is None  # one request per sender per 10 minutes
    store.generate_code("irc", "bob"), store.generate_code("irc", "carol")
    assert store.generate_code("irc", "dave") is None  # three waiting at most
    assert [p["user_id"] for p in store.list_pending("irc")] == ["alice", "bob", "carol"]
    for _ in range(5):
        assert store.approve_code("irc", "WRONGONE") is None
    assert store.approve_code("irc", code) is None  # locked out for an hour after five wrong codes
    assert not store.is_approved("irc", "alice")
    other = PairingStore(root=tmp_path / "other")
    code = other.generate_code("irc", "alice", "Alice")
    assert other.approve_code("irc", code.lower()) == {"user_id": "alice", "user_name": "Alice"}
    assert other.is_approved("irc", "alice") and other.list_pending() == []
    assert other.revoke("irc", "alice") and not other.is_approved("irc", "alice")


def test_readiness_says_why_a_platform_cannot_start(home: Path, monkeypatch) -> None:
    manager = load(home)
    entry = manager.platforms.get("irc")
    monkeypatch.delenv("IRC_SERVER", raising=False)

    def state(config: dict) -> tuple[bool, bool, str]:
        found = readiness(entry, Config(config))
        return found.enabled, found.ready, found.why

    assert state({}) == (False, False, "not enabled (platforms.irc.enabled: true in config.yaml)")
    assert state({"platforms": {"irc": {"enabled": False}}}) == (False, False, "disabled in config.yaml")
    assert state({"gateway": {"platforms": {"irc": {"enabled": True}}}}) == (True, False, "missing IRC_SERVER")
    monkeypatch.setenv("IRC_SERVER", "irc.example.org")
    assert state({"platforms": {"irc": {"enabled": "yes"}}}) == (True, True, "")
    settings = platform_config({"enabled": True, "server": "x", "extra": {"port": 6697}, "token": "t"})
    assert (settings.extra, settings.token) == ({"server": "x", "port": 6697}, "t")


def test_the_served_modules_are_hermes_core_s(home: Path) -> None:
    load(home)
    base = importlib.import_module("gateway.platforms.base")
    assert base.BasePlatformAdapter is BasePlatformAdapter
    assert {"MessageEvent", "MessageType", "SendResult", "cache_image_from_url", "cache_document_from_bytes",
            "ProcessingOutcome"} <= set(base.__all__)
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("gateway.hooks")  # the host's own gateway hooks are not served


def test_a_platform_registered_through_hermes_registry_object_is_the_plugins(home: Path) -> None:
    make_folder_plugin(home / "plugins", "voip", """
from gateway.platform_registry import PlatformEntry, platform_registry
from gateway.platforms.helpers import MessageDeduplicator, strip_markdown

def register(ctx):
    assert not platform_registry.is_registered("voip")
    platform_registry.register(PlatformEntry(name="voip", label="VoIP", adapter_factory=lambda cfg: cfg,
                                             check_fn=lambda: True, required_env=["SIP_URI"], emoji="📞"))
    assert platform_registry.is_registered("voip") and platform_registry.get("voip").label == "VoIP"
    dedup = MessageDeduplicator()
    assert not dedup.is_duplicate("m1") and dedup.is_duplicate("m1")
    assert strip_markdown("**bold** and [a link](http://x)") == "bold and a link"
""", "name: voip\n")
    write_config(home, "plugins:\n  enabled: [voip]\n")
    manager = PluginManager().load()
    record = manager.record("voip")
    assert record.status == "ok", record.failure
    assert record.registered["platforms"] == ["voip"] and manager.platforms.get("voip").plugin_id == "voip"
    registry = importlib.import_module("gateway.platform_registry").platform_registry
    assert registry.registered_names() == ["api_server", "voip", "webhook"]
    assert registry.create_adapter("voip", "the config") == "the config"
    manager.remove_plugin("voip")
    assert not registry.is_registered("voip")


def test_untrusted_inline_text_is_one_inert_line() -> None:
    neutral = neutralize_untrusted_inline_text
    assert neutral("Bob\n## Override\r\n\tall  rules\x00") == "Bob ## Override all rules"
    assert neutral("x" * 300) == "x" * 237 + "..." and neutral("Ann", max_chars=0) == "Ann"


def test_a_hermes_platforms_category_plugin_that_sizes_up_platform_entry(home: Path) -> None:
    """Hermes' `plugins/platforms/<name>/` with `kind: platform`, asking `dataclasses.fields(PlatformEntry)`
    which keywords this host takes (as published adapters do across Hermes versions)."""
    make_folder_plugin(home / "plugins" / "platforms", "onebot", """
from dataclasses import fields
from gateway.platform_registry import PlatformEntry

def register(ctx):
    wanted = dict(name="onebot", label="OneBot", adapter_factory=lambda cfg: cfg, check_fn=lambda: True,
                  target_parse_fn=lambda ref: (ref, None), some_future_field=1)
    supported = {field.name for field in fields(PlatformEntry)}
    ctx.register_platform(**{k: v for k, v in wanted.items() if k in supported})
""", "name: onebot\nkind: platform\n")
    write_config(home, "plugins:\n  enabled: [platforms/onebot]\n")
    manager = PluginManager().load()
    record = manager.record("platforms/onebot")
    assert (record.status, record.spec.kind, record.warnings) == ("ok", "platform", [])
    assert manager.platforms.get("onebot").target_parse_fn("g:1") == ("g:1", None)


def test_credential_locks_keep_one_gateway_per_token(home: Path) -> None:
    from hermes_core.gateway.status import acquire_scoped_lock, release_scoped_lock

    assert acquire_scoped_lock("band", "agent-7", {"platform": "band"}) == (True, None)
    assert acquire_scoped_lock("band", "agent-7") == (True, None)  # this process holds it already
    other = subprocess.run([sys.executable, "-c", "from hermes_core.gateway.status import acquire_scoped_lock as a; "
                            "import json; print(json.dumps(a('band', 'agent-7')))"], capture_output=True, text=True,
                           check=True)
    acquired, holder = json.loads(other.stdout)
    assert acquired is False and holder["pid"] == os.getpid()
    assert holder["metadata"] == {"platform": "band"}
    assert not any("agent-7" in p.name for p in (home / "gateway" / "locks").iterdir())  # a hash, not the token
    release_scoped_lock("band", "agent-7")
    assert list((home / "gateway" / "locks").iterdir()) == []


def test_media_paths_an_answer_may_send(home: Path, tmp_path: Path) -> None:
    from hermes_core.gateway.platforms.base import validate_inbound_media_size, validate_media_delivery_path

    chart = tmp_path / "chart.png"
    chart.write_bytes(b"\x89PNG")
    assert validate_media_delivery_path(f"`{chart}`,") == str(chart.resolve())
    (home / "config.yaml").write_text("model: {}\n")
    assert validate_media_delivery_path(str(home / "config.yaml")) is None  # hermes-core's own secrets
    assert validate_media_delivery_path("/etc/hostname") is None and validate_media_delivery_path("chart.png") is None
    assert validate_media_delivery_path(str(tmp_path / "missing.png")) is None
    validate_inbound_media_size(10)
    with pytest.raises(ValueError, match="voice of 11 bytes is over the 10-byte limit"):
        validate_inbound_media_size(11, media_type="voice", max_bytes=10)


def test_a_register_a_module_provides_on_first_use_is_called(home: Path) -> None:
    make_folder_plugin(home / "plugins", "lazy", """
def __getattr__(name):
    if name == "register":
        from .real import register
        return register
    raise AttributeError(name)
""", "name: lazy\n")
    (home / "plugins" / "lazy" / "real.py").write_text(
        "def register(ctx):\n    ctx.register_platform('lazychat', 'Lazy', object, lambda: True)\n")
    write_config(home, "plugins:\n  enabled: [lazy]\n")
    manager = PluginManager().load()
    assert manager.record("lazy").registered == {"platforms": ["lazychat"]}
