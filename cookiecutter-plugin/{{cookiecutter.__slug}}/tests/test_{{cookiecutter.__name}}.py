"""Tests of {{ cookiecutter.plugin_name }}, with hermes-core's test kit (its fixtures need no import)."""

from __future__ import annotations

import json
{% if cookiecutter.kind == "tool" %}
import {{ cookiecutter.__module }} as plugin


def test_the_tool_counts_words_and_characters(hermes_manager) -> None:
    manager = hermes_manager(plugin)
    assert json.loads(manager.dispatch_tool(plugin.TOOL, {"text": "one two  three"})) == {"words": 3, "characters": 14}


def test_the_tool_says_which_argument_is_wrong(hermes_manager) -> None:
    manager = hermes_manager(plugin)
    assert "'text'" in json.loads(manager.dispatch_tool(plugin.TOOL, {}))["error"]


def test_the_command_summarises_with_the_operators_model(hermes_manager, scripted_llm) -> None:
    scripted_llm.reply("A short summary.")
    manager = hermes_manager(plugin)
    assert manager.run_command("{{ cookiecutter.__slug }}", "a long text about many things") == "A short summary."
    sent = scripted_llm.requests[0].body
    assert sent["messages"][-1] == {"role": "user", "content": "a long text about many things"}
    assert sent["max_tokens"] == 200


def test_the_command_without_text_says_how_to_use_it(hermes_manager) -> None:
    assert hermes_manager(plugin).run_command("{{ cookiecutter.__slug }}", "").startswith("usage:")


def test_installed_it_is_found_through_its_entry_point(hermes_manager) -> None:
    manager = hermes_manager("{{ cookiecutter.__slug }}")
    assert manager.record("{{ cookiecutter.__slug }}").registered["tools"] == [plugin.TOOL]
{%- elif cookiecutter.kind == "context_engine" %}
from hermes_core.testing import ContextEngineContract

import {{ cookiecutter.__module }} as plugin


class TestTheContract(ContextEngineContract):
    """hermes-core's property checks: valid lists out for every valid conversation in, the
    system prompt and last user message kept, counters, thresholds, reset, tool schemas."""

    def make_engine(self):
        return plugin.{{ cookiecutter.__class }}Engine()


def conversation(turns: int) -> list[dict]:
    messages = [{"role": "system", "content": "You are helpful."}]
    for n in range(turns):
        messages += [{"role": "user", "content": f"question {n}"}, {"role": "assistant", "content": f"answer {n}"}]
    return messages


def test_it_drops_the_middle_and_says_so() -> None:
    engine = plugin.{{ cookiecutter.__class }}Engine()
    result = engine.compress(conversation(30))
    assert result[:2] == conversation(30)[:2] and result[-1] == {"role": "assistant", "content": "answer 29"}
    assert "earlier messages were dropped" in result[2]["content"] and engine.compression_count == 1


def test_the_config_selects_it(hermes_config, hermes_manager) -> None:
    hermes_config({"context": {"engine": "{{ cookiecutter.__slug }}"}})
    with hermes_manager(plugin).open_session(context_length=1_000) as session:
        assert session.context_engine.name == "{{ cookiecutter.__slug }}"
        session.after_response({"prompt_tokens": 900})
        assert len(session.before_request(conversation(30))) < 61


def test_installed_it_is_found_through_its_entry_point(hermes_manager) -> None:
    manager = hermes_manager("{{ cookiecutter.__slug }}")
    assert manager.record("{{ cookiecutter.__slug }}").registered["providers"] == ["context_engine:{{ cookiecutter.__slug }}"]
{%- elif cookiecutter.kind == "memory_provider" %}
from hermes_core.testing import MemoryProviderContract

import {{ cookiecutter.__module }} as plugin


class TestTheContract(MemoryProviderContract):
    """hermes-core's property checks: what is saved is found, forget forgets, any text is a
    safe query, tool schemas are valid, tool calls answer JSON, memories persist."""

    def make_provider(self, tmp_path):
        return plugin.{{ cookiecutter.__class }}Memory()


def test_the_config_selects_it_and_its_tools_reach_the_model(hermes_config, hermes_manager) -> None:
    hermes_config({"memory": {"provider": "{{ cookiecutter.__slug }}"}})
    with hermes_manager(plugin).open_session() as session:
        saved = json.loads(session.dispatch_tool("memory_save", {"content": "Deploys happen on Tuesdays"}))
        found = json.loads(session.dispatch_tool("memory_search", {"query": "tuesdays"}))
        assert found["results"] == [{"id": saved["id"], "content": "Deploys happen on Tuesdays"}]
        assert "Tuesdays" in session.prefetch("when do deploys happen? tuesdays?")


def test_installed_it_is_found_through_its_entry_point(hermes_manager) -> None:
    manager = hermes_manager("{{ cookiecutter.__slug }}")
    assert manager.record("{{ cookiecutter.__slug }}").registered["providers"] == ["memory:{{ cookiecutter.__slug }}"]
{%- endif %}
