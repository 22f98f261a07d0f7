"""The docs' `/tldr` and `/paste-to-tasks` plugins (examples/, installed by dev.py), run with
`hermes command` as a subprocess against the scripted server."""

from __future__ import annotations

from pathlib import Path

import pytest

from hermes_core.testing import ScriptedServer
from tests.helpers import hermes, llm_config, make_folder_plugin

NOTES = "Ana ships the release on Friday. Someone should fix the docs."


@pytest.fixture(autouse=True)
def configured(home: Path, llm_server: ScriptedServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    llm_config(home, llm_server.url, "plugins:\n  enabled: [tldr, paste-to-tasks]\n")


def test_tldr_summarises_with_the_operators_model(home: Path, llm_server: ScriptedServer) -> None:
    llm_server.reply("Ana ships Friday; docs need fixing.")
    result = hermes("command", "tldr", *NOTES.split())
    assert result.stdout.strip() == "Ana ships Friday; docs need fixing."
    body = llm_server.requests[0].body
    assert body["messages"] == [
        {"role": "system", "content": "Summarise the user's text in one tight paragraph. No preamble."},
        {"role": "user", "content": NOTES},
    ]
    assert (body["max_tokens"], body["temperature"], body["model"]) == (256, 0.3, "scripted-model")
    assert "plugin=tldr" in (home / "logs" / "agent.log").read_text()


def test_tldr_without_text_prints_usage_and_calls_nothing(llm_server: ScriptedServer) -> None:
    assert hermes("command", "tldr").stdout.strip() == "Usage: /tldr <text to summarise>"
    assert llm_server.requests == []


def test_paste_to_tasks_parses_a_fenced_json_reply(llm_server: ScriptedServer) -> None:
    llm_server.reply_json({"tasks": [{"owner": "Ana", "action": "ship the release", "due": "2026-11-27"},
                                     {"owner": "", "action": "fix the docs"}]}, fenced=True)
    result = hermes("command", "paste-to-tasks", NOTES)
    assert result.stdout.splitlines() == ["- [Ana] ship the release", "- [?] fix the docs"]
    body = llm_server.requests[0].body
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["name"] == "meeting_tasks"
    assert body["messages"][0]["content"].endswith(NOTES)


def test_paste_to_tasks_shows_a_reply_that_is_not_json(llm_server: ScriptedServer) -> None:
    llm_server.reply("I could not find any tasks, sorry.")
    result = hermes("command", "paste-to-tasks", NOTES)
    assert result.stdout.splitlines() == ["Couldn't parse a response. Raw output:", "I could not find any tasks, sorry."]


def test_a_provider_error_is_one_line_and_a_non_zero_exit(llm_server: ScriptedServer) -> None:
    llm_server.fail(503, "upstream overloaded")
    result = hermes("command", "tldr", "some", "text", check=1)
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith("hermes: error: /tldr (plugin 'tldr') failed: LlmProviderError: every provider")
    assert "HTTP 503: upstream overloaded" in result.stderr


def test_a_trust_refusal_is_one_line_and_a_non_zero_exit(home: Path, llm_server: ScriptedServer) -> None:
    make_folder_plugin(home / "plugins", "pinned", """
        def register(ctx):
            ctx.register_command("pinned", lambda raw: ctx.llm.complete(
                [{"role": "user", "content": raw}], model="gpt-4o").text)
    """)
    llm_config(home, llm_server.url, "plugins:\n  enabled: [pinned]\n")
    result = hermes("command", "pinned", "hello", check=1)
    assert result.stderr.count("\n") == 1
    assert "PluginLlmTrustError" in result.stderr
    assert "set plugins.entries.pinned.llm.allow_model_override: true" in result.stderr
    assert llm_server.requests == []
