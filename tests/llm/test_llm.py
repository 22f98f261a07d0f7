"""`ctx.llm` against the scripted server through the real openai SDK: results, usage and cost,
structured output, provider resolution, fallback, credentials, timeouts, vision, audit."""

from __future__ import annotations

import asyncio
import base64
import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from hermes_core import (
    LlmConfigError,
    LlmProviderError,
    PluginLlmCompleteResult,
    PluginLlmInputError,
    PluginLlmSchemaError,
    PluginLlmStructuredResult,
)
from hermes_core.testing import ScriptedServer
from tests.helpers import llm_config, plugin_ctx

USER = [{"role": "user", "content": "hello there"}]
TASKS = {"type": "object", "properties": {"tasks": {"type": "array", "items": {
    "type": "object", "properties": {"action": {"type": "string"}}, "required": ["action"]}}}, "required": ["tasks"]}


@pytest.fixture(autouse=True)
def no_provider_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "OPENROUTER_API_KEY", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(name, raising=False)


def audit_lines(home: Path) -> list[str]:
    path = home / "logs" / "agent.log"
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


# -- complete -----------------------------------------------------------------------------


def test_complete_returns_text_provider_model_usage_and_audit(home: Path, llm_server: ScriptedServer) -> None:
    llm_config(home, llm_server.url)
    llm_server.reply("hi!", model="served/model-v2", usage={"prompt_tokens": 7, "completion_tokens": 2})
    result = plugin_ctx(home, "greeter").llm.complete(USER, temperature=0.2, max_tokens=9, purpose="greet")
    assert isinstance(result, PluginLlmCompleteResult)
    assert (result.text, result.provider, result.model, result.agent_id) == ("hi!", "custom", "served/model-v2", "default")
    assert (result.usage.input_tokens, result.usage.output_tokens, result.usage.total_tokens) == (7, 2, 9)
    assert dict(result.audit) == {"plugin_id": "greeter", "purpose": "greet", "profile": None}
    [request] = llm_server.requests
    assert request.body == {"model": "scripted-model", "messages": USER, "temperature": 0.2, "max_tokens": 9}


def test_acomplete_gives_the_same_result(home: Path, llm_server: ScriptedServer) -> None:
    llm_config(home, llm_server.url)
    llm_server.reply("async hi")
    result = asyncio.run(plugin_ctx(home).llm.acomplete(USER, purpose="a"))
    assert (result.text, result.provider) == ("async hi", "custom")


def test_ctx_llm_is_per_plugin_and_lazy_and_imports_openai_on_first_call(home: Path, tmp_path: Path) -> None:
    script = """
import sys
from hermes_core import PluginManager
manager = PluginManager(discover_plugins=False).load()
a = manager.add_plugin(lambda ctx: ctx.register_command("a", str), "a").ctx
b = manager.add_plugin(lambda ctx: ctx.register_command("b", str), "b").ctx
assert a.llm is a.llm and a.llm is not b.llm
print(a.llm.plugin_id, b.llm.plugin_id, repr(a.llm), "openai" in sys.modules)
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["a", "b", "<PluginLlm", "plugin_id='a'>", "False"]


def test_bad_messages_are_a_value_error_before_any_request(home: Path, llm_server: ScriptedServer) -> None:
    llm_config(home, llm_server.url)
    llm = plugin_ctx(home).llm
    for bad in ([], "hello", [{"content": "no role"}], [{"role": "wizard", "content": "x"}]):
        with pytest.raises(ValueError, match="messages"):
            llm.complete(bad)  # type: ignore[arg-type]
    with pytest.raises(PluginLlmInputError, match="max_tokens"):
        llm.complete(USER, max_tokens=0)
    with pytest.raises(PluginLlmInputError, match="timeout"):
        llm.complete(USER, timeout=-1)
    assert llm_server.requests == []


# -- structured -----------------------------------------------------------------------------


def structured(home: Path, **kwargs: Any) -> PluginLlmStructuredResult:
    args: dict[str, Any] = {"instructions": "Extract tasks.", "input": [{"type": "text", "text": "Ana ships it."}]}
    return plugin_ctx(home).llm.complete_structured(**{**args, **kwargs})  # type: ignore[no-any-return]


def test_schema_sends_json_schema_response_format_and_parses(home: Path, llm_server: ScriptedServer) -> None:
    llm_config(home, llm_server.url)
    llm_server.reply_json({"tasks": [{"action": "ship"}]})
    result = structured(home, json_schema=TASKS, schema_name="meeting.tasks", system_prompt="Be terse.")
    assert (result.content_type, result.parsed) == ("json", {"tasks": [{"action": "ship"}]})
    assert result.audit["schema_name"] == "meeting.tasks"
    body = llm_server.requests[0].body
    assert body["response_format"] == {"type": "json_schema", "json_schema": {"name": "meeting_tasks", "schema": TASKS}}
    assert body["messages"] == [{"role": "system", "content": "Be terse."},
                                {"role": "user", "content": "Extract tasks.\n\nAna ships it."}]


def test_json_mode_sends_json_object(home: Path, llm_server: ScriptedServer) -> None:
    llm_config(home, llm_server.url)
    llm_server.reply_json([1, 2])
    assert structured(home, json_mode=True).parsed == [1, 2]
    assert llm_server.requests[0].body["response_format"] == {"type": "json_object"}


def test_fenced_json_is_reparsed_and_plain_text_falls_back(home: Path, llm_server: ScriptedServer) -> None:
    llm_config(home, llm_server.url)
    llm_server.reply_json({"tasks": []}, fenced=True).reply("Sorry, I cannot do JSON today.")
    fenced = structured(home, json_schema=TASKS)
    assert (fenced.content_type, fenced.parsed) == ("json", {"tasks": []})
    text = structured(home, json_schema=TASKS)
    assert (text.content_type, text.parsed, text.text) == ("text", None, "Sorry, I cannot do JSON today.")


def test_raw_control_characters_inside_strings_are_accepted_and_nothing_else(home: Path,
                                                                             llm_server: ScriptedServer) -> None:
    llm_config(home, llm_server.url)
    llm_server.reply('{"tasks": [{"action": "ship it\n today\tnow"}]}')  # a literal newline and tab, as llama.cpp sends
    llm_server.reply("{'tasks': []}")  # not JSON: single quotes stay refused
    result = structured(home, json_schema=TASKS)
    assert (result.content_type, result.parsed) == ("json", {"tasks": [{"action": "ship it\n today\tnow"}]})
    assert structured(home, json_schema=TASKS).content_type == "text"


def test_json_failing_the_schema_is_a_value_error_naming_the_path(home: Path, llm_server: ScriptedServer) -> None:
    llm_config(home, llm_server.url)
    llm_server.reply_json({"tasks": [{"action": "ok"}, {"owner": "Ana"}]})
    with pytest.raises(PluginLlmSchemaError, match=r"\$\.tasks\[1\]") as caught:
        structured(home, json_schema=TASKS)
    assert isinstance(caught.value, ValueError)
    assert caught.value.path == "$.tasks[1]" and "owner" in caught.value.text
    assert "outcome=error:PluginLlmSchemaError" in audit_lines(home)[-1]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"instructions": "  "}, "instructions"),
        ({"input": []}, "input"),
        ({"input": "just a string"}, "input"),
        ({"input": [{"type": "text"}]}, r"input\[0\].*text"),
        ({"input": [{"type": "image", "data": "not bytes", "mime_type": "image/png"}]}, r"input\[0\].*data"),
        ({"input": [{"type": "image", "data": b"x", "mime_type": "text/plain"}]}, "mime_type"),
        ({"input": [{"type": "audio"}]}, "type 'audio'"),
        ({"json_schema": {"type": "objekt"}}, "not a valid JSON Schema"),
        ({"json_schema": ["not", "a", "dict"]}, "json_schema must be a dict"),
    ],
)
def test_bad_structured_input_is_a_value_error_before_any_request(
    home: Path, llm_server: ScriptedServer, kwargs: dict[str, Any], message: str
) -> None:
    llm_config(home, llm_server.url)
    with pytest.raises(ValueError, match=message):
        structured(home, **kwargs)
    assert llm_server.requests == []


def test_image_blocks_are_sent_as_base64_data_urls_or_urls(home: Path, llm_server: ScriptedServer) -> None:
    llm_config(home, llm_server.url)
    llm_server.reply_json({"ok": True})
    png = b"\x89PNG fake bytes"
    structured(home, input=[{"type": "text", "text": "what is this"},
                            {"type": "image", "data": png, "mime_type": "image/png"},
                            {"type": "image", "url": "https://example.invalid/cat.jpg"}])
    parts = llm_server.requests[0].messages[-1]["content"]
    assert parts[0] == {"type": "text", "text": "Extract tasks."}
    assert parts[2] == {"type": "image_url",
                        "image_url": {"url": "data:image/png;base64," + base64.b64encode(png).decode()}}
    assert parts[3] == {"type": "image_url", "image_url": {"url": "https://example.invalid/cat.jpg"}}


def test_acomplete_structured(home: Path, llm_server: ScriptedServer) -> None:
    llm_config(home, llm_server.url)
    llm_server.reply_json({"tasks": []})
    llm = plugin_ctx(home).llm
    result = asyncio.run(llm.acomplete_structured(instructions="x", input=[{"type": "text", "text": "y"}],
                                                  json_schema=TASKS))
    assert result.parsed == {"tasks": []}


# -- usage and cost -------------------------------------------------------------------------


def test_cost_comes_from_the_provider_then_the_price_table_then_none(home: Path, llm_server: ScriptedServer) -> None:
    llm_config(home, llm_server.url, "  pricing:\n    priced-model: {input: 2.0, output: 10.0, cache_read: 0.5}\n")
    llm = plugin_ctx(home).llm
    llm_server.reply("a", usage={"prompt_tokens": 100, "completion_tokens": 10, "cost": 0.0123})
    assert llm.complete(USER).usage.cost_usd == 0.0123
    llm_server.reply("b", model="priced-model", usage={
        "prompt_tokens": 1000, "completion_tokens": 100, "prompt_tokens_details": {"cached_tokens": 400}})
    usage = llm.complete(USER).usage
    assert usage.cache_read_tokens == 400
    assert usage.cost_usd == pytest.approx((600 * 2.0 + 100 * 10.0 + 400 * 0.5) / 1e6)
    llm_server.reply("c", model="unpriced")
    assert llm.complete(USER).usage.cost_usd is None


# -- provider resolution, credentials -------------------------------------------------------


def test_no_model_configured_is_a_clear_error(home: Path) -> None:
    with pytest.raises(LlmConfigError, match=r"model\.provider is not set"):
        plugin_ctx(home).llm.complete(USER)


def test_custom_needs_a_base_url_and_unknown_providers_are_named(home: Path) -> None:
    (home / "config.yaml").write_text("model: {provider: custom, model: m}\n")
    with pytest.raises(LlmConfigError, match=r"model\.base_url is required"):
        plugin_ctx(home).llm.complete(USER)
    (home / "config.yaml").write_text("model: {provider: acme, model: m}\n")
    with pytest.raises(LlmConfigError, match="'acme'.*known: openrouter, openai, anthropic, custom"):
        plugin_ctx(home).llm.complete(USER)


def test_custom_server_needing_no_key_works_without_one(home: Path, llm_server: ScriptedServer) -> None:
    llm_config(home, llm_server.url)
    llm_server.reply("keyless")
    assert plugin_ctx(home).llm.complete(USER).text == "keyless"


def test_custom_key_comes_from_api_key_env(home: Path, llm_server: ScriptedServer, monkeypatch: pytest.MonkeyPatch) -> None:
    llm_config(home, llm_server.url, "  api_key_env: LOCAL_LLM_KEY\n")
    monkeypatch.setenv("LOCAL_LLM_KEY", "sk-local-1")
    llm_server.reply("ok")
    plugin_ctx(home).llm.complete(USER)
    assert llm_server.requests[0].api_key == "sk-local-1"


def test_hosted_provider_key_from_env_then_auth_json(home: Path, llm_server: ScriptedServer,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    (home / "config.yaml").write_text(f"model: {{provider: openrouter, model: x/y, base_url: '{llm_server.url}'}}\n")
    llm = plugin_ctx(home).llm
    with pytest.raises(LlmConfigError, match="no credentials for provider 'openrouter'.*OPENROUTER_API_KEY"):
        llm.complete(USER)
    (home / "auth.json").write_text(json.dumps({"providers": {"openrouter": {"api_key": "sk-or-file"}}}))
    llm_server.always("ok")
    assert llm.complete(USER).provider == "openrouter"
    monkeypatch.setenv("OPENROUTER_API_KEY", "sk-or-env")
    llm.complete(USER)
    assert [r.api_key for r in llm_server.requests] == ["sk-or-file", "sk-or-env"]


def test_credential_pool_rotates_on_401_and_429_and_remembers(home: Path, llm_server: ScriptedServer) -> None:
    (home / "config.yaml").write_text(f"model: {{provider: openai, model: gpt-x, base_url: '{llm_server.url}'}}\n")
    (home / "auth.json").write_text(json.dumps({"providers": {"openai": {"api_keys": ["sk-a", "sk-b", "sk-c"]}}}))
    llm = plugin_ctx(home).llm
    llm_server.fail(401, "bad key").fail(429, "quota").reply("third key works").reply("again")
    assert llm.complete(USER).text == "third key works"
    assert llm.complete(USER).text == "again"
    assert [r.api_key for r in llm_server.requests] == ["sk-a", "sk-b", "sk-c", "sk-c"]


def test_rejected_credentials_raise_without_showing_the_key(home: Path, llm_server: ScriptedServer,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    (home / "config.yaml").write_text(f"model: {{provider: anthropic, model: claude, base_url: '{llm_server.url}'}}\n")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-secret-123")
    llm_server.fail(401, "Incorrect API key provided: sk-ant-secret-123")
    with pytest.raises(LlmProviderError, match="anthropic rejected its credentials; check ANTHROPIC_API_KEY") as caught:
        plugin_ctx(home).llm.complete(USER)
    assert "sk-ant-secret-123" not in str(caught.value) and caught.value.status_code == 401


def test_a_providers_huge_error_message_is_cut_with_a_marker(home: Path, llm_server: ScriptedServer) -> None:
    (home / "config.yaml").write_text(f"model: {{provider: custom, model: m, base_url: '{llm_server.url}'}}\n")
    llm_server.fail(400, "bad request " + "x" * 10_000)
    with pytest.raises(LlmProviderError) as caught:
        plugin_ctx(home).llm.complete(USER)
    message = str(caught.value)
    assert "…(10,012 chars)" in message and len(message) < 1_000, message[:400]


def test_auth_profile_picks_that_profiles_key(home: Path, llm_server: ScriptedServer) -> None:
    (home / "config.yaml").write_text(
        f"model: {{provider: openai, model: gpt-x, base_url: '{llm_server.url}'}}\n"
        "plugins: {entries: {probe: {llm: {allow_profile_override: true}}}}\n"
    )
    (home / "auth.json").write_text(json.dumps({
        "providers": {"openai": {"api_key": "sk-default"}}, "profiles": {"work": {"openai": {"api_key": "sk-work"}}}}))
    llm = plugin_ctx(home).llm
    llm_server.always("ok")
    assert llm.complete(USER, profile="work").audit["profile"] == "work"
    assert llm_server.requests[0].api_key == "sk-work"
    with pytest.raises(LlmConfigError, match="auth profile 'home' is not in .*profiles: work"):
        llm.complete(USER, profile="home")


def test_malformed_auth_json_is_reported_without_its_contents(home: Path, llm_server: ScriptedServer) -> None:
    (home / "config.yaml").write_text(f"model: {{provider: openai, model: m, base_url: '{llm_server.url}'}}\n")
    (home / "auth.json").write_text('{"providers": {"openai": {"api_key": "sk-half-written')
    with pytest.raises(LlmConfigError, match="auth.json is not valid JSON") as caught:
        plugin_ctx(home).llm.complete(USER)
    assert "sk-half" not in str(caught.value)


def test_agent_id_uses_that_agents_model(home: Path, llm_server: ScriptedServer) -> None:
    llm_config(home, llm_server.url, textwrap.dedent(f"""\
        agents:
          reviewer: {{model: {{provider: custom, model: review-model, base_url: '{llm_server.url_for("rev")}'}}}}
        plugins: {{entries: {{probe: {{llm: {{allow_agent_id_override: true}}}}}}}}
    """))
    llm_server.always("reviewed")
    result = plugin_ctx(home).llm.complete(USER, agent_id="reviewer")
    assert (result.agent_id, result.model) == ("reviewer", "review-model")
    assert llm_server.requests[0].path == "/rev/v1/chat/completions"
    with pytest.raises(LlmConfigError, match="agent 'writer' is not configured.*configured: reviewer"):
        plugin_ctx(home).llm.complete(USER, agent_id="writer")


# -- fallback --------------------------------------------------------------------------------


def fallback_config(home: Path, server: ScriptedServer, extra: str = "") -> None:
    (home / "config.yaml").write_text(
        "model:\n"
        f"  provider: custom\n  model: primary\n  base_url: {server.url_for('a')}\n"
        "  fallback:\n"
        f"    - {{provider: custom, model: backup, base_url: '{server.url_for('b')}'}}\n" + extra
    )


def paths(server: ScriptedServer) -> list[str]:
    return [r.path.split("/")[1] for r in server.requests]


@pytest.mark.parametrize(
    "fault",
    [
        lambda s: s.fail(503, "overloaded"),
        lambda s: s.fail(500),
        lambda s: s.fail(429, "rate limited"),
        lambda s: s.drop(),
        lambda s: s.malformed(),
        lambda s: s.reply("too late", delay=2.0),
    ],
    ids=["503", "500", "429", "dropped", "malformed", "timeout"],
)
def test_outages_fall_back_and_the_result_says_who_answered(home: Path, llm_server: ScriptedServer, fault: Any) -> None:
    fallback_config(home, llm_server, "auxiliary: {plugin_llm: {timeout: 0.5}}\n")
    fault(llm_server)
    llm_server.reply("from backup")
    result = plugin_ctx(home).llm.complete(USER)
    assert (result.text, result.model) == ("from backup", "backup")
    assert paths(llm_server) == ["a", "b"]
    assert "attempts=2 outcome=ok" in audit_lines(home)[-1]


def test_other_4xx_raise_at_once_without_fallback(home: Path, llm_server: ScriptedServer) -> None:
    fallback_config(home, llm_server)
    llm_server.fail(400, "context too long").reply("never")
    with pytest.raises(LlmProviderError, match="custom/primary refused the request.*HTTP 400: context too long") as caught:
        plugin_ctx(home).llm.complete(USER)
    assert caught.value.status_code == 400
    assert paths(llm_server) == ["a"]


def test_every_provider_failing_lists_each_attempt(home: Path, llm_server: ScriptedServer) -> None:
    fallback_config(home, llm_server)
    llm_server.fail(503, "down").fail(502, "also down")
    with pytest.raises(LlmProviderError, match="every provider failed") as caught:
        plugin_ctx(home).llm.complete(USER)
    assert caught.value.attempts == ("custom/primary: HTTP 503: down", "custom/backup: HTTP 502: also down")
    assert (caught.value.provider, caught.value.model) == ("custom", "backup")


def test_short_retry_after_is_waited_for_on_the_same_provider(home: Path, llm_server: ScriptedServer) -> None:
    fallback_config(home, llm_server)
    llm_server.fail(429, retry_after=0.3).reply("after waiting")
    result = plugin_ctx(home).llm.complete(USER)
    assert (result.text, result.model) == ("after waiting", "primary")
    assert paths(llm_server) == ["a", "a"]
    first, second = llm_server.requests
    assert second.received_at - first.received_at >= 0.3


def test_retry_after_beyond_the_cap_falls_back_at_once(home: Path, llm_server: ScriptedServer) -> None:
    fallback_config(home, llm_server, "auxiliary: {plugin_llm: {retry_after_cap: 1}}\n")
    llm_server.fail(503, retry_after=120).reply("backup")
    assert plugin_ctx(home).llm.complete(USER).model == "backup"
    assert paths(llm_server) == ["a", "b"]


def test_async_calls_fall_back_too(home: Path, llm_server: ScriptedServer) -> None:
    fallback_config(home, llm_server)
    llm_server.fail(503).reply("async backup")
    result = asyncio.run(plugin_ctx(home).llm.acomplete(USER))
    assert result.model == "backup"


# -- timeouts ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("config", "kwargs", "seconds"),
    [
        ("auxiliary: {timeout: 5, plugin_llm: {timeout: 5}}\n", {"timeout": 0.3}, "0.3"),
        ("auxiliary: {timeout: 5, plugin_llm: {timeout: 0.4}}\n", {}, "0.4"),
        ("auxiliary: {timeout: 0.35}\n", {}, "0.35"),
    ],
    ids=["argument", "plugin_llm", "auxiliary"],
)
def test_timeout_precedence(home: Path, llm_server: ScriptedServer, config: str, kwargs: dict[str, Any],
                            seconds: str) -> None:
    llm_config(home, llm_server.url, config)
    llm_server.reply("slow", delay=1.5)
    with pytest.raises(LlmProviderError, match=f"timed out after {seconds} s"):
        plugin_ctx(home).llm.complete(USER, **kwargs)


def test_default_timeout_is_long_enough_for_a_slow_reply(home: Path, llm_server: ScriptedServer) -> None:
    llm_config(home, llm_server.url)
    llm_server.reply("slow but fine", delay=0.5)
    assert plugin_ctx(home).llm.complete(USER).text == "slow but fine"


# -- vision ---------------------------------------------------------------------------------


IMAGE = [{"type": "image", "data": b"img", "mime_type": "image/jpeg"}]


def test_images_to_a_text_only_model_go_to_the_vision_model(home: Path, llm_server: ScriptedServer) -> None:
    vision = f"{{provider: custom, model: seer, base_url: '{llm_server.url_for('vision')}'}}"
    llm_config(home, llm_server.url, f"  supports_vision: false\nauxiliary:\n  vision: {vision}\n", model="text-only")
    llm_server.always('{"label": "cat"}')
    ctx = plugin_ctx(home)
    result = ctx.llm.complete_structured(instructions="Label it", input=IMAGE, json_mode=True)
    assert (result.model, result.parsed) == ("seer", {"label": "cat"})
    assert llm_server.requests[-1].path == "/vision/v1/chat/completions"
    assert ctx.llm.complete(USER).model == "text-only"  # text still goes to the main model


def test_images_without_a_vision_model_are_a_clear_error(home: Path, llm_server: ScriptedServer) -> None:
    llm_config(home, llm_server.url, "  supports_vision: false\n")
    with pytest.raises(LlmConfigError, match="text-only.*set auxiliary.vision.provider and auxiliary.vision.model"):
        plugin_ctx(home).llm.complete_structured(instructions="Label it", input=IMAGE)
    assert llm_server.requests == []


def test_images_to_an_unmarked_model_go_to_it(home: Path, llm_server: ScriptedServer) -> None:
    llm_config(home, llm_server.url)
    llm_server.reply("a cat")
    messages = [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:image/png;base64,AA=="}}]}]
    assert plugin_ctx(home).llm.complete(messages).model == "scripted-model"


# -- audit ----------------------------------------------------------------------------------


def test_one_audit_line_per_call_sync_and_async(home: Path, llm_server: ScriptedServer) -> None:
    llm_config(home, llm_server.url)
    llm_server.always("ok")
    llm = plugin_ctx(home, "auditor").llm
    llm.complete(USER, purpose="sync call")

    async def twice() -> None:
        await asyncio.gather(llm.acomplete(USER, purpose="a1"), llm.acomplete(USER, purpose="a2"))

    asyncio.run(twice())
    lines = audit_lines(home)
    assert len(lines) == 3
    first = lines[0]
    for field in ("INFO plugin_llm", "plugin=auditor", "provider=custom", "model=scripted-model",
                  'purpose="sync call"', "tokens_in=2", "tokens_out=1", "latency_ms=", "outcome=ok"):
        assert field in first
    assert sorted(line.split("purpose=")[1].split()[0] for line in lines[1:]) == ["a1", "a2"]


def test_failed_calls_are_audited_with_their_outcome(home: Path, llm_server: ScriptedServer) -> None:
    llm_config(home, llm_server.url)
    llm_server.fail(503)
    with pytest.raises(LlmProviderError):
        plugin_ctx(home).llm.complete(USER, purpose="doomed")
    assert "purpose=doomed" in audit_lines(home)[-1]
    assert audit_lines(home)[-1].endswith("outcome=error:LlmProviderError")


def test_a_purpose_cannot_forge_an_audit_line(home: Path, llm_server: ScriptedServer) -> None:
    llm_config(home, llm_server.url)
    llm_server.reply("ok")
    plugin_ctx(home).llm.complete(USER, purpose="x\nINFO plugin_llm plugin=someone-else outcome=ok")
    assert len(audit_lines(home)) == 1
