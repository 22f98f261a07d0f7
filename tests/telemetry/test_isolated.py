"""An isolated plugin (`isolation: process`) reports into the host's trace: each call to its
process carries the current span, and what the plugin makes there (`ctx.trace_span`, the tools
it dispatches, a hook callback's spans) comes back with the answer and is exported by the host with
its ids, so that the tree holds across the two processes, `ctx.llm` calls included (the host
makes them, under the plugin's span)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from hermes_core import PluginManager
from hermes_core.agent import Agent
from hermes_core.testing import ScriptedServer, tool_call
from tests.helpers import llm_config, make_folder_plugin

from .conftest import Exported

ISOLATED = """
import json, os, sys, time

def ask(args, **kwargs):
    loaded = sorted(name for name in sys.modules if name.split(".")[0] == "opentelemetry")
    with open(os.path.join(os.environ["HERMES_HOME"], "child-modules.json"), "w") as out:
        json.dump(loaded, out)
    with CTX.trace_span("asker.think", pid=os.getpid()) as span:
        answer = CTX.llm.complete([{"role": "user", "content": "sub-question"}], purpose="think")
        helped = json.loads(CTX.dispatch_tool("helper", {}))
        span.event("asker.done", words=len(answer.text.split()))
    return json.dumps({"text": answer.text, "helper": helped["pid"]})

def helper(args, **kwargs):
    return json.dumps({"pid": os.getpid()})

def noted(**kwargs):
    with CTX.trace_span("asker.noted"):
        time.sleep(0.03)

def broken(args, **kwargs):
    with CTX.trace_span("asker.broken"):
        raise RuntimeError("no disk")

def register(ctx):
    global CTX
    CTX = ctx
    ctx.register_tool("ask", "demo", {"name": "ask", "parameters": {"type": "object"}}, ask)
    ctx.register_tool("helper", "demo", {"name": "helper", "parameters": {"type": "object"}}, helper)
    ctx.register_tool("broken", "demo", {"name": "broken", "parameters": {"type": "object"}}, broken)
    ctx.register_hook("post_llm_call", noted)
"""


def isolated_home(home: Path, url: str) -> None:
    make_folder_plugin(home / "plugins", "asker", ISOLATED, "name: asker\n")
    llm_config(home, url, "plugins:\n  enabled: [asker]\n  entries:\n    asker: {isolation: process}\n"
                          "observability:\n  slow_hook: 0.01\n")


def test_an_isolated_plugins_spans_are_in_the_hosts_trace_under_the_tool_call(
        home: Path, llm_server: ScriptedServer, exported: Exported) -> None:
    isolated_home(home, llm_server.url)
    llm_server.reply(None, tool_calls=[tool_call("ask", {}, call_id="c1")]).reply("two words").reply("Done.")
    manager = PluginManager()
    with Agent(manager) as agent:
        assert agent.ask("go").text == "Done."
    (root,) = exported.named("invoke_agent")
    tools = {span.attributes["gen_ai.tool.name"]: span for span in exported.named("execute_tool")}
    assert set(tools) == {"ask", "helper"}  # one span for the call the host sent, none twice
    ask, helper = tools["ask"], tools["helper"]
    assert ask.parent.span_id == root.context.span_id and ask.attributes["hermes.plugin.id"] == "asker"
    (own,) = exported.named("asker.think")
    assert own.parent.span_id == ask.context.span_id and own.context.trace_id == root.context.trace_id
    assert own.attributes["hermes.plugin.id"] == "asker" and own.attributes["pid"] != os.getpid()  # made there
    assert [(event.name, dict(event.attributes)) for event in own.events] == [("asker.done", {"words": 2})]
    assert helper.parent.span_id == own.context.span_id and helper.attributes["hermes.tool.outcome"] == "ok"
    (inner,) = [span for span in exported.named("chat") if span.parent.span_id == own.context.span_id]
    assert inner.attributes["hermes.plugin.id"] == "asker" and inner.attributes["hermes.llm.budget_holder"] == "asker"
    (noted,) = exported.named("asker.noted")  # the hook callback's own span, under the turn's
    assert noted.parent.span_id == root.context.span_id and noted.context.trace_id == root.context.trace_id
    (hook,) = exported.named("hook post_llm_call")  # the host's span of the slow callback, around it
    assert hook.attributes["hermes.plugin.id"] == "asker" and hook.attributes["hermes.hook.outcome"] == "ok"
    assert own.start_time >= ask.start_time and own.end_time <= ask.end_time
    manager.remove_plugin("asker")


def test_an_isolated_tool_that_raises_has_its_failed_span_exported_and_is_counted_as_an_error(
        home: Path, llm_server: ScriptedServer, exported: Exported) -> None:
    isolated_home(home, llm_server.url)
    manager = PluginManager()
    manager.load()
    assert "no disk" in json.loads(manager.dispatch_tool("broken", {}))["error"]
    (tool,) = exported.named("execute_tool")
    (own,) = exported.named("asker.broken")
    assert own.parent.span_id == tool.context.span_id and own.status.status_code.name == "ERROR"
    assert [event.name for event in own.events] == ["exception"]
    assert tool.attributes["hermes.tool.outcome"] == "error"
    calls = {(p.attributes["gen_ai.tool.name"], p.attributes["hermes.plugin.id"], p.attributes["hermes.tool.outcome"]):
             p.value for p in exported.points("hermes.tool.calls")}
    assert calls == {("broken", "asker", "error"): 1}  # the errors, by tool and plugin
    manager.remove_plugin("asker")


def test_with_export_off_an_isolated_plugins_process_makes_no_span(home: Path, llm_server: ScriptedServer) -> None:
    isolated_home(home, llm_server.url)
    llm_server.reply(None, tool_calls=[tool_call("ask", {}, call_id="c1")]).reply("two words").reply("Done.")
    manager = PluginManager()
    with Agent(manager) as agent:
        assert agent.ask("go").text == "Done."
    assert all("traceparent" not in request.headers for request in llm_server.requests)
    assert json.loads((home / "child-modules.json").read_text()) == []  # nothing of OpenTelemetry there either
    manager.remove_plugin("asker")
