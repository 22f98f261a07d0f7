"""The gateway's shared state and ACP's session folders, the same contract on Hermes' files and on
PostgreSQL: "always" approvals (one gateway's approval holds on the other, a revoke is seen at
once), pairings (codes, approvals, rate limits, lockouts, revokes), ACP folders; and two homes on
one database: a pairing approved with one home's `hermes pairing` lets the sender in through the
other home's running gateway, and a revoke there shuts them out again."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hermes_core.acp_server.folders import folders_for
from hermes_core.gateway import approvals
from hermes_core.gateway.pairing import MAX_FAILED_ATTEMPTS, PairingStore
from hermes_core.gateway.state import always_for
from tests.helpers import hermes


@pytest.fixture(params=["file", "postgresql"])
def url(request: pytest.FixtureRequest) -> str | None:
    """None (Hermes' files under the home) or a fresh PostgreSQL database's URL."""
    return None if request.param == "file" else str(request.getfixturevalue("pg_url"))


@pytest.fixture
def two_homes(tmp_path: Path, url: str | None, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """Two homes: on one database (with a URL), or one home seen twice (files are per home)."""
    first = tmp_path / "one"
    second = tmp_path / "two" if url else first
    for home in (first, second):
        home.mkdir(exist_ok=True)
        if url:
            (home / "config.yaml").write_text(f"state:\n  url: {url}\n")
    monkeypatch.delenv("HERMES_STATE_URL", raising=False)
    return first, second


def pairing_of(home: Path, monkeypatch: pytest.MonkeyPatch) -> PairingStore:
    monkeypatch.setenv("HERMES_HOME", str(home))
    return PairingStore()


def test_an_always_approval_holds_on_every_gateway_and_a_revoke_is_seen_at_once(two_homes: tuple[Path, Path]) -> None:
    one, two = (always_for(home) for home in two_homes)
    assert one.all() == [] and not two.has("rm -rf")
    one.add("rm -rf")
    one.add("rm -rf")  # twice is once
    two.add("curl | sh")
    assert one.has("curl | sh") and two.has("rm -rf") and one.all() == two.all() == ["curl | sh", "rm -rf"]
    assert two.remove("rm -rf") and not two.remove("rm -rf")
    assert not one.has("rm -rf")  # no restart


def test_the_gateways_approval_functions_keep_always_where_the_home_says(two_homes: tuple[Path, Path],
                                                                       url: str | None) -> None:
    approvals.approve_permanent("before load")  # made before the home was known: kept there on load
    approvals.load_permanent(two_homes[0])
    try:
        approvals.approve_permanent("sudo")
        assert approvals.is_approved("any conversation", "sudo")
        assert always_for(two_homes[1]).has("sudo") and always_for(two_homes[1]).has("before load")
        always_for(two_homes[1]).remove("sudo")  # another gateway, or `hermes gateway approvals --revoke`
        assert not approvals.is_approved("any conversation", "sudo")
        approvals.approve_session("this one", "ls")
        assert approvals.is_approved("this one", "ls") and not approvals.is_approved("another", "ls")
        assert approvals.revoke_permanent("before load") and not approvals.revoke_permanent("before load")
        if url is None:
            assert json.loads((two_homes[0] / "gateway" / "approvals.json").read_text()) == {"always": []}
    finally:
        approvals.clear_session("this one")
        approvals._always = None


def test_a_code_given_by_one_gateway_is_approved_from_another_home(two_homes: tuple[Path, Path],
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    given, other = pairing_of(two_homes[0], monkeypatch), pairing_of(two_homes[1], monkeypatch)
    code = given.generate_code("chat", "bob", "Bob")
    assert code is not None and given.generate_code("chat", "bob") is None  # one per sender every 10 minutes
    assert [p["user_id"] for p in other.list_pending()] == ["bob"]
    assert other.approve_code("chat", code.lower()) == {"user_id": "bob", "user_name": "Bob"}
    assert given.is_approved("chat", "bob") and other.list_approved() == [
        {"platform": "chat", "user_id": "bob", "user_name": "Bob"}]
    assert given.approve_code("chat", code) is None  # used
    assert given.revoke("chat", "bob") and not other.is_approved("chat", "bob") and not other.revoke("chat", "bob")
    for user in ("u1", "u2", "u3"):
        assert given.generate_code("chat", user) is not None
    assert given.generate_code("chat", "u4") is None  # three waiting at most
    assert other.clear_pending("chat") == 3 and given.list_pending() == []


def test_wrong_codes_lock_a_platforms_approvals_on_every_home(two_homes: tuple[Path, Path],
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    given, other = pairing_of(two_homes[0], monkeypatch), pairing_of(two_homes[1], monkeypatch)
    code = given.generate_code("chat", "eve")
    assert code is not None
    for n in range(MAX_FAILED_ATTEMPTS):
        assert (given if n % 2 else other).approve_code("chat", "WRONGCOD") is None
    assert given.locked_until("chat") is not None and other.locked_until("chat") is not None
    assert other.approve_code("chat", code) is None and not given.is_approved("chat", "eve")
    assert other.locked_until("other platform") is None


def test_an_acp_sessions_folder_is_found_through_another_host(two_homes: tuple[Path, Path]) -> None:
    one, two = (folders_for(home) for home in two_homes)
    assert one.of(["s1"]) == {} and one.of([]) == {}
    one.remember("s1", "/work/project")
    two.remember("s2", "/work/other")
    two.remember("s1", "/work/moved")
    assert one.of(["s1", "s2", "s3"]) == {"s1": "/work/moved", "s2": "/work/other"}


PAIRING_OPS = st.lists(st.one_of(
    st.tuples(st.just("generate"), st.sampled_from(["chat", "mail"]), st.sampled_from(["ann", "bob", "cid", "dan"])),
    st.tuples(st.just("approve"), st.sampled_from(["chat", "mail"]), st.sampled_from(["right", "wrong"])),
    st.tuples(st.just("revoke"), st.sampled_from(["chat", "mail"]), st.sampled_from(["ann", "bob"])),
    st.tuples(st.just("clear"), st.sampled_from(["chat", None])),
), max_size=14)


def play(store: PairingStore, ops: list[tuple[Any, ...]]) -> list[Any]:
    codes: dict[str, str] = {}
    said: list[Any] = []
    for op in ops:
        if op[0] == "generate":
            code = store.generate_code(op[1], op[2], op[2].title())
            if code:
                codes[op[1]] = code
            said.append(code is not None)
        elif op[0] == "approve":
            said.append(store.approve_code(op[1], codes.get(op[1], "NOCODE22") if op[2] == "right" else "WRONGCOD"))
        elif op[0] == "revoke":
            said.append(store.revoke(op[1], op[2]))
        else:
            said.append(store.clear_pending(op[1]))
        said.append(([(p["platform"], p["user_id"]) for p in store.list_pending()], store.list_approved(),
                     store.locked_until("chat") is not None))
    return said


@settings(max_examples=15, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(ops=PAIRING_OPS)
def test_the_same_pairing_operations_give_the_same_results_on_both_backends(
        tmp_path_factory: pytest.TempPathFactory, pg_cluster: Any, monkeypatch: pytest.MonkeyPatch,
        ops: list[tuple[Any, ...]]) -> None:
    url = pg_cluster.create_database()
    try:
        root = tmp_path_factory.mktemp("pairing")
        monkeypatch.setenv("HERMES_HOME", str(root))
        on_files = PairingStore(root=root / "files")
        on_postgres = PairingStore(root=root / "pg", url=url)
        assert play(on_files, ops) == play(on_postgres, ops)
    finally:
        pg_cluster.drop_database(url.rsplit("/", 1)[1])


def to_bob(chat: Any, wanted: str, timeout: float = 30) -> str:
    """Everything sent to Bob's chat so far (the answers may come in numbered pieces), once it holds `wanted`."""
    import time

    deadline = time.monotonic() + timeout
    while True:
        text = " ".join(m["text"] for m in chat.sent if m.get("chat_id") == "bob-dm")
        if wanted in text:
            return text
        assert time.monotonic() < deadline, text
        time.sleep(0.05)


def test_a_pairing_approved_through_one_homes_cli_lets_the_sender_in_through_the_others_gateway(
        tmp_path: Path, pg_url: str, llm_server: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.helpers.chat import FakeChat, GatewayProcess, configure

    chat = FakeChat()
    try:
        for name in ("FAKECHAT_ALLOWED_USERS", "FAKECHAT_ALLOW_ALL_USERS", "GATEWAY_ALLOWED_USERS",
                     "GATEWAY_ALLOW_ALL_USERS", "HERMES_STATE_URL"):
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv("FAKECHAT_URL", chat.url)
        monkeypatch.setenv("FAKECHAT_ALLOWED_USERS", "alice")
        serving, operating = tmp_path / "serving", tmp_path / "operating"
        for home in (serving, operating):
            home.mkdir()
            configure(home, llm_server.url, extra=f"state:\n  url: {pg_url}\n")
        llm_server.reply("Hello Bob.")
        with GatewayProcess(env={**os.environ, "HERMES_HOME": str(serving)}) as gateway:
            gateway.wait_for(r"fakechat: connected")
            chat.say("bob-dm", "bob", "hi")
            code = re.search(r"pairing code: `([A-Z2-9]{8})`", to_bob(chat, "hermes pairing approve")).group(1)
            assert not (serving / "platforms" / "pairing").exists()  # in the database, not the home
            monkeypatch.setenv("HERMES_HOME", str(operating))
            assert hermes("pairing", "approve", "fakechat", code).stdout.strip() == "approved bob (Bob) on fakechat"
            chat.say("bob-dm", "bob", "hi again")
            assert "Hello Bob." in to_bob(chat, "Hello Bob.")
            assert hermes("pairing", "revoke", "fakechat", "bob").stdout.strip() == "revoked bob on fakechat"
            chat.say("bob-dm", "bob", "still there?")
            gateway.wait_for(r"fakechat: ignored a message from bob \(not allowed")  # at once: no restart
            assert len(llm_server.requests) == 1
            assert gateway.stop() == 0
    finally:
        chat.close()


def test_a_homes_files_are_imported_once_and_a_revoke_is_not_undone_by_another_host_with_them(
        tmp_path: Path, pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HERMES_STATE_URL", raising=False)
    files: dict[str, Any] = {
        "gateway/approvals.json": {"always": ["rm -rf", "sudo"]},
        "platforms/pairing/chat-approved.json": {"bob": {"user_name": "Bob", "approved_at": 1.0}},
        "acp/sessions.json": {"s1": "/work/project"},
    }
    homes = [tmp_path / "a", tmp_path / "b"]
    for home in homes:
        for name, data in files.items():
            (home / name).parent.mkdir(parents=True, exist_ok=True)
            (home / name).write_text(json.dumps(data))
        (home / "config.yaml").write_text(f"state:\n  url: {pg_url}\n")
    first = pairing_of(homes[0], monkeypatch)
    assert first.is_approved("chat", "bob") and always_for(homes[0]).all() == ["rm -rf", "sudo"]
    assert folders_for(homes[0]).of(["s1"]) == {"s1": "/work/project"}
    assert first.revoke("chat", "bob") and always_for(homes[0]).remove("sudo")
    second = pairing_of(homes[1], monkeypatch)  # the same files on another host: already imported
    assert not second.is_approved("chat", "bob") and always_for(homes[1]).all() == ["rm -rf"]
    for home in homes:
        assert {name: json.loads((home / name).read_text()) for name in files} == files  # left as they were
