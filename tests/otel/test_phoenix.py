"""End to end: a real `hermes run` exports its trace over OTLP/HTTP to Arize Phoenix, a maintained
OpenTelemetry backend the test starts, and the trace is read back through Phoenix's own REST API
(`GET /v1/projects/{project}/spans`): the span tree, the GenAI attributes, and the project the
settings route it to. Phoenix takes traces only: metrics are left out (`OTEL_METRICS_EXPORTER=none`),
as docs/observability.md says to."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from hermes_core.testing import ScriptedServer, tool_call
from tests.helpers import hermes, llm_config, make_folder_plugin
from tests.helpers.phoenix import PhoenixServer

LOOKUP = """
def register(ctx):
    ctx.register_tool("lookup", "demo", {"name": "lookup", "parameters": {"type": "object"}},
                      lambda args, **kw: '{"found": 1}')
"""

ASKER = """
import json

def ask(args, **kwargs):
    with CTX.trace_span("asker.think", topic="weather"):
        answer = CTX.llm.complete([{"role": "user", "content": "sub-question"}], purpose="think")
    return json.dumps({"text": answer.text})

def register(ctx):
    global CTX
    CTX = ctx
    ctx.register_tool("ask", "demo", {"name": "ask", "parameters": {"type": "object"}}, ask)
"""


def read_back(phoenix: PhoenixServer, project: str, count: int) -> list[dict[str, Any]]:
    """The project's spans, once Phoenix holds `count` of them (it writes what it takes in batches)."""
    deadline = time.monotonic() + 60
    while True:
        spans = phoenix.spans(project)
        if len(spans) >= count or time.monotonic() > deadline:
            return spans
        time.sleep(0.25)


def by_name(spans: list[dict[str, Any]], prefix: str) -> list[dict[str, Any]]:
    return [span for span in spans if span["name"].startswith(prefix)]


def test_hermes_run_exports_its_turn_to_phoenix_and_phoenix_reads_it_as_an_agent_trace(
        home: Path, llm_server: ScriptedServer, phoenix: PhoenixServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_METRICS_EXPORTER", "none")
    monkeypatch.setenv("OTEL_SERVICE_NAME", "support-agent")
    monkeypatch.setenv("OTEL_RESOURCE_ATTRIBUTES", "openinference.project.name=hermes-run")  # Phoenix's project
    make_folder_plugin(home / "plugins", "lookup", LOOKUP, "name: lookup\n")
    llm_config(home, llm_server.url, f"plugins:\n  enabled: [lookup]\nobservability:\n  otlp_endpoint: {phoenix.url}\n")
    llm_server.reply(None, tool_calls=[tool_call("lookup", {}, call_id="c1")]).reply(
        "Found it.", usage={"prompt_tokens": 11, "completion_tokens": 3})
    result = hermes("run", "find it")
    assert result.stdout.strip() == "Found it." and "Traceback" not in result.stderr, result.stderr
    spans = read_back(phoenix, "hermes-run", 4)
    (root,) = by_name(spans, "invoke_agent")
    chats, (tool,) = by_name(spans, "chat"), by_name(spans, "execute_tool")
    assert len(spans) == 4 and len(chats) == 2
    assert root["parent_id"] is None and {s["context"]["trace_id"] for s in spans} == {root["context"]["trace_id"]}
    assert {s["parent_id"] for s in [*chats, tool]} == {root["context"]["span_id"]}
    assert root["attributes"]["gen_ai.operation.name"] == "invoke_agent"
    assert root["attributes"]["gen_ai.conversation.id"] and root["attributes"]["hermes.platform"] == "cli"
    assert tool["attributes"]["gen_ai.tool.name"] == "lookup" and tool["attributes"]["hermes.plugin.id"] == "lookup"
    assert tool["attributes"]["gen_ai.tool.call.id"] == "c1" and tool["attributes"]["hermes.tool.outcome"] == "ok"
    last = max(chats, key=lambda span: span["start_time"])
    assert last["attributes"]["gen_ai.request.model"] == "scripted-model"
    assert last["attributes"]["gen_ai.usage.input_tokens"] == 11 and last["attributes"]["gen_ai.usage.output_tokens"] == 3
    assert last["attributes"]["gen_ai.response.finish_reasons"] == ["stop"]
    assert all(span["status_code"] != "ERROR" for span in spans)
    # Phoenix reads the GenAI conventions into its own span kinds
    assert (root["span_kind"], last["span_kind"], tool["span_kind"]) == ("AGENT", "LLM", "TOOL")
    sent = [request.headers["traceparent"].split("-")[2] for request in llm_server.requests]
    assert sorted(sent) == sorted(chat["context"]["span_id"] for chat in chats)  # the model requests carried it


def test_the_otel_variables_alone_export_an_isolated_plugins_spans_into_the_same_phoenix_trace(
        home: Path, llm_server: ScriptedServer, phoenix: PhoenixServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """The standard variables, the project named by Phoenix's header; the plugin runs in a process of
    its own, whose span and `ctx.llm` call are in the turn's trace under the host's tool call."""
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", phoenix.url)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", "x-project-name=hermes-isolated")
    monkeypatch.setenv("OTEL_METRICS_EXPORTER", "none")
    make_folder_plugin(home / "plugins", "asker", ASKER, "name: asker\n")
    llm_config(home, llm_server.url, "plugins:\n  enabled: [asker]\n  entries:\n    asker: {isolation: process}\n")
    llm_server.reply(None, tool_calls=[tool_call("ask", {}, call_id="c1")]).reply("sunny").reply("It is sunny.")
    result = hermes("run", "weather?")
    assert result.stdout.strip() == "It is sunny." and "Traceback" not in result.stderr, result.stderr
    spans = read_back(phoenix, "hermes-isolated", 6)
    (root,) = by_name(spans, "invoke_agent")
    (tool,) = by_name(spans, "execute_tool")
    (own,) = by_name(spans, "asker.think")
    assert len(spans) == 6 and {s["context"]["trace_id"] for s in spans} == {root["context"]["trace_id"]}
    assert tool["parent_id"] == root["context"]["span_id"] and own["parent_id"] == tool["context"]["span_id"]
    assert own["attributes"]["hermes.plugin.id"] == "asker" and own["attributes"]["topic"] == "weather"
    (inner,) = [chat for chat in by_name(spans, "chat") if chat["parent_id"] == own["context"]["span_id"]]
    assert inner["attributes"]["hermes.llm.budget_holder"] == "asker" and inner["span_kind"] == "LLM"
    assert phoenix.spans("default") == []  # nothing went anywhere else
