"""`hermes run` as a subprocess: with export off it imports nothing of OpenTelemetry; with
`observability.otlp_endpoint` (or `OTEL_EXPORTER_OTLP_ENDPOINT`) it exports its trace and metrics
over OTLP/HTTP to a receiver the test runs, read back by decoding the protocol's messages."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from hermes_core.testing import ScriptedServer, tool_call
from tests.helpers import HERMES, hermes, llm_config, make_folder_plugin
from tests.helpers.api_server import KEY, Serve, call

from .receiver import Receiver, until

pytest.importorskip("opentelemetry.proto")

MODULES = """
import json, os, sys

def register(ctx):
    def seen(**kwargs):
        loaded = sorted(name for name in sys.modules if name.split(".")[0] == "opentelemetry")
        with open(os.path.join(os.environ["HERMES_HOME"], "modules.json"), "w") as out:
            json.dump(loaded, out)
    ctx.register_hook("on_session_end", seen)
    ctx.register_tool("lookup", "demo", {"name": "lookup", "parameters": {"type": "object"}},
                      lambda args, **kw: '{"found": 1}')
"""


def scripted_turn(home: Path, llm_server: ScriptedServer, extra: str = "") -> None:
    make_folder_plugin(home / "plugins", "modules", MODULES, "name: modules\n")
    llm_config(home, llm_server.url, "plugins:\n  enabled: [modules]\n" + extra)
    llm_server.reply(None, tool_calls=[tool_call("lookup", {}, call_id="c1")]).reply("Found it.")


def test_with_export_off_hermes_run_imports_nothing_of_opentelemetry(home: Path, llm_server: ScriptedServer,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [n for n in os.environ if n.startswith("OTEL_")]:
        monkeypatch.delenv(name)
    scripted_turn(home, llm_server)
    assert hermes("run", "find it").stdout.strip() == "Found it."
    assert json.loads((home / "modules.json").read_text()) == []
    assert all("traceparent" not in request.headers for request in llm_server.requests)


def test_hermes_run_exports_its_trace_over_otlp_http_to_the_configured_endpoint(
        home: Path, llm_server: ScriptedServer, receiver: Receiver) -> None:
    scripted_turn(home, llm_server, f"observability:\n  otlp_endpoint: {receiver.url}\n")
    assert hermes("run", "find it").stdout.strip() == "Found it."
    assert json.loads((home / "modules.json").read_text())  # on: the SDK is loaded
    (root,) = receiver.named("invoke_agent")
    assert root.parent_id == "" and root.service == "hermes"
    chats, tools = receiver.named("chat"), receiver.named("execute_tool")
    assert len(chats) == 2 and len(tools) == 1
    assert {span.trace_id for span in [root, *chats, *tools]} == {root.trace_id}
    assert {span.parent_id for span in [*chats, *tools]} == {root.span_id}
    assert tools[0].attributes["gen_ai.tool.name"] == "lookup" and tools[0].attributes["hermes.plugin.id"] == "modules"
    assert chats[1].attributes["gen_ai.usage.output_tokens"] > 0
    traceparents = [request.headers["traceparent"] for request in llm_server.requests]
    assert [value.split("-")[2] for value in traceparents] == [chat.span_id for chat in chats]
    assert {"gen_ai.client.token.usage", "gen_ai.client.operation.duration", "hermes.tool.calls"} <= \
        receiver.metric_names


def test_the_standard_otel_variables_turn_export_on_name_the_service_and_leave_a_signal_out(
        home: Path, llm_server: ScriptedServer, receiver: Receiver, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url)
    monkeypatch.setenv("OTEL_SERVICE_NAME", "support-agent")
    monkeypatch.setenv("OTEL_METRICS_EXPORTER", "none")  # a backend that takes traces only
    scripted_turn(home, llm_server)
    assert hermes("run", "find it").stdout.strip() == "Found it."
    (root,) = receiver.named("invoke_agent")
    assert root.service == "support-agent" and receiver.metric_names == set()
    monkeypatch.setenv("OTEL_SDK_DISABLED", "true")
    scripted_turn(home, llm_server)
    assert hermes("run", "find it").stdout.strip() == "Found it."
    assert json.loads((home / "modules.json").read_text()) == [] and len(receiver.named("invoke_agent")) == 1


CALLER_TRACE, CALLER_SPAN = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"


def test_hermes_serve_continues_the_callers_traceparent_down_to_the_model_request(
        home: Path, llm_server: ScriptedServer, receiver: Receiver, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("API_SERVER_KEY", KEY)
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "50")  # export each span soon: the server is killed after
    scripted_turn(home, llm_server, f"observability:\n  otlp_endpoint: {receiver.url}\n")
    with Serve() as server:
        status, body, _ = call(f"{server.url}/chat/completions", {"model": "hermes-agent", "messages": [
            {"role": "user", "content": "find it"}]}, headers={"traceparent": f"00-{CALLER_TRACE}-{CALLER_SPAN}-01"})
        assert status == 200 and body["choices"][0]["message"]["content"] == "Found it."
        until(lambda: receiver.named("POST") and len(receiver.named("chat")) == 2)
    (request,) = receiver.named("POST")
    assert request.name == "POST /v1/chat/completions" and request.kind == 2  # SERVER
    assert request.trace_id == CALLER_TRACE and request.parent_id == CALLER_SPAN
    assert request.attributes["http.response.status_code"] == 200
    (turn,) = receiver.named("invoke_agent")
    assert turn.trace_id == CALLER_TRACE and turn.parent_id == request.span_id
    assert turn.attributes["hermes.platform"] == "api_server"
    assert all(value.split("-")[1] == CALLER_TRACE for value in
               (r.headers["traceparent"] for r in llm_server.requests))


def test_an_mcp_call_is_one_trace_across_hermes_run_and_the_hermes_mcp_serve_it_calls(
        home: Path, tmp_path: Path, llm_server: ScriptedServer, receiver: Receiver) -> None:
    """The MCP SDK makes the `tools/call` spans itself, both ways, and carries the trace context in
    the request's `_meta`: they join the turn's trace, and the served tool's span is under them."""
    other = tmp_path / "served-home"
    make_folder_plugin(other / "plugins", "modules", MODULES, "name: modules\n")
    (other / "config.yaml").write_text(f"plugins:\n  enabled: [modules]\nobservability:\n  otlp_endpoint: {receiver.url}\n")
    entry = (f"mcp_servers:\n  inner:\n    command: {HERMES}\n    args: [mcp, serve]\n"
             f"    env: {{HERMES_HOME: '{other}', OTEL_BSP_SCHEDULE_DELAY: '50'}}\n")
    llm_config(home, llm_server.url, entry + f"observability:\n  otlp_endpoint: {receiver.url}\n")
    llm_server.reply(None, tool_calls=[tool_call("mcp__inner__lookup", {}, call_id="m1")]).reply("Found it.")
    assert hermes("run", "find it").stdout.strip() == "Found it."
    until(lambda: any(s.attributes.get("gen_ai.tool.name") == "lookup" for s in receiver.named("execute_tool")))
    (root,) = receiver.named("invoke_agent")
    tools = {span.attributes["gen_ai.tool.name"]: span for span in receiver.named("execute_tool")}
    outer, inner = tools["mcp__inner__lookup"], tools["lookup"]
    assert outer.attributes["gen_ai.tool.type"] == "extension" and outer.parent_id == root.span_id
    spans = {span.span_id: span for span in receiver.spans}
    chain = [inner]
    while chain[-1].parent_id in spans:
        chain.append(spans[chain[-1].parent_id])
    assert chain[-1] is root and outer in chain
    assert [span.kind for span in chain[1:chain.index(outer)]] == [2, 3]  # the served tools/call, the client's
    assert {span.trace_id for span in chain} == {root.trace_id}


def test_an_mcp_call_over_streamable_http_is_one_trace_too(home: Path, tmp_path: Path, llm_server: ScriptedServer,
                                                           receiver: Receiver) -> None:
    """The same across `hermes mcp serve --http`: the context goes in the message's `_meta`, and in
    the `traceparent` header of its HTTP request, so that the server's `POST /mcp` joins the trace."""
    import re
    import subprocess

    other = tmp_path / "served-home"
    make_folder_plugin(other / "plugins", "modules", MODULES, "name: modules\n")
    (other / "config.yaml").write_text(f"plugins:\n  enabled: [modules]\nobservability:\n  otlp_endpoint: {receiver.url}\n")
    env = {**os.environ, "HERMES_HOME": str(other), "HERMES_MCP_TOKEN": "s3cret", "OTEL_BSP_SCHEDULE_DELAY": "50"}
    server = subprocess.Popen([str(HERMES), "mcp", "serve", "--http", "127.0.0.1:0"], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        assert server.stderr is not None
        url = server.stderr.readline().rstrip("\n")
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+/mcp", url), url
        entry = f"mcp_servers:\n  inner:\n    url: {url}\n    headers: {{Authorization: 'Bearer s3cret'}}\n"
        llm_config(home, llm_server.url, entry + f"observability:\n  otlp_endpoint: {receiver.url}\n")
        llm_server.reply(None, tool_calls=[tool_call("mcp__inner__lookup", {}, call_id="m1")]).reply("Found it.")
        assert hermes("run", "find it").stdout.strip() == "Found it."
        until(lambda: any(s.attributes.get("gen_ai.tool.name") == "lookup" for s in receiver.named("execute_tool")))
    finally:
        server.kill()
        server.communicate(timeout=30)
    (root,) = receiver.named("invoke_agent")
    tools = {span.attributes["gen_ai.tool.name"]: span for span in receiver.named("execute_tool")}
    spans = {span.span_id: span for span in receiver.spans}
    chain = [tools["lookup"]]
    while chain[-1].parent_id in spans:
        chain.append(spans[chain[-1].parent_id])
    outer = tools["mcp__inner__lookup"]
    assert chain[-1] is root and outer in chain
    assert [span.kind for span in chain[1:chain.index(outer)]] == [2, 3]  # the served tools/call, the client's
    assert {span.trace_id for span in chain} == {root.trace_id}
    sent = chain[2]  # `MCP send tools/call lookup`: the HTTP request's span on the server is under it too
    (request,) = [span for span in receiver.named("POST /mcp") if span.parent_id == sent.span_id]
    assert request.trace_id == root.trace_id and request.kind == 2
    assert all(span.parent_id for span in receiver.named("POST /mcp"))  # none starts a trace of its own
