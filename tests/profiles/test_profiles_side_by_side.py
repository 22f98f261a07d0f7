"""Two profiles on one machine at once: their gateways, cron schedulers and API servers run side
by side, each in its own home, sharing no session, lock, port or job."""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import HERMES, hermes, llm_config, make_folder_plugin
from tests.helpers.api_server import KEY, Serve, call
from tests.helpers.chat import ADAPTER_PLUGIN, FakeChat, GatewayProcess
from tests.helpers.cron import T0, at, jobs

PROFILES = ("alpha", "beta")


def last_user_text(body: Any) -> str:
    return str([m for m in body["messages"] if m["role"] == "user"][-1]["content"])


@pytest.fixture
def profiles(home: Path, llm_server, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """Two named profiles of one root, each with the scripted model; the model answers with
    what it was asked, so every answer says which profile's request it was."""
    for name in ("FAKECHAT_URL", "FAKECHAT_ALLOWED_USERS", "GATEWAY_ALLOWED_USERS", "GATEWAY_ALLOW_ALL_USERS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HERMES_TIMEZONE", "UTC")
    llm_server.answer(lambda body: f"answer to: {last_user_text(body)[-60:]}")
    homes = {}
    for name in PROFILES:
        hermes("profile", "create", name)
        homes[name] = home / "profiles" / name
        make_folder_plugin(homes[name] / "plugins", "fakechat", ADAPTER_PLUGIN, "name: fakechat\n")
        llm_config(homes[name], llm_server.url, "timezone: UTC\nplugins:\n  enabled: [fakechat]\n"
                                                "cron:\n  tick_interval: 0.5\n")
    return homes


def sessions(name: str) -> list[dict[str, Any]]:
    return json.loads(hermes("-p", name, "sessions", "list", "--json").stdout)


def test_two_gateways_with_their_cron_schedulers_run_at_once_each_in_its_own_home(
        profiles: dict[str, Path], llm_server) -> None:
    for name in PROFILES:
        subprocess.run([str(HERMES), "-p", name, "cron", "add", "in 1m", f"cron report of {name}", "--name",
                        f"report-{name}", "--deliver", f"fakechat:room-{name}"], env=at(T0), check=True,
                       capture_output=True, timeout=120)
    chats = {name: FakeChat() for name in PROFILES}
    gateways = {}
    try:
        for name in PROFILES:
            env = at(T0 + dt.timedelta(minutes=2)) | {"FAKECHAT_URL": chats[name].url, "FAKECHAT_ALLOW_ALL_USERS": "yes"}
            gateways[name] = GatewayProcess("-p", name, env=env)
        for name in PROFILES:
            gateways[name].wait_for(r"fakechat: connected")
        for name in PROFILES:  # both run now: each is its profile's gateway
            listed = {entry["name"]: entry for entry in json.loads(hermes("profile", "list", "--json").stdout)}
            assert listed[name]["gateway"]["running"]
            assert listed[name]["gateway"]["pid"] == gateways[name].process.pid
            assert "has a gateway running" in hermes("profile", "delete", name, "--yes", check=1).stderr
        for name in PROFILES:
            chats[name].say("dm-1", "dana", f"hello from {name}")
        for name in PROFILES:
            cron_sent = chats[name].wait_sent(1, f"room-{name}")
            assert f"cron report of {name}" in cron_sent[0]["text"]
            answered = chats[name].wait_sent(1, "dm-1")
            assert answered[0]["text"].startswith(f"answer to: hello from {name}")
        for name in PROFILES:
            assert gateways[name].stop() == 0
    finally:
        for process in gateways.values():
            process.kill()
        for chat in chats.values():
            chat.close()
    other = {"alpha": "beta", "beta": "alpha"}
    for name, home in profiles.items():
        sent = [s["text"] for s in chats[name].sent]
        assert not any(other[name] in text for text in sent), sent  # nothing of the other profile reached this chat
        assert [(job["name"], job["state"]) for job in jobs(home)] == [(f"report-{name}", "completed")]
        found = sessions(name)
        assert found and all(other[name] not in json.dumps(row) for row in found)
        assert not (home / "gateway" / "status.json").exists() or "running" not in \
            (home / "gateway" / "status.json").read_text()
    asked = [last_user_text(request.body) for request in llm_server.requests]
    for name in PROFILES:  # each job ran once, by its own profile's scheduler
        assert sum(f"cron report of {name}" in text for text in asked) == 1, asked
    assert not sessions("default")


def test_two_api_servers_at_once_keep_their_responses_sessions_and_budgets_apart(
        profiles: dict[str, Path], llm_server, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("API_SERVER_KEY", KEY)
    for home in profiles.values():  # one model request a minute, per profile
        llm_config(home, llm_server.url, "  budget:\n    requests_per_minute: 1\n    on_limit: refuse\n")
    with Serve("-p", "alpha") as alpha, Serve("-p", "beta") as beta:
        assert alpha.url != beta.url
        made = {}
        for name, server in (("alpha", alpha), ("beta", beta)):
            status, body, _ = call(f"{server.url}/responses", {"model": "hermes-agent", "input": f"note for {name}"})
            assert status == 200, body  # beta's first request is not counted against alpha's budget
            made[name] = body["id"]
        status, body, _ = call(f"{alpha.url}/responses", {"model": "hermes-agent", "input": "one more"})
        assert status == 429 and body["error"]["code"] == "budget_exceeded", body  # alpha's own budget holds
        assert call(f"{alpha.url}/responses/{made['alpha']}")[0] == 200
        assert call(f"{beta.url}/responses/{made['beta']}")[0] == 200
        assert call(f"{beta.url}/responses/{made['alpha']}")[0] == 404  # a response made in one is unknown in the other
        assert call(f"{alpha.url}/responses/{made['beta']}")[0] == 404
        status, body, _ = call(f"{beta.url}/responses", {"model": "hermes-agent", "input": "and?",
                                                           "previous_response_id": made["alpha"]})
        assert status == 400 and made["alpha"] in body["error"]["message"]
    titles = {name: sorted(row["title"] for row in sessions(name)) for name in PROFILES}
    assert titles == {"alpha": ["note for alpha", "one more"], "beta": ["note for beta"]}
