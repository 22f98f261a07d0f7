"""What a memory provider's `initialize` is given, from each host, under the names Hermes' agent
uses (`agent/agent_init.py` upstream): always `platform`, `hermes_home`, `agent_context`,
`agent_identity` (the profile), `agent_workspace`; the rest only when the host knows it. The
provider is a folder plugin written as a published Hermes one is (`tests/helpers/keyed_memory.py`);
the gateway's and the API server's are in their own tests (`test_gateway_session_key.py`,
`test_session_key.py`), ACP's in `tests/acp`."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import hermes, hermes_json, llm_config
from tests.helpers.cron import cron
from tests.helpers.keyed_memory import SELECT, initialized, install

ALWAYS = ("platform", "hermes_home", "agent_context", "agent_identity", "agent_workspace")


def test_the_cli_hands_what_hermes_hands_and_a_resumed_sessions_title(home: Path, llm_server) -> None:
    install(home)
    llm_config(home, llm_server.url, SELECT)
    llm_server.reply("Hello.")
    hermes("run", "Plan the garden party")
    [first] = initialized(home)
    assert {key: first[key] for key in ALWAYS} == {
        "platform": "cli", "hermes_home": str(home), "agent_context": "primary", "agent_identity": "default",
        "agent_workspace": "hermes"}
    assert not {"session_title", "chat_id", "user_name", "gateway_session_key", "thread_id"} & set(first)
    session = hermes_json("sessions", "list")[0]["id"]
    llm_server.reply("Again.")
    hermes("run", "--session", session, "And the music?")
    resumed = initialized(home)[-1]
    assert resumed["session_id"] == session and resumed["session_title"] == "Plan the garden party"


def test_a_profile_is_the_agent_identity(home: Path, llm_server) -> None:
    install(home)
    llm_config(home, llm_server.url, SELECT)
    hermes("profile", "create", "coder", "--clone")
    coder = home / "profiles" / "coder"
    install(coder)  # a profile has plugins of its own
    llm_server.reply("Hi.")
    hermes("-p", "coder", "run", "Hi")
    [seen] = initialized(coder)
    assert seen["agent_identity"] == "coder" and seen["hermes_home"] == str(coder)


def test_a_scheduled_run_is_the_cron_context(home: Path, llm_server) -> None:
    install(home)
    llm_config(home, llm_server.url, SELECT)
    llm_server.always("All green.")
    cron("add", "every 1h", "check the build", "--name", "build")
    cron("run", "build")
    seen = initialized(home)[-1]
    assert seen["platform"] == "cron" and seen["agent_context"] == "cron"  # Hermes: providers skip writes
