"""`hermes mcp serve` as MCP clients meet it: a real `hermes` subprocess driven by the official SDK's
client, over stdio and over Streamable HTTP on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from tests.helpers import HERMES, backdate, hermes, make_folder_plugin, write_config

DEMO = '''
import json, os, threading, time

BARRIER = threading.Barrier(4, timeout=30)

def shout(args, **kwargs):
    print("a plugin printing while the server runs")       # sys.stdout
    os.write(1, b"a plugin writing to descriptor 1\\n")      # and the descriptor itself
    return json.dumps({"text": args["text"].upper()})

def together(args, **kwargs):
    BARRIER.wait()  # returns only when four calls run at the same time
    return "met"

def register(ctx):
    ctx.register_tool("shout", "demo", {
        "name": "shout", "description": "Upper-case the text.", "annotations": {"readOnlyHint": True},
        "parameters": {"type": "object", "properties": {"text": {"type": "string", "maxLength": 20}},
                       "required": ["text"], "additionalProperties": False}}, shout)
    ctx.register_tool("boom", "demo", {"name": "boom", "description": "Raises.",
                                       "parameters": {"type": "object"}}, lambda args, **kw: 1 / 0)
    ctx.register_tool("sleepy", "demo", {"name": "sleepy", "parameters": {"type": "object"}},
                      lambda args, **kw: time.sleep(30))
    ctx.register_tool("together", "demo", {"name": "together", "parameters": {"type": "object"}}, together)
    ctx.register_tool("chart", "demo", {"name": "chart", "parameters": {"type": "object"}}, lambda args, **kw: {
        "_multimodal": True, "content": [
            {"type": "text", "text": "the chart"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
            {"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": "wav"}},
            {"type": "resource_link", "uri": "https://example.org/data.csv", "name": "data.csv", "title": "The data"},
            {"type": "resource", "resource": {"uri": "memo://notes", "mimeType": "text/plain", "text": "a note"}}]})
    def steps(args, **kw):
        import logging
        said = logging.getLogger("demo.steps")
        for step in range(1, 4):
            ctx.report_progress(step, 3, f"step {step}")
        said.info("an info line")
        said.warning("a warning line")
        return "stepped"

    ctx.register_tool("steps", "demo", {"name": "steps", "parameters": {"type": "object"}}, steps)
    ctx.register_command("greet", lambda raw: f"hello {raw}", description="Greet someone")
    ctx.register_command("pick", lambda raw: raw, description="Options", argument_mode="options")
    ctx.register_command("forecast", lambda raw: f"forecast for {raw}", description="The weather",
                         args_hint="<city> [days] [--units <metric|imperial>]")

    def gate(tool_name, args, **kwargs):
        if tool_name == "shout" and args.get("text") == "forbidden":
            return {"action": "block", "message": "shouting that is not allowed"}

    def shown(tool_name, result, **kwargs):
        return result.replace("HI", "HI!") if tool_name == "shout" else None

    ctx.register_hook("pre_tool_call", gate)
    ctx.register_hook("transform_tool_result", shown)
'''


@pytest.fixture
def served(home: Path) -> Path:
    make_folder_plugin(home / "plugins", "demo", DEMO, "name: demo\nversion: '1.0'\n")
    write_config(home, "plugins:\n  enabled: [demo]\ntools:\n  timeouts:\n    sleepy: 1\n")
    return home


def stdio(*args: str) -> Client:
    return Client(StdioServerParameters(command=str(HERMES), args=["mcp", "serve", *args], env=dict(os.environ)))


def texts(result: Any) -> str:
    return "\n".join(block.text for block in result.content)


def test_each_tool_is_served_with_its_exact_schema_description_and_hints(served: Path) -> None:
    async def session() -> dict[str, Any]:
        async with stdio() as client:
            return {tool.name: tool for tool in (await client.list_tools()).tools}

    tools = asyncio.run(session())
    assert {"shout", "boom", "sleepy", "together", "current_time"} <= set(tools)
    shout = tools["shout"]
    assert shout.description == "Upper-case the text."
    assert shout.input_schema == {"type": "object", "properties": {"text": {"type": "string", "maxLength": 20}},
                                  "required": ["text"], "additionalProperties": False}
    assert shout.annotations is not None and shout.annotations.read_only_hint is True
    assert tools["boom"].annotations is None


def test_a_call_takes_the_agents_path_and_a_failure_is_an_error_result(served: Path) -> None:
    async def session() -> list[Any]:
        async with stdio() as client:
            return [await client.call_tool("shout", {"text": "hi"}),           # transform_tool_result ran
                    await client.call_tool("shout", {"text": "forbidden"}),    # pre_tool_call blocked it
                    await client.call_tool("shout", {"text": "x" * 21}),       # validated against the schema
                    await client.call_tool("boom", {}),                        # the handler raised
                    await client.call_tool("sleepy", {}),                      # past its time limit
                    await unknown_tool(client),
                    await client.call_tool("shout", {"text": "again"})]        # and the server goes on

    async def unknown_tool(client: Any) -> Any:
        from mcp.shared.exceptions import MCPError

        with pytest.raises(MCPError) as raised:
            await client.call_tool("nope", {})
        return raised.value

    ok, blocked, invalid, raised, slow, unknown, again = asyncio.run(session())
    assert (ok.is_error, texts(ok)) == (False, '{"text": "HI!"}')
    assert (blocked.is_error, texts(blocked)) == (True, "shouting that is not allowed")
    assert invalid.is_error and "field 'text'" in texts(invalid) and "too long" in texts(invalid)
    assert (raised.is_error, texts(raised)) == (True, "Tool execution failed: ZeroDivisionError: division by zero")
    assert slow.is_error and "tools.timeouts.sleepy" in texts(slow)
    assert (unknown.code, unknown.message) == (-32602, "Unknown tool: nope")  # a protocol error, as the spec says
    assert (again.is_error, texts(again)) == (False, '{"text": "AGAIN"}')


QUIET = '''
import json, os
from pathlib import Path

with (Path(os.environ["HERMES_HOME"]) / "imports.txt").open("a") as marker:
    marker.write("quiet\\n")

def register(ctx):
    ctx.register_tool("whisper", "quiet", {"name": "whisper", "description": "Lower-case the text.",
                      "parameters": {"type": "object", "properties": {"text": {"type": "string"}}}},
                      lambda args, **kw: json.dumps({"text": args["text"].lower()}))
'''


def test_a_plugin_imported_when_first_needed_is_served_from_its_record_then_called(served: Path) -> None:
    backdate(make_folder_plugin(served / "plugins", "quiet", QUIET, "name: quiet\n"))
    write_config(served, "plugins:\n  enabled: [demo, quiet]\n")
    hermes("tools", "list")  # its registrations remembered
    marker = served / "imports.txt"
    marker.unlink()

    async def session() -> tuple[Any, bool, Any, Any]:
        async with stdio() as client:
            whisper = next(tool for tool in (await client.list_tools()).tools if tool.name == "whisper")
            listed_without_import = not marker.exists()
            return (whisper, listed_without_import, await client.call_tool("whisper", {"text": "HI"}),
                    await client.call_tool("whisper", {"text": "THERE"}))

    whisper, listed_without_import, first, second = asyncio.run(session())
    assert listed_without_import and whisper.description == "Lower-case the text."
    assert whisper.input_schema == {"type": "object", "properties": {"text": {"type": "string"}}}
    assert (texts(first), texts(second)) == ('{"text": "hi"}', '{"text": "there"}')
    assert marker.read_text().split() == ["quiet"]  # imported once, by the first call


def test_calls_at_the_same_time_are_served_at_the_same_time(served: Path) -> None:
    async def session() -> list[Any]:
        async with stdio() as client:
            return list(await asyncio.gather(*(client.call_tool("together", {}) for _ in range(4))))

    results = asyncio.run(session())  # four calls meet at a barrier: run one after another, each would fail
    assert [(r.is_error, texts(r)) for r in results] == [(False, "met")] * 4


def test_tools_and_plugin_choose_what_is_served(served: Path) -> None:
    async def names(*args: str) -> set[str]:
        async with stdio(*args) as client:
            return {tool.name for tool in (await client.list_tools()).tools}

    assert asyncio.run(names("--tools", "sh*", "--tools", "boo?")) == {"shout", "boom"}
    assert asyncio.run(names("--plugin", "clock")) == {"current_time"}

    async def hidden() -> Any:
        from mcp.shared.exceptions import MCPError

        async with stdio("--plugin", "clock") as client:
            with pytest.raises(MCPError) as raised:
                await client.call_tool("shout", {"text": "hi"})
            return raised.value

    assert asyncio.run(hidden()).code == -32602  # a tool not served cannot be called either: it is unknown


def test_commands_taking_one_text_argument_are_offered_as_prompts(served: Path) -> None:
    async def session() -> tuple[Any, Any]:
        async with stdio("--prompts") as client:
            return await client.list_prompts(), await client.get_prompt("greet", {"text": "Ada"})

    prompts, answer = asyncio.run(session())
    offered = {p.name: [(a.name, a.required) for a in p.arguments or []] for p in prompts.prompts}
    assert offered["greet"] == [("text", False)] and offered["pick"] == [("text", False)]
    assert offered["forecast"] == [("city", True), ("days", False), ("units", False)]  # from its usage
    assert answer.messages[0].content.text == "hello Ada"


def test_a_prompts_arguments_come_from_the_commands_usage_and_its_choices_complete(served: Path) -> None:
    from mcp.shared.exceptions import MCPError
    from mcp.types import PromptReference

    async def session() -> tuple[Any, Any, Any]:
        async with stdio("--prompts") as client:
            answer = await client.get_prompt("forecast", {"city": "New York", "units": "metric"})
            with pytest.raises(MCPError) as missing:
                await client.get_prompt("forecast", {"days": "3"})
            completed = await client.complete(PromptReference(name="forecast"), {"name": "units", "value": "me"})
            return answer, missing.value, completed

    answer, missing, completed = asyncio.run(session())
    assert answer.messages[0].content.text == "forecast for 'New York' --units metric"  # shlex.split reads it back
    assert missing.code == -32602 and "needs the argument 'city'" in missing.message
    assert completed.completion.values == ["metric"]


def test_stored_sessions_and_skills_are_read_only_resources_with_templates(served: Path, llm_server) -> None:
    from mcp.shared.exceptions import MCPError
    from mcp.types import ResourceTemplateReference

    from tests.helpers import hermes_json, llm_config

    from tests.helpers.skills import make_skill

    llm_config(served, llm_server.url, "plugins:\n  enabled: [demo]\n")
    llm_server.reply("Blue, of course.")
    hermes("run", "What colour is the sky?")
    session_id = hermes_json("sessions", "list")[0]["id"]
    make_skill(served / "skills", "writing/release-notes", description="Write release notes", body="List changes.")

    async def session() -> tuple[Any, ...]:
        async with stdio("--resources") as client:
            listed = await client.list_resources()
            templates = await client.list_resource_templates()
            read = await client.read_resource(f"hermes://sessions/{session_id}")
            skill = await client.read_resource("hermes://skills/release-notes")
            completed = await client.complete(ResourceTemplateReference(uri="hermes://sessions/{session_id}"),
                                              {"name": "session_id", "value": session_id[:6]})
            with pytest.raises(MCPError) as unknown:
                await client.read_resource("hermes://sessions/nope")
            return listed, templates, read, skill, completed, unknown.value

    listed, templates, read, skill, completed, unknown = asyncio.run(session())
    assert [str(r.uri) for r in listed.resources] == [f"hermes://sessions/{session_id}",
                                                      "hermes://skills/release-notes"]
    assert [t.uri_template for t in templates.resource_templates] == ["hermes://sessions/{session_id}",
                                                                      "hermes://skills/{name}"]
    assert "List changes." in skill.contents[0].text
    text = read.contents[0].text
    assert "**user**: What colour is the sky?" in text and "**assistant**: Blue, of course." in text
    assert completed.completion.values == [session_id]
    assert unknown.code == -32002


@pytest.fixture
def http_server(served: Path) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    env = dict(os.environ, HERMES_MCP_TOKEN="s3cret")
    process = subprocess.Popen([str(HERMES), "mcp", "serve", "--http", "127.0.0.1:0"], env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert process.stderr is not None
    url = process.stderr.readline().rstrip("\n")  # the first line is the URL alone
    assert re.fullmatch(r"http://127\.0\.0\.1:\d+/mcp", url), url
    assert "bearer token" in process.stderr.readline()
    try:
        yield url, process
    finally:
        if process.poll() is None:
            process.kill()
        process.communicate(timeout=30)


def test_streamable_http_serves_the_same_tools_to_a_client_with_the_token(http_server: tuple[str, Any]) -> None:
    url, _ = http_server

    async def session() -> tuple[set[str], Any]:
        async with create_mcp_http_client(headers={"Authorization": "Bearer s3cret"}) as http:
            async with Client(streamable_http_client(url, http_client=http)) as client:
                names = {tool.name for tool in (await client.list_tools()).tools}
                return names, await client.call_tool("shout", {"text": "hi"})

    names, result = asyncio.run(session())
    assert {"shout", "boom", "current_time"} <= names
    assert texts(result) == '{"text": "HI!"}'
    refused = httpx2.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, timeout=10)
    assert refused.status_code == 401


def test_sigterm_and_sigint_end_a_server_cleanly(http_server: tuple[str, Any], served: Path) -> None:
    _, process = http_server
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=30)
    assert process.returncode == 0 and "Traceback" not in err, err
    stdio_server = subprocess.Popen([str(HERMES), "mcp", "serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True)
    assert stdio_server.stdin is not None
    stdio_server.stdin.write('{"jsonrpc": "2.0", "id": 1, "method": "ping"}\n')
    stdio_server.stdin.flush()
    assert stdio_server.stdout is not None and '"id":1' in stdio_server.stdout.readline().replace(" ", "")
    stdio_server.send_signal(signal.SIGINT)
    out, err = stdio_server.communicate(timeout=30)
    assert stdio_server.returncode == 0 and "Traceback" not in err, err


def test_an_open_address_needs_the_flag_and_a_token(served: Path, tmp_path: Path) -> None:
    no_flag = hermes("mcp", "serve", "--http", "0.0.0.0:0", check=1)
    assert "--allow-remote" in no_flag.stderr and len(no_flag.stderr.strip().splitlines()) == 1
    no_token = hermes("mcp", "serve", "--http", "0.0.0.0:0", "--allow-remote", check=1)
    assert "bearer token" in no_token.stderr and "HERMES_MCP_TOKEN" in no_token.stderr
    empty = tmp_path / "token"
    empty.write_text("\n")
    assert "is empty" in hermes("mcp", "serve", "--http", "0.0.0.0:0", "--allow-remote", "--token-file", str(empty),
                                check=1).stderr
    assert "not [HOST:]PORT" in hermes("mcp", "serve", "--http", "localhost:http", check=2).stderr


def test_a_client_gone_mid_call_leaves_no_process_behind(served: Path) -> None:
    server = subprocess.Popen([str(HERMES), "mcp", "serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    assert server.stdin is not None and server.stdout is not None
    for message in ({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}},
                    {"jsonrpc": "2.0", "method": "notifications/initialized"},
                    {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "sleepy", "arguments": {}}}):
        server.stdin.write(json.dumps(message) + "\n")
        server.stdin.flush()
    assert '"id":1' in server.stdout.readline().replace(" ", "")  # initialised; the call is running now
    server.stdin.close()  # the client goes away mid-call
    try:
        assert server.wait(timeout=30) == 0
    finally:
        server.kill()
        assert server.stderr is not None
        err = server.stderr.read()
        server.stdout.close()
        server.stderr.close()
    assert "Traceback" not in err, err


def test_a_served_host_is_an_mcp_server_another_host_can_use(http_server: tuple[str, Any], tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    url, _ = http_server
    other = tmp_path / "other-home"
    other.mkdir()
    monkeypatch.setenv("HERMES_HOME", str(other))
    monkeypatch.setenv("REMOTE_TOKEN", "s3cret")
    write_config(other, f"mcp_servers:\n  remote:\n    url: {url}\n    headers:\n"
                        "      Authorization: Bearer ${REMOTE_TOKEN}\n    tools:\n      include: [shout]\n")
    names = [row["name"] for row in json.loads(hermes("tools", "list", "--json").stdout)]
    assert "mcp__remote__shout" in names
    assert hermes("tools", "call", "mcp__remote__shout", '{"text": "hi"}').stdout.strip() == '{"text": "HI!"}'


ODD = '''
import json

def register(ctx):
    ctx.register_tool("odd", "odd", {"name": "odd", "parameters": {"type": "object", "properties": {}}},
                      lambda args, **kw: json.loads('"half \\\\ud800 a pair"'))
'''


def test_a_tool_result_no_encoder_takes_reaches_the_client_and_the_server_goes_on(home: Path) -> None:
    """A lone surrogate (which json.loads gives) is replaced by U+FFFD where the tool's result is made,
    for every client and `hermes tools call`, instead of ending in an internal error."""
    make_folder_plugin(home / "plugins", "odd", ODD, "name: odd\n")
    make_folder_plugin(home / "plugins", "demo", DEMO, "name: demo\n")
    write_config(home, "plugins:\n  enabled: [odd, demo]\n")

    async def session() -> list[Any]:
        async with stdio() as client:
            return [await client.call_tool("odd", {}), await client.call_tool("shout", {"text": "still"})]

    odd, after = asyncio.run(session())
    assert (odd.is_error, texts(odd)) == (False, "half \ufffd a pair")
    assert texts(after) == '{"text": "STILL"}'  # the server went on
    printed = hermes("tools", "call", "odd", "{}")
    assert printed.stdout == "half \ufffd a pair\n" and printed.returncode == 0


def test_images_audio_and_resources_are_served_as_mcp_content_also_from_another_server(served: Path) -> None:
    helper = Path(__file__).with_name("mcp_server.py")
    write_config(served, "plugins:\n  enabled: [demo]\nmcp_servers:\n  helper:\n"
                         f"    command: {sys.executable}\n    args: [{json.dumps(str(helper))}]\n"
                         "    tools:\n      include: [picture]\n")

    async def session() -> tuple[Any, Any]:
        async with stdio("--tools", "chart", "--tools", "mcp__helper__picture") as client:
            return await client.call_tool("chart", {}), await client.call_tool("mcp__helper__picture", {})

    chart, picture = asyncio.run(session())
    assert [block.type for block in chart.content] == ["text", "image", "audio", "resource_link", "resource"]
    _, image, audio, link, resource = chart.content
    assert (image.mime_type, image.data, audio.mime_type) == ("image/png", "iVBORw0KGgo=", "audio/wav")
    assert (str(link.uri), link.title) == ("https://example.org/data.csv", "The data")
    assert (str(resource.resource.uri), resource.resource.text) == ("memo://notes", "a note")
    assert [block.type for block in picture.content] == ["text", "image", "audio", "resource_link"]  # re-served whole
    assert picture.content[1].data.startswith("iVBOR") and picture.content[3].title == "The guide"


async def set_level(client: Any, level: str) -> None:
    import warnings

    with warnings.catch_warnings():  # logging/setLevel: deprecated by 2026-07-28, what 2025-11-25 clients send
        warnings.simplefilter("ignore")
        await client.set_logging_level(level)


@pytest.mark.parametrize("mode", ["auto", "legacy"])  # the 2026-07-28 protocol, and 2025-11-25
def test_a_tools_progress_and_log_lines_reach_the_client_at_its_level(served: Path, mode: str) -> None:
    progress: list[tuple[float, float | None, str | None]] = []
    logs: list[tuple[str, str | None, Any]] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append((done, total, message))

    async def on_log(params: Any) -> None:
        logs.append((params.level, params.logger, params.data))

    async def session() -> list[str]:
        server = StdioServerParameters(command=str(HERMES), args=["mcp", "serve", "--tools", "steps"],
                                       env=dict(os.environ))
        async with Client(server, mode=mode, logging_callback=on_log, log_level="info") as client:
            if mode == "legacy":
                await set_level(client, "info")
            first = await client.call_tool("steps", {}, progress_callback=on_progress)
            seen = list(logs)
            logs.clear()
            if mode == "legacy":
                await set_level(client, "error")  # nothing this tool says is that loud
            second = await client.call_tool("steps", {})  # no progress asked for
            await asyncio.sleep(0.2)
            return [texts(first), texts(second), *(f"{level} {logger} {data}" for level, logger, data in seen)]

    first, second, *seen = asyncio.run(session())
    assert (first, second) == ("stepped", "stepped")
    assert progress == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]
    assert seen == ["info demo.steps an info line", "warning demo.steps a warning line"]
    if mode == "legacy":
        assert logs == []  # at the client's new level


def test_a_request_holding_an_escaped_lone_surrogate_is_answered_with_a_replacement_character(home: Path) -> None:
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
    lines = [json.dumps(initialize), json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
             '{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "current_time", '
             '"arguments": {"timezone": "Europe/\\ud800"}}}',
             '{"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "no\\udc80such", "arguments": {}}}']
    with subprocess.Popen([str(HERMES), "mcp", "serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True) as server:
        assert server.stdin is not None and server.stdout is not None
        server.stdin.write("\n".join(lines) + "\n")
        server.stdin.flush()
        answers: dict[Any, Any] = {}
        unanswered = threading.Timer(60, server.kill)  # the SDK dropped both calls: no answer, ever
        unanswered.start()
        while len(answers) < 3 and (line := server.stdout.readline()):
            answer = json.loads(line)
            answers[answer.get("id")] = answer
        unanswered.cancel()
        assert sorted(answers, key=str) == [1, 2, 3], answers
        server.stdin.close()
        assert server.wait(timeout=30) == 0
    assert answers[2]["result"]["isError"] and "Europe/\ufffd" in answers[2]["result"]["content"][0]["text"]
    assert answers[3]["error"]["message"] == "Unknown tool: no\ufffdsuch"


def _initialized(url: str) -> dict[str, str]:
    """An MCP session opened over HTTP with the bearer token: the headers its next requests send."""
    headers = {"Authorization": "Bearer s3cret", "Content-Type": "application/json",
               "Accept": "application/json, text/event-stream"}
    opened = httpx2.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}},
        headers=headers, timeout=30)
    headers = {**headers, "Mcp-Session-Id": opened.headers["mcp-session-id"], "Mcp-Protocol-Version": "2025-06-18"}
    httpx2.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers, timeout=30)
    return headers


def test_over_http_a_request_holding_an_escaped_lone_surrogate_is_answered_as_on_stdio(
        http_server: tuple[str, Any]) -> None:
    url, _ = http_server
    headers = _initialized(url)
    called = httpx2.post(url, content=b'{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": '
                                      b'"current_time", "arguments": {"timezone": "Europe/\\ud800"}}}',
                         headers=headers, timeout=30)
    assert called.status_code == 200, called.text  # it was a 400 "Parse error": it is JSON
    data = json.loads(next(line[6:] for line in called.text.splitlines() if line.startswith("data: ")))
    assert data["id"] == 2 and data["result"]["isError"] and "Europe/\ufffd" in data["result"]["content"][0]["text"]


def test_a_request_id_the_sdk_does_not_take_is_answered_with_an_invalid_request_error(home: Path) -> None:
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
    lines = [json.dumps(initialize), json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
             '{"jsonrpc": "2.0", "id": 1.5, "method": "tools/list"}',
             '{"jsonrpc": "2.0", "id": true, "method": "ping"}',
             '{"jsonrpc": "2.0", "id": 2, "method": "ping", "params": {"meta": {"id": 2.5}}}']
    with subprocess.Popen([str(HERMES), "mcp", "serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True) as server:
        assert server.stdin is not None and server.stdout is not None
        server.stdin.write("\n".join(lines) + "\n")
        server.stdin.flush()
        answers: list[Any] = []
        unanswered = threading.Timer(60, server.kill)  # the SDK took them for notifications: no answer, ever
        unanswered.start()
        while len(answers) < 4 and (line := server.stdout.readline()):
            answers.append(json.loads(line))
        unanswered.cancel()
        server.stdin.close()
        assert server.wait(timeout=30) == 0
    by_id = {json.dumps(answer.get("id")): answer for answer in answers}
    assert sorted(by_id) == ["1", "1.5", "2", "true"], answers
    fraction, boolean = by_id["1.5"]["error"], by_id["true"]["error"]
    assert fraction["code"] == boolean["code"] == -32600
    assert fraction["message"] == ("Invalid Request: the request id 1.5 is a number with a fraction or exponent; "
                                   "hermes mcp serve takes a string or an integer as a request id: send the request "
                                   "again with one (1 or \"1.5\")")
    assert "the request id true is a boolean" in boolean["message"]
    assert by_id["2"]["result"] == {}  # an "id" deeper in the request is not the request's


def test_over_http_a_request_id_the_sdk_does_not_take_is_answered_as_on_stdio(http_server: tuple[str, Any]) -> None:
    url, _ = http_server
    headers = _initialized(url)
    listed = httpx2.post(url, content=b'{"jsonrpc": "2.0", "id": 1.5, "method": "tools/list"}', headers=headers,
                         timeout=30)
    assert listed.status_code == 400, listed.text  # it was a 202: taken for a notification, never answered
    answer = listed.json()
    assert answer["id"] == 1.5 and answer["error"]["code"] == -32600
    assert "the request id 1.5 is a number with a fraction or exponent" in answer["error"]["message"]
