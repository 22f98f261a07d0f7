"""An isolated plugin (`isolation: process`) reports into the host's trace: each call to its
process carries the current span, and what the plugin makes there (`ctx.trace_span`, the tools
it dispatches, a hook callback's spans) comes back with the answer and is exported by the host with
its ids, so that the tree holds across the two processes, `ctx.llm` calls included (the host
makes them, under the plugin's span)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from hermes_core import PluginManager
from hermes_core.agent import Agent
from hermes_core.testing import ScriptedServer, tool_call
from tests.helpers import llm_config, make_folder_plugin

from .conftest import Exported
from .receiver import Receiver, until

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


METERED = """
import contextvars, json, os, threading, time

def ask(args, **kwargs):
    answer = CTX.llm.complete([{"role": "user", "content": "sub-question"}], purpose="think")
    CTX.dispatch_tool("helper", {})
    return json.dumps({"text": answer.text})

def helper(args, **kwargs):
    return "{}"

def checked(**kwargs):
    time.sleep(0.02)

def later(args, **kwargs):
    def work():
        time.sleep(float(args.get("after", 0)))
        with CTX.trace_span("asker.later"):
            CTX.dispatch_tool("helper", {})
        with open(os.path.join(os.environ["HERMES_HOME"], "later-done"), "w"):
            pass
    threading.Thread(target=contextvars.copy_context().run, args=(work,)).start()  # under the call's span
    return "started"

def register(ctx):
    global CTX
    CTX = ctx
    for name, fn in (("ask", ask), ("helper", helper), ("later", later)):
        ctx.register_tool(name, "demo", {"name": name, "parameters": {"type": "object"}}, fn)
    ctx.register_hook("pre_tool_call", checked)
"""


def metered_home(home: Path, url: str) -> None:
    make_folder_plugin(home / "plugins", "asker", METERED, "name: asker\n")
    llm_config(home, url, "plugins:\n  enabled: [asker]\n  entries:\n    asker: {isolation: process}\n")


def sums(exported: Exported, name: str, *keys: str) -> dict[tuple[Any, ...], Any]:
    return {tuple(point.attributes[key] for key in keys): point.value for point in exported.points(name)}


def test_an_isolated_plugins_process_counts_its_tool_calls_and_hook_time_into_the_hosts_meter(
        home: Path, llm_server: ScriptedServer, exported: Exported) -> None:
    """The tools the plugin dispatches in its process and the hook callbacks run there are counted
    by the host, as if they had run in it; its `ctx.llm` call (the host makes it) is measured once."""
    metered_home(home, llm_server.url)
    llm_server.reply(None, tool_calls=[tool_call("ask", {}, call_id="c1")]).reply(
        "two words", usage={"prompt_tokens": 7, "completion_tokens": 2}).reply("Done.")
    manager = PluginManager()
    with Agent(manager) as agent:
        assert agent.ask("go").text == "Done."
    calls = sums(exported, "hermes.tool.calls", "gen_ai.tool.name", "hermes.plugin.id", "hermes.tool.outcome")
    assert calls == {("ask", "asker", "ok"): 1, ("helper", "asker", "ok"): 1}  # helper: in the plugin's process
    assert all(type(count) is int for count in calls.values()), calls  # a count, not a double, however it came
    hooks = sums(exported, "hermes.hook.calls", "hermes.hook.name", "hermes.plugin.id")
    assert hooks[("pre_tool_call", "asker")] == 2  # the host's call of its stand-in (ask), the process's own (helper)
    spent = sums(exported, "hermes.hook.time", "hermes.hook.name", "hermes.plugin.id")
    assert spent[("pre_tool_call", "asker")] >= 0.04  # each call slept 0.02 s
    asked = [point for point in exported.points("gen_ai.client.token.usage")
             if point.attributes["hermes.llm.budget_holder"] == "asker"]
    assert sorted((p.attributes["gen_ai.token.type"], p.count, p.sum) for p in asked) == [
        ("input", 1, 7), ("output", 1, 2)]
    manager.remove_plugin("asker")


def test_spans_a_plugins_thread_ends_after_its_call_answered_reach_the_host_without_another_call(
        home: Path, llm_server: ScriptedServer, exported: Exported) -> None:
    metered_home(home, llm_server.url)
    manager = PluginManager()
    manager.load()
    with exported.root("turn"):
        assert manager.dispatch_tool("later", {"after": 0.3}) == "started"
    until(lambda: exported.named("asker.later"), timeout=20)  # sent by itself, no next answer to carry it
    (late,) = exported.named("asker.later")
    (tool,) = [span for span in exported.named("execute_tool") if span.attributes["gen_ai.tool.name"] == "later"]
    assert late.parent.span_id == tool.context.span_id and late.context.trace_id == tool.context.trace_id
    until(lambda: ("helper", "asker", "ok") in sums(exported, "hermes.tool.calls", "gen_ai.tool.name",
                                                    "hermes.plugin.id", "hermes.tool.outcome"))
    manager.remove_plugin("asker")


def test_what_a_plugins_process_ended_last_is_exported_when_the_plugin_is_removed(
        home: Path, llm_server: ScriptedServer, exported: Exported) -> None:
    metered_home(home, llm_server.url)
    manager = PluginManager()
    manager.load()
    with exported.root("turn"):
        assert manager.dispatch_tool("later", {}) == "started"
    until(lambda: (home / "later-done").exists())
    manager.remove_plugin("asker")  # at once: its process sends what is left as it exits
    (late,) = exported.named("asker.later")
    assert late.context.trace_id == exported.named("turn")[0].context.trace_id


HOST = """
import os, time
from hermes_core import PluginManager

manager = PluginManager().load()
print(manager.dispatch_tool("later", {}), flush=True)
while not os.path.exists(os.path.join(os.environ["HERMES_HOME"], "later-done")):
    time.sleep(0.01)
"""  # and exits at once


def test_what_a_plugins_process_ended_last_is_exported_when_the_host_exits(
        home: Path, llm_server: ScriptedServer, receiver: Receiver, monkeypatch: pytest.MonkeyPatch) -> None:
    """A host that exits right after a plugin's thread ended a span: the plugin's process is closed
    before the SDK's last export, and sends the span as it exits."""
    metered_home(home, llm_server.url)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url)
    monkeypatch.setenv("OTEL_METRICS_EXPORTER", "none")
    host = subprocess.run([sys.executable, "-c", HOST], capture_output=True, text=True, timeout=120)
    assert host.returncode == 0 and host.stdout.strip() == "started", host.stderr
    (late,) = receiver.named("asker.later")
    (tool,) = receiver.named("execute_tool later")
    assert late.parent_id == tool.span_id and late.trace_id == tool.trace_id
