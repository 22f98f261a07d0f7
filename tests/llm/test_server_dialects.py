"""What OpenAI-compatible servers other than OpenAI's check, against the scripted server in
the modes that refuse what they refuse: `tool_choice` sent with tools, "" (not null) beside
tool calls, and each configurable per provider."""

from __future__ import annotations

from pathlib import Path

from hermes_core import PluginManager
from hermes_core.agent import Agent, SessionStore
from hermes_core.testing import ScriptedServer, tool_call
from tests.helpers import hermes, llm_config


def test_a_tool_round_trip_passes_a_server_that_refuses_null_content(home: Path) -> None:
    with ScriptedServer(strict=True) as server:
        llm_config(home, server.url)
        server.reply(None, tool_calls=[tool_call("current_time", {}, call_id="c1")]).reply("It is late.")
        result = hermes("run", "what", "time", "is", "it?")
        assert result.stdout.strip() == "It is late.", result.stderr
        first, second = (r.body for r in server.requests)
    assert first["tool_choice"] == "auto" and first["tools"]
    call = second["messages"][-2]
    assert call["role"] == "assistant" and call["tool_calls"][0]["id"] == "c1" and call["content"] == ""
    assert second["tool_choice"] == "auto"


def test_the_strict_server_refuses_null_content_as_llama_cpp_does(home: Path) -> None:
    import openai

    with ScriptedServer(strict=True) as server:
        server.reply("never sent")
        client = openai.OpenAI(base_url=server.url, api_key="x", max_retries=0)
        messages = [{"role": "user", "content": "hi"},
                    {"role": "assistant", "content": None, "tool_calls": [tool_call("t", {}, "c1")]},
                    {"role": "tool", "tool_call_id": "c1", "content": "{}"}]
        try:
            client.chat.completions.create(model="m", messages=messages)  # type: ignore[arg-type]
        except openai.InternalServerError as exc:
            assert "content is null" in str(exc)
        else:
            raise AssertionError("the strict server accepted content: null")
        assert server.pending == 1 and len(server.requests) == 1  # recorded, nothing consumed


def test_tool_choice_follows_agent_tool_choice_and_omit_sends_none(home: Path, llm_server) -> None:
    llm_server.always("ok")
    for choice, sent in [("required", "required"), ("none", "none"), ("omit", None)]:
        llm_config(home, llm_server.url, f"agent:\n  tool_choice: {choice}\n")
        hermes("run", "hi")
        body = llm_server.requests[-1].body
        assert body["tools"] and body.get("tool_choice") == sent, (choice, body.get("tool_choice"))


def test_each_provider_can_have_its_own_tool_choice_and_null_content(home: Path, llm_server) -> None:
    fallback = llm_server.url_for("fallback")
    llm_config(home, llm_server.url, "  tool_choice: omit\n  fallback:\n"
               f"    - {{provider: custom, model: other, base_url: '{fallback}', tool_choice: required,"
               " null_tool_call_content: true}\n")
    llm_server.reply(None, tool_calls=[tool_call("current_time", {}, call_id="c1")])
    llm_server.fail(503).reply("done")  # the main route fails the second request: the fallback answers
    assert hermes("run", "time?").stdout.strip() == "done"
    first, _, third = (r.body for r in llm_server.requests)
    assert "tool_choice" not in first
    assert llm_server.requests[2].path.startswith("/fallback/") and third["tool_choice"] == "required"
    assert third["messages"][-2]["content"] is None and third["messages"][-2]["tool_calls"]


def test_a_resumed_session_stored_with_null_content_is_sent_with_empty_content(home: Path) -> None:
    store = SessionStore(home)
    store.start("old", "scripted-model")
    for message in [{"role": "user", "content": "time?"},
                    {"role": "assistant", "content": None, "tool_calls": [tool_call("current_time", {}, "c1")]},
                    {"role": "tool", "tool_call_id": "c1", "content": '{"time": "noon"}'},
                    {"role": "assistant", "content": None}]:
        store.append("old", message)
    store.close()
    with ScriptedServer(strict=True) as server:
        llm_config(home, server.url)
        server.reply("Still noon.")
        with Agent(PluginManager(), session_id="old", resume=True) as agent:
            assert agent.ask("and now?").text == "Still noon."
        sent = server.requests[0].body["messages"]
    assert [m["content"] for m in sent if m["role"] == "assistant"] == ["", ""]


def test_a_bad_tool_choice_is_one_line_naming_the_key(home: Path, llm_server) -> None:
    llm_config(home, llm_server.url, "  tool_choice: sometimes\n")
    result = hermes("run", "hi", check=1)
    assert "model.tool_choice" in result.stderr and "auto, required, none, omit" in result.stderr
    assert "Traceback" not in result.stderr and not llm_server.requests


def test_a_plugin_call_without_tools_sends_no_tool_choice(home: Path, llm_server) -> None:
    from tests.helpers import plugin_ctx

    llm_config(home, llm_server.url)
    llm_server.reply("pong")
    assert plugin_ctx(home).llm.complete([{"role": "user", "content": "ping"}]).text == "pong"
    assert "tool_choice" not in llm_server.requests[0].body and "tools" not in llm_server.requests[0].body


# -- structured output on servers that refuse json_schema ------------------------------------

TASKS = {"type": "object", "properties": {"tasks": {"type": "array", "items": {"type": "string"}}},
         "required": ["tasks"], "additionalProperties": False}


def structured(home: Path, **kwargs):
    from tests.helpers import plugin_ctx

    args = {"instructions": "Extract the tasks.", "input": [{"type": "text", "text": "Ana ships it."}],
            "json_schema": TASKS, "schema_name": "tasks", **kwargs}
    return plugin_ctx(home).llm.complete_structured(**args)


def audit_lines(home: Path) -> list[str]:
    return (home / "logs" / "agent.log").read_text(encoding="utf-8").splitlines()


def test_a_server_refusing_json_schema_with_500_gets_json_object_and_is_remembered(home: Path, llm_server) -> None:
    llm_config(home, llm_server.url)
    llm_server.refuse_formats("json_schema")  # llama.cpp: 500 "Input should be 'text' or 'json_object'"
    llm_server.reply_json({"tasks": ["ship"]}).reply_json({"tasks": []})
    result = structured(home)
    assert (result.content_type, result.parsed) == ("json", {"tasks": ["ship"]})
    refused, used = (r.body for r in llm_server.requests)
    assert refused["response_format"]["type"] == "json_schema"
    assert used["response_format"] == {"type": "json_object", "schema": TASKS}
    assert used["messages"][0]["role"] == "system" and '"tasks"' in used["messages"][0]["content"]
    assert used["messages"][-1] == refused["messages"][-1]  # the plugin's instructions and input unchanged
    assert "format=json_object attempts=2 outcome=ok" in audit_lines(home)[-1]
    assert structured(home).parsed == {"tasks": []}  # the next call goes straight to json_object
    assert len(llm_server.requests) == 3 and llm_server.requests[2].body["response_format"]["type"] == "json_object"
    assert "format=json_object attempts=1 outcome=ok" in audit_lines(home)[-1]


def test_a_server_refusing_both_formats_with_400_gets_the_schema_in_the_prompt(home: Path, llm_server) -> None:
    llm_config(home, llm_server.url)
    llm_server.refuse_formats("json_schema", "json_object", status=400,
                              message="response_format type is not supported by this model")
    llm_server.reply_json({"tasks": ["ship"]}, fenced=True)
    result = structured(home, system_prompt="Be terse.")
    assert result.parsed == {"tasks": ["ship"]}
    bodies = [r.body for r in llm_server.requests]
    assert [b.get("response_format", {}).get("type") for b in bodies] == ["json_schema", "json_object", None]
    system = bodies[-1]["messages"][0]["content"]
    assert system.startswith("Be terse.\n\n") and "JSON Schema" in system and '"tasks"' in system
    assert "format=prompt attempts=3 outcome=ok" in audit_lines(home)[-1]


def test_the_fallback_reply_is_still_validated_against_the_schema(home: Path, llm_server) -> None:
    from hermes_core import PluginLlmSchemaError

    llm_config(home, llm_server.url)
    llm_server.refuse_formats("json_schema").reply_json({"tasks": [1]})
    try:
        structured(home)
    except PluginLlmSchemaError as exc:
        assert exc.path == "$.tasks[0]"
    else:
        raise AssertionError("a reply failing the schema was accepted")


def test_a_500_that_is_no_format_refusal_is_an_outage_not_a_step_down(home: Path, llm_server) -> None:
    from hermes_core import LlmProviderError

    llm_config(home, llm_server.url)
    llm_server.fail(500, "the GPU fell over")
    try:
        structured(home)
    except LlmProviderError as exc:
        assert "the GPU fell over" in str(exc)
    else:
        raise AssertionError("an outage was answered")
    assert [r.body["response_format"]["type"] for r in llm_server.requests] == ["json_schema"]


def test_json_mode_steps_down_to_the_prompt_and_async_calls_step_too(home: Path, llm_server) -> None:
    import asyncio

    from tests.helpers import plugin_ctx

    llm_config(home, llm_server.url)
    llm_server.refuse_formats("json_object", status=422, message="'response_format.type' must be 'json_schema'")
    llm_server.reply_json([1, 2])
    ctx = plugin_ctx(home)
    result = asyncio.run(ctx.llm.acomplete_structured(instructions="Numbers.", input=[{"type": "text", "text": "1 2"}],
                                                       json_mode=True))
    assert result.parsed == [1, 2]
    bodies = [r.body for r in llm_server.requests]
    assert [b.get("response_format") for b in bodies] == [{"type": "json_object"}, None]
    assert bodies[-1]["messages"][0] == {"role": "system", "content": "Reply with only a JSON value, no prose."}
