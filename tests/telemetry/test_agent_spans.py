"""The spans and metrics of one agent turn (`Agent`, as `hermes run` runs it) in a process that set
up the OpenTelemetry SDK: `invoke_agent` over its `chat` and `execute_tool` spans, with the GenAI
semantic conventions' attributes; a slow hook callback's span; contents only when asked for."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hermes_core import PluginLlmBudgetError, PluginManager
from hermes_core.agent import Agent
from hermes_core.testing import ScriptedServer, tool_call
from tests.helpers import llm_config, make_folder_plugin, plugin_ctx

from .conftest import Exported

PLUGIN = """
import time

def lookup(args, **kwargs):
    return '{"found": "api_key=sk-abcdefghijklmnopqrstuvwx"}'

def slow(**kwargs):
    time.sleep(0.05)

def guard(tool_name, **kwargs):
    if tool_name == "forbidden":
        return {"action": "block", "message": "not this one"}

def register(ctx):
    ctx.register_tool("lookup", "demo", {"name": "lookup", "parameters": {"type": "object"}}, lookup)
    ctx.register_tool("forbidden", "demo", {"name": "forbidden", "parameters": {"type": "object"}},
                      lambda args, **kw: "ran")
    ctx.register_hook("post_llm_call", slow)
    ctx.register_hook("pre_tool_call", guard)
"""


def agent_home(home: Path, url: str, extra: str = "") -> PluginManager:
    make_folder_plugin(home / "plugins", "demo", PLUGIN, "name: demo\n")
    llm_config(home, url, "plugins:\n  enabled: [demo]\nobservability:\n  slow_hook: 0.01\n" + extra)
    return PluginManager()


def turn(llm_server: ScriptedServer, manager: PluginManager) -> str:
    llm_server.reply(None, tool_calls=[tool_call("lookup", {"q": "x"}, call_id="c1"),
                                       tool_call("forbidden", {}, call_id="c2")],
                     usage={"prompt_tokens": 100, "completion_tokens": 7, "total_tokens": 107})
    llm_server.reply("Found it.", usage={"prompt_tokens": 130, "completion_tokens": 3, "total_tokens": 133})
    with Agent(manager) as agent:
        assert agent.ask("find it").text == "Found it."
        return agent.session_id


def test_a_turn_is_one_trace_of_invoke_agent_over_its_model_and_tool_calls(
        home: Path, llm_server: ScriptedServer, exported: Exported) -> None:
    session_id = turn(llm_server, agent_home(home, llm_server.url))
    (root,) = exported.named("invoke_agent")
    assert root.name == "invoke_agent hermes" and root.parent is None
    assert root.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert root.attributes["gen_ai.conversation.id"] == session_id
    assert root.attributes["gen_ai.usage.input_tokens"] == 230 and root.attributes["gen_ai.usage.output_tokens"] == 10
    chats = exported.named("chat")
    assert [span.name for span in chats] == ["chat scripted-model"] * 2
    assert all(span.parent.span_id == root.context.span_id for span in chats)
    first = chats[0].attributes
    assert first["gen_ai.operation.name"] == "chat" and first["gen_ai.request.model"] == "scripted-model"
    assert first["gen_ai.provider.name"] == "custom" and first["gen_ai.usage.input_tokens"] == 100
    assert first["gen_ai.usage.output_tokens"] == 7 and first["gen_ai.response.finish_reasons"] == ("tool_calls",)
    assert first["hermes.llm.budget_holder"] and "hermes.plugin.id" not in first  # the host's own call
    tools = {span.attributes["gen_ai.tool.name"]: span for span in exported.named("execute_tool")}
    assert set(tools) == {"lookup", "forbidden"}
    lookup, forbidden = tools["lookup"], tools["forbidden"]
    assert lookup.parent.span_id == root.context.span_id and lookup.name == "execute_tool lookup"
    assert lookup.attributes["hermes.plugin.id"] == "demo" and lookup.attributes["gen_ai.tool.call.id"] == "c1"
    assert lookup.attributes["hermes.tool.outcome"] == "ok" and lookup.attributes["gen_ai.tool.type"] == "function"
    assert forbidden.attributes["hermes.tool.outcome"] == "blocked"
    assert [event.name for event in forbidden.events] == ["hermes.tool.blocked"]
    (hook,) = exported.named("hook")  # only the slow callback: the guard is quick
    assert hook.name == "hook post_llm_call" and hook.attributes["hermes.plugin.id"] == "demo"
    assert hook.attributes["hermes.hook.outcome"] == "ok" and hook.parent.span_id == root.context.span_id
    assert (hook.end_time - hook.start_time) >= 0.04e9


def test_contents_are_recorded_only_when_asked_and_never_a_secret(
        home: Path, llm_server: ScriptedServer, exported: Exported) -> None:
    turn(llm_server, agent_home(home, llm_server.url))
    for span in exported.finished():
        assert not any(key in span.attributes for key in (
            "gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.tool.call.arguments", "gen_ai.tool.call.result"))
    exported.spans.clear()
    turn(llm_server, agent_home(home, llm_server.url, "  record_content: true\n"))
    (root,) = exported.named("invoke_agent")
    assert json.loads(root.attributes["gen_ai.input.messages"])[0]["parts"][0]["content"] == "find it"
    assert "Found it." in root.attributes["gen_ai.output.messages"]
    lookup = next(s for s in exported.named("execute_tool") if s.attributes["gen_ai.tool.name"] == "lookup")
    assert json.loads(lookup.attributes["gen_ai.tool.call.arguments"]) == {"q": "x"}
    assert "[REDACTED]" in lookup.attributes["gen_ai.tool.call.result"]
    assert all("sk-abcdefghijklmnop" not in str(dict(span.attributes)) for span in exported.finished())
    assert "find it" in exported.named("chat")[0].attributes["gen_ai.input.messages"]


def test_the_model_request_carries_the_trace_on_in_a_traceparent_header(
        home: Path, llm_server: ScriptedServer, exported: Exported) -> None:
    turn(llm_server, agent_home(home, llm_server.url))
    chats = exported.named("chat")
    for request, chat in zip(llm_server.requests, chats):
        version, trace_id, span_id, flags = request.headers["traceparent"].split("-")
        assert int(trace_id, 16) == chat.context.trace_id and int(span_id, 16) == chat.context.span_id


def test_the_metrics_count_tokens_durations_tools_and_hook_time(
        home: Path, llm_server: ScriptedServer, exported: Exported) -> None:
    turn(llm_server, agent_home(home, llm_server.url))
    tokens = {point.attributes["gen_ai.token.type"]: point.sum for point in exported.points("gen_ai.client.token.usage")}
    assert tokens == {"input": 230, "output": 10}
    durations = exported.points("gen_ai.client.operation.duration")
    assert sum(point.count for point in durations) == 2
    assert {point.attributes["gen_ai.operation.name"] for point in durations} == {"chat"}
    calls = {(p.attributes["gen_ai.tool.name"], p.attributes["hermes.plugin.id"], p.attributes["hermes.tool.outcome"]):
             p.value for p in exported.points("hermes.tool.calls")}
    assert calls == {("lookup", "demo", "ok"): 1, ("forbidden", "demo", "blocked"): 1}
    hooks = {(p.attributes["hermes.hook.name"], p.attributes["hermes.plugin.id"]): p.value
             for p in exported.points("hermes.hook.calls")}
    assert hooks[("post_llm_call", "demo")] == 1 and hooks[("pre_tool_call", "demo")] == 2
    time_in = {(p.attributes["hermes.hook.name"], p.attributes["hermes.plugin.id"]): p.value
               for p in exported.points("hermes.hook.time")}
    assert time_in[("post_llm_call", "demo")] >= 0.04  # the slow callback's 50 ms


ASKER = """
def ask(args, **kwargs):
    with CTX.trace_span("asker.think", depth=2) as span:
        answer = CTX.llm.complete([{"role": "user", "content": "sub-question"}], purpose="think")
        span.set("asker.words", len(answer.text.split()))
        span.event("asker.done", ok=True)
    return answer.text

def register(ctx):
    global CTX
    CTX = ctx
    ctx.register_tool("ask", "demo", {"name": "ask", "parameters": {"type": "object"}}, ask)
"""


def test_a_plugin_adds_its_own_span_and_its_ctx_llm_call_names_the_plugin_and_its_budget_holder(
        home: Path, llm_server: ScriptedServer, exported: Exported) -> None:
    make_folder_plugin(home / "plugins", "asker", ASKER, "name: asker\n")
    llm_config(home, llm_server.url, "plugins:\n  enabled: [asker]\n")
    llm_server.reply(None, tool_calls=[tool_call("ask", {}, call_id="c1")]).reply("two words").reply("Done.")
    with Agent(PluginManager()) as agent:
        assert agent.ask("go").text == "Done."
    (tool,) = exported.named("execute_tool")
    (own,) = exported.named("asker.think")
    assert own.parent.span_id == tool.context.span_id
    assert dict(own.attributes) == {"hermes.plugin.id": "asker", "depth": 2, "asker.words": 2}
    assert [(event.name, dict(event.attributes)) for event in own.events] == [("asker.done", {"ok": True})]
    (inner,) = [span for span in exported.named("chat") if span.parent.span_id == own.context.span_id]
    assert inner.attributes["hermes.plugin.id"] == "asker" and inner.attributes["hermes.llm.budget_holder"] == "asker"


def test_without_an_sdk_or_an_endpoint_a_plugins_span_is_a_no_op(home: Path, llm_server: ScriptedServer) -> None:
    make_folder_plugin(home / "plugins", "asker", ASKER, "name: asker\n")
    llm_config(home, llm_server.url, "plugins:\n  enabled: [asker]\n")
    llm_server.reply(None, tool_calls=[tool_call("ask", {}, call_id="c1")]).reply("two words").reply("Done.")
    with Agent(PluginManager()) as agent:
        assert agent.ask("go").text == "Done."
    assert "traceparent" not in llm_server.requests[0].headers


def test_a_ctx_llm_call_refused_by_its_budget_is_a_failed_chat_span_and_counted_for_its_holder(
        home: Path, llm_server: ScriptedServer, exported: Exported) -> None:
    llm_config(home, llm_server.url, "plugins:\n  entries:\n    probe:\n      llm_budget: {tokens_per_day: 100}\n")
    with pytest.raises(PluginLlmBudgetError):
        plugin_ctx(home).llm.complete([{"role": "user", "content": "hi"}], max_tokens=500)
    (chat,) = exported.named("chat")
    assert chat.attributes["error.type"] == "refused" and chat.attributes["hermes.plugin.id"] == "probe"
    assert chat.status.status_code.name == "ERROR" and not llm_server.requests
    (refused,) = exported.points("hermes.llm.budget.refusals")
    assert dict(refused.attributes) == {"hermes.llm.budget_holder": "probe", "hermes.llm.budget": "tokens_per_day"}
    assert refused.value == 1
