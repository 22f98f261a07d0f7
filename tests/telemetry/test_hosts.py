"""The other hosts' traces over OTLP/HTTP: a cron run and each batch item start a trace of their own,
with the turn's `invoke_agent` under it; a task handed to another ACP agent goes on in the caller's
trace; a gateway message is a turn of its own, on its platform; each turn of `hermes chat` is a
trace of the conversation; a call to `hermes mcp serve` from a client with no trace is a trace of
its own, from the MCP server's span down to the tool's."""

from __future__ import annotations

import asyncio
import datetime as dt
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from hermes_core.testing import Reply, ScriptedServer, tool_call
from tests.helpers import HERMES, hermes, llm_config, make_folder_plugin
from tests.helpers.batch import dataset, setup_home
from tests.helpers.chat import FakeChat, GatewayProcess, configure
from tests.helpers.cron import T0, cron

from .receiver import Receiver, until

pytest.importorskip("opentelemetry.proto")


@pytest.fixture
def receiver(monkeypatch: pytest.MonkeyPatch) -> Iterator[Receiver]:
    running = Receiver().start()
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", running.url)
    yield running
    running.close()


def test_a_cron_run_is_a_trace_of_its_own_over_its_turn(home: Path, llm_server: ScriptedServer, receiver: Receiver,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    llm_config(home, llm_server.url, "timezone: UTC\n")
    monkeypatch.setenv("HERMES_TIMEZONE", "UTC")
    llm_server.always("All green.")
    cron("add", "every 1h", "check the build", "--name", "build")
    assert cron("tick", when=T0 + dt.timedelta(hours=1, minutes=1)).stderr.splitlines()[-1] == "ran 1 job"
    (run,) = receiver.named("cron run")
    (turn,) = receiver.named("invoke_agent")
    assert run.name == "cron run build" and run.parent_id == "" and run.attributes["hermes.cron.job"]
    assert turn.parent_id == run.span_id and turn.attributes["hermes.platform"] == "cron"


def test_each_batch_item_is_a_trace_of_its_own_linked_to_the_batchs(home: Path, tmp_path: Path, llm_server: ScriptedServer,
                                               receiver: Receiver) -> None:
    setup_home(home, llm_server)
    data = dataset(tmp_path / "data.jsonl", [{"id": "a", "prompt": "look up apple"}, {"id": "b", "prompt": "say hi"}])
    hermes("batch", "run", str(data), "--out", str(tmp_path / "out"), "--concurrency", "2")
    (batch,) = receiver.named("batch run")
    assert batch.parent_id == "" and batch.attributes["hermes.batch.items"] == 2
    assert batch.attributes["hermes.batch.folder"] == str(tmp_path / "out")
    items = {span.attributes["hermes.batch.item"]: span for span in receiver.named("batch item")}
    assert set(items) == {"a", "b"} and all(span.parent_id == "" for span in items.values())
    assert len({items["a"].trace_id, items["b"].trace_id, batch.trace_id}) == 3
    assert all(span.links == [(batch.trace_id, batch.span_id)] for span in items.values())  # linked to the batch
    turns = {span.parent_id: span for span in receiver.named("invoke_agent")}
    assert set(turns) == {items["a"].span_id, items["b"].span_id}
    (tool,) = receiver.named("execute_tool")
    assert tool.trace_id == items["a"].trace_id and tool.attributes["gen_ai.tool.name"] == "lookup"


def test_a_task_handed_to_another_acp_agent_goes_on_in_the_same_trace(home: Path, tmp_path: Path,
                                                                      llm_server: ScriptedServer,
                                                                      receiver: Receiver) -> None:
    """`acp_agents`' delegate sends `_meta.traceparent` with `session/prompt`; `hermes acp` continues it."""
    other = tmp_path / "other-home"
    other.mkdir()
    llm_config(other, llm_server.url, f"plugins:\n  disabled: [cron, memory/builtin]\n"
                                      f"observability:\n  otlp_endpoint: {receiver.url}\n")
    llm_config(home, llm_server.url, "plugins:\n  disabled: [cron]\nacp_agents:\n  helper:\n"
                                     f"    command: {HERMES}\n    args: [acp]\n    env:\n      HERMES_HOME: {other}\n"
                                     "      OTEL_BSP_SCHEDULE_DELAY: '50'\n")
    llm_server.push(Reply("", tool_calls=[tool_call("acp__helper", {"task": "say hi"})]), Reply("hi"),
                    Reply("The helper said hi."))
    assert hermes("run", "Ask the helper.").stdout.strip() == "The helper said hi."
    until(lambda: len(receiver.named("invoke_agent")) == 2)
    (served,) = receiver.named("session/prompt")
    (handed,) = receiver.named("execute_tool")
    first, second = sorted(receiver.named("invoke_agent"), key=lambda span: span.parent_id != "")
    assert handed.attributes["gen_ai.tool.name"] == "acp__helper" and handed.parent_id == first.span_id
    assert served.parent_id == handed.span_id and second.parent_id == served.span_id
    assert {span.trace_id for span in (first, handed, served, second)} == {first.trace_id}


def test_each_gateway_message_is_a_turn_traced_on_its_platform(home: Path, llm_server: ScriptedServer,
                                                               receiver: Receiver,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    chat = FakeChat()
    monkeypatch.setenv("FAKECHAT_URL", chat.url)
    monkeypatch.setenv("FAKECHAT_ALLOW_ALL_USERS", "true")
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "50")  # the gateway is stopped after: export soon
    try:
        configure(home, llm_server.url)
        llm_server.reply("hello alice")
        with GatewayProcess() as gateway:
            gateway.wait_for(r"fakechat: connected")
            chat.say("c1", "alice", "hi there")
            chat.wait_sent(1, "c1")
            until(lambda: receiver.named("invoke_agent"))
            gateway.stop()
    finally:
        chat.close()
    (turn,) = receiver.named("invoke_agent")
    assert turn.parent_id == "" and turn.attributes["hermes.platform"] == "fakechat"
    (model,) = receiver.named("chat")
    assert model.parent_id == turn.span_id and model.trace_id == turn.trace_id


def test_each_turn_of_hermes_chat_is_a_trace_of_the_same_conversation(home: Path, llm_server: ScriptedServer,
                                                                      receiver: Receiver) -> None:
    llm_config(home, llm_server.url)
    llm_server.reply("Hello.").reply("Again.")
    chat = hermes("chat", input="hi\nonce more\n/exit\n")
    assert "Hello." in chat.stdout and "Again." in chat.stdout
    turns = receiver.named("invoke_agent")
    assert len(turns) == 2 and all(turn.parent_id == "" for turn in turns)
    assert turns[0].trace_id != turns[1].trace_id
    assert turns[0].attributes["gen_ai.conversation.id"] == turns[1].attributes["gen_ai.conversation.id"]
    assert {turn.attributes["hermes.platform"] for turn in turns} == {"cli"}
    assert sorted(span.parent_id for span in receiver.named("chat")) == sorted(turn.span_id for turn in turns)


SERVED = """
def register(ctx):
    ctx.register_tool("lookup", "demo", {"name": "lookup", "parameters": {"type": "object"}},
                      lambda args, **kw: '{"found": 1}')
"""


def test_a_call_to_hermes_mcp_serve_is_a_trace_from_the_servers_span_to_the_tools(home: Path,
                                                                                  receiver: Receiver) -> None:
    """A client that sends no trace context (this test's: no OpenTelemetry SDK set up here)."""
    from mcp import Client, StdioServerParameters

    make_folder_plugin(home / "plugins", "demo", SERVED, "name: demo\n")
    (home / "config.yaml").write_text("plugins:\n  enabled: [demo]\n")

    async def session() -> str:
        server = StdioServerParameters(command=str(HERMES), args=["mcp", "serve"],
                                       env={**os.environ, "OTEL_BSP_SCHEDULE_DELAY": "50"})
        async with Client(server) as client:
            result = await client.call_tool("lookup", {})
            until(lambda: receiver.named("execute_tool"))  # exported while the server still runs
            return str(result.content[0].text)

    assert asyncio.run(session()) == '{"found": 1}'
    (call,) = receiver.named("tools/call")
    (tool,) = receiver.named("execute_tool")
    assert call.name == "tools/call lookup" and call.kind == 2 and call.parent_id == ""  # SERVER, a root
    assert call.attributes["gen_ai.tool.name"] == "lookup" and call.attributes["mcp.method.name"] == "tools/call"
    assert tool.parent_id == call.span_id and tool.trace_id == call.trace_id
    assert tool.attributes["hermes.plugin.id"] == "demo" and tool.attributes["hermes.tool.outcome"] == "ok"
