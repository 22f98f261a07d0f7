"""Skills in the agent: Hermes' index in the system prompt (names and descriptions, never a body),
the same bytes for every request of a conversation; a body reaches the model only through
`skill_view`; disabled skills and plugin skills stay out of the index; cron jobs load their skills
through the same library."""

from __future__ import annotations

import json
import re
from pathlib import Path

from hermes_core import PluginManager
from hermes_core.agent import Agent
from hermes_core.testing import Reply, tool_call
from tests.helpers import hermes, llm_config, make_folder_plugin
from tests.helpers.chat import HermesProcess, post_json
from tests.helpers.skills import make_skill

BODY = "BODY-MARKER: group failures by their cause before fixing any."


def system_prompt(body: dict) -> str:
    first = body["messages"][0]
    assert first["role"] == "system"
    return str(first["content"])


def test_the_index_lists_the_skills_and_a_body_arrives_only_when_loaded(home: Path, llm_server) -> None:
    make_skill(home / "skills", "devops/triage", description="Triage failing builds", body=BODY,
               files={"references/api.md": "API-MARKER"})
    (home / "skills" / "devops" / "DESCRIPTION.md").write_text("---\ndescription: Build and release\n---\n")
    make_skill(home / "skills", "writing",
               description="Write plainly and briefly, for readers who are in a hurry, always")
    llm_config(home, llm_server.url)
    llm_server.reply(None, tool_calls=[tool_call("skill_view", {"name": "triage"}, call_id="v1")])
    llm_server.reply(None, tool_calls=[tool_call("skill_view", {"name": "triage", "file_path": "references/api.md"},
                                                 call_id="v2")])
    llm_server.reply("Done.")
    assert hermes("run", "why did the build fail?").stdout.strip() == "Done."
    first, second, third = (r.body for r in llm_server.requests)
    prompt = system_prompt(first)
    assert "<available_skills>\n  devops: Build and release\n    - triage: Triage failing builds\n" \
           "  writing:\n    - writing: Write plainly and briefly, for readers who are in a hurry...\n</available_skills>" \
           in prompt
    assert "you MUST load it with skill_view(name)" in prompt
    assert BODY not in json.dumps(first) and "API-MARKER" not in json.dumps(second)
    assert BODY in second["messages"][-1]["content"] and "API-MARKER" in third["messages"][-1]["content"]
    assert system_prompt(second) == system_prompt(third) == prompt  # byte-stable: the prompt cache holds
    assert {"skills_list", "skill_view"} <= {t["function"]["name"] for t in first["tools"]}


def test_the_index_stays_the_same_for_the_conversation_when_skills_change(home: Path, llm_server) -> None:
    make_skill(home / "skills", "one", description="The first")
    llm_config(home, llm_server.url)
    llm_server.reply("a").reply("b")
    with Agent(PluginManager()) as agent:
        agent.ask("hello")
        make_skill(home / "skills", "two", description="The second, added mid-conversation")
        agent.ask("again")
    first, second = (r.body for r in llm_server.requests)
    assert system_prompt(first) == system_prompt(second) and "- one: The first" in system_prompt(first)
    assert "added mid-conversation" not in system_prompt(second)
    llm_server.reply("c")
    with Agent(PluginManager()) as agent:  # a new conversation sees it
        agent.ask("hello")
    assert "- two: The second, added mid-conversation" in system_prompt(llm_server.requests[-1].body)


def test_disabled_skills_and_plugin_skills_stay_out_of_the_index(home: Path, llm_server) -> None:
    folder = make_folder_plugin(home / "plugins", "shipit", "from pathlib import Path\n\ndef register(ctx):\n"
                                "    ctx.register_skill('deploy', Path(__file__).parent / 'SKILL.md', 'Deploy it')\n",
                                "name: shipit\n")
    (folder / "SKILL.md").write_text("---\nname: deploy\ndescription: Deploy it\n---\nDeploy.\n")
    for name in ("kept", "everywhere-off", "cli-off", "telegram-off"):
        make_skill(home / "skills", f"misc/{name}", description=f"Skill {name}")
    llm_config(home, llm_server.url, "plugins:\n  enabled: [shipit]\nskills:\n  disabled: [everywhere-off]\n"
               "  platform_disabled:\n    cli: [cli-off]\n    telegram: [telegram-off]\n")
    llm_server.reply("ok")
    hermes("run", "hi")
    prompt = system_prompt(llm_server.requests[0].body)
    assert "- kept: Skill kept" in prompt and "- telegram-off: Skill telegram-off" in prompt
    assert "everywhere-off" not in prompt and "cli-off" not in prompt and "deploy" not in prompt
    llm_server.reply("ok")
    with Agent(PluginManager(), platform="telegram") as agent:
        agent.ask("hi")
    prompt = system_prompt(llm_server.requests[-1].body)
    assert "- cli-off: Skill cli-off" in prompt and "telegram-off" not in prompt


def test_no_index_when_no_skill_tool_is_offered(home: Path, llm_server) -> None:
    make_skill(home / "skills", "one", description="The first")
    llm_config(home, llm_server.url, "plugins:\n  disabled: [skills]\n")
    llm_server.reply("ok")
    hermes("run", "hi")
    assert "available_skills" not in system_prompt(llm_server.requests[0].body)
    llm_config(home, llm_server.url)
    llm_server.reply("ok")
    with Agent(PluginManager(), tools={"current_time"}) as agent:  # a batch item's or an API key's tools
        agent.ask("hi")
    assert "available_skills" not in system_prompt(llm_server.requests[-1].body)


def test_a_skill_md_without_frontmatter_is_not_indexed_and_warned_about_once(home: Path, llm_server) -> None:
    make_skill(home / "skills", "good", description="Good one")
    make_skill(home / "skills", "bare", head="", body="# Just a body")
    llm_config(home, llm_server.url)
    llm_server.reply("ok")
    result = hermes("run", "hi")
    prompt = system_prompt(llm_server.requests[0].body)
    assert "- good: Good one" in prompt and "bare" not in prompt
    assert result.stderr.count("bare/SKILL.md") == 1


def test_a_batch_item_runs_with_its_own_skills_and_every_item_sees_the_index(home: Path, llm_server,
                                                                             tmp_path: Path) -> None:
    make_skill(home / "skills", "devops/triage", description="Triage failing builds", body=BODY)
    make_skill(home / "skills", "writing", description="Write plainly", body="WRITING-MARKER")
    llm_config(home, llm_server.url, "skills:\n  platform_disabled:\n    batch: [writing]\n")
    llm_server.always(Reply("ok"))
    data = tmp_path / "data.jsonl"
    data.write_text(json.dumps({"id": "a", "prompt": "fix the build", "skills": ["triage", "writing"]}) + "\n"
                    + json.dumps({"id": "b", "prompt": "say hi"}) + "\n"
                    + json.dumps({"id": "c", "prompt": "x", "skills": "triage"}) + "\n")
    result = hermes("batch", "run", str(data), "--out", str(tmp_path / "out"))
    assert "line 3: skills must be a list of skill names; skipped" in result.stderr + result.stdout
    by_prompt = {r.body["messages"][-1]["content"]: r.body for r in llm_server.requests}
    with_skill = next(body for text, body in by_prompt.items() if text.endswith("fix the build"))
    sent = with_skill["messages"][-1]["content"]
    assert '[IMPORTANT: The user has invoked the "triage" skill' in sent and BODY in sent
    assert "could not be found and were skipped: writing" in sent and "WRITING-MARKER" not in sent
    assert sent.endswith("alongside the skill invocation: fix the build")
    assert by_prompt["say hi"]["messages"][-1]["content"] == "say hi"
    for body in by_prompt.values():
        assert "- triage: Triage failing builds" in system_prompt(body) and "writing" not in system_prompt(body)


def test_hermes_serve_offers_the_index_on_its_platform(home: Path, llm_server, monkeypatch) -> None:
    make_skill(home / "skills", "devops/triage", description="Triage failing builds", body=BODY)
    make_skill(home / "skills", "writing", description="Write plainly")
    llm_config(home, llm_server.url, "skills:\n  platform_disabled:\n    api_server: [writing]\n")
    monkeypatch.setenv("API_SERVER_KEY", "skills-test-key-0123456789")
    llm_server.reply("ok")
    with HermesProcess("serve", "--port", "0") as served:
        url = re.match(r"(http://\S+/v1) ", served.wait_for(r"http://")).group(1)
        status, answer = post_json(f"{url}/chat/completions", {"model": "hermes-agent", "messages": [
            {"role": "user", "content": "hi"}]}, {"Authorization": "Bearer skills-test-key-0123456789"})
        served.stop()
    assert status == 200 and answer["choices"][0]["message"]["content"] == "ok"
    prompt = system_prompt(llm_server.requests[0].body)
    assert "- triage: Triage failing builds" in prompt and "writing" not in prompt and BODY not in prompt
