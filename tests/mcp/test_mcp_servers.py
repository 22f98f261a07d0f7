"""MCP servers in the host: `mcp_servers:` of config.yaml with Hermes' keys, their tools named as Hermes
names them and called like any tool, one failing server blocking nothing, and `ctx.call_mcp`. The
servers are real subprocesses written with the official SDK (`mcp_server.py` beside this file)."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from hermes_core import McpAllowlistError, PluginManager
from hermes_core.testing import tool_call
from tests.helpers import hermes, hermes_json, llm_config, write_config

SERVER = Path(__file__).with_name("mcp_server.py")


def server(name: str, *flags: str, extra: str = "") -> str:
    """A `mcp_servers:` entry running the test server over stdio."""
    args = json.dumps([str(SERVER), *flags])
    return f"  {name}:\n    command: {sys.executable}\n    args: {args}\n" + "".join(f"    {line}\n" for line in extra.splitlines())


def configure(home: Path, *entries: str, more: str = "") -> None:
    write_config(home, "mcp_servers:\n" + "".join(entries) + more)


def test_tools_are_named_as_hermes_names_them(home: Path) -> None:
    long = "a-very.long-server-name-that-goes-on-and-on-and-on-xx"
    configure(home, server("git-hub.x", extra="tools:\n  include: [echo]"),
              server(long, extra="tools:\n  include: [structured]"))
    rows = {row["name"]: row for row in hermes_json("tools", "list") if row["plugin"].startswith("mcp:")}
    full = "mcp__" + long.replace("-", "_").replace(".", "_") + "__structured"  # 69 characters: clamped
    clamped = full[:55] + "_" + hashlib.sha256(full.encode()).hexdigest()[:8]
    assert set(rows) == {"mcp__git_hub_x__echo", clamped} and len(clamped) == 64
    assert rows[clamped]["toolset"] == f"mcp-{long}" and rows["mcp__git_hub_x__echo"]["toolset"] == "mcp-git-hub.x"


def test_a_servers_tools_are_listed_and_called_like_any_tool(home: Path) -> None:
    configure(home, server("echo"), server("only", extra="tools:\n  include: [ec*]\n  exclude: [echo]"),
              server("less", extra="tools:\n  exclude: ['[a-e]*', big, slow, crash, fails, picture, sample]"))
    rows = {row["name"]: row for row in hermes_json("tools", "list")}
    echo = rows["mcp__echo__echo"]
    assert (echo["toolset"], echo["plugin"], echo["available"]) == ("mcp-echo", "mcp:echo", True)
    assert echo["description"] == "Say the text back."
    assert {name for name in rows if name.startswith("mcp__only__")} == {"mcp__only__echo"}  # include wins
    assert {name for name in rows if name.startswith("mcp__less__")} == {"mcp__less__structured"}
    assert hermes("tools", "call", "mcp__echo__echo", '{"text": "hi"}').stdout.strip() == "echo: hi"
    manager = PluginManager(home=home).load()  # the other calls in one process: each `hermes` starts the servers
    try:
        assert manager.dispatch_tool("mcp__echo__add", {"a": 2, "b": 3}) == "5"
        failed = json.loads(manager.dispatch_tool("mcp__echo__fails", {}))
        assert failed == {"error": "MCP server 'echo': the tool could not do it"}
        invalid = json.loads(manager.dispatch_tool("mcp__echo__echo", {}))  # the server's schema, checked here
        assert "field 'text'" in invalid["error"]
    finally:
        manager.mcp.close()


def test_variables_are_interpolated_and_the_server_gets_no_other_secret(home: Path, monkeypatch: Any) -> None:
    monkeypatch.setenv("GIVEN_TOKEN", "t0k")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-not-for-servers")
    configure(home, server("echo", extra="env:\n  TOKEN: ${GIVEN_TOKEN}\n  OTHER: x-${env:GIVEN_TOKEN}"),
              server("bad", extra="env:\n  TOKEN: ${NOT_SET_ANYWHERE}"))
    manager = PluginManager(home=home).load()
    try:
        assert manager.dispatch_tool("mcp__echo__env", {"name": "TOKEN"}) == "t0k"
        assert manager.dispatch_tool("mcp__echo__env", {"name": "OTHER"}) == "x-t0k"
        assert manager.dispatch_tool("mcp__echo__env", {"name": "OPENAI_API_KEY"}) == "<unset>"
    finally:
        manager.mcp.close()
    listed = hermes("mcp", "list")
    assert "mcp_servers.bad.env.TOKEN uses ${NOT_SET_ANYWHERE}, which is not set" in listed.stderr
    assert "echo" in listed.stdout and "bad" not in listed.stdout


def test_one_failing_server_blocks_nothing_and_says_why(home: Path) -> None:
    configure(home, server("echo"), server("broken", "--fail"), server("hangs", "--hang", extra="connect_timeout: 1"),
              "  missing:\n    command: /no/such/program\n")
    listed = hermes("tools", "list", "--json")
    names = {row["name"] for row in json.loads(listed.stdout)}
    assert "mcp__echo__echo" in names and not {n for n in names if "broken" in n or "hangs" in n}
    warnings = [line for line in listed.stderr.splitlines() if "MCP server" in line]
    assert len(warnings) == 3, listed.stderr  # one line for each server that is down
    assert any("'hangs': it did not start and list its tools within 1 s" in line for line in warnings)
    assert any("'missing': FileNotFoundError" in line for line in warnings)
    states = {row["name"]: row for row in hermes_json("mcp", "list")}
    assert states["echo"]["state"] == "ready" and "mcp__echo__echo" in states["echo"]["tools"]
    assert {states[name]["state"] for name in ("broken", "hangs", "missing")} == {"failed"}
    assert "retrying" in states["missing"]["detail"]


def wait_for(check: Any, seconds: float = 30) -> Any:
    deadline = time.monotonic() + seconds
    while True:
        value = check()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(0.2)


def test_a_server_that_dies_mid_session_is_restarted_and_its_tools_come_back(home: Path, tmp_path: Path) -> None:
    marker = tmp_path / "starts"
    configure(home, server("echo", "--marker", str(marker)))
    manager = PluginManager(home=home).load()
    try:
        assert manager.dispatch_tool("mcp__echo__echo", {"text": "one"}) == "echo: one"
        died = json.loads(manager.dispatch_tool("mcp__echo__crash", {}))
        assert died["error"].startswith("MCP server 'echo': ")
        down = json.loads(manager.dispatch_tool("mcp__echo__echo", {"text": "two"}))
        assert "not available" in down["error"] and "MCP server 'echo' is failed" in down["error"]
        back = wait_for(lambda: manager.dispatch_tool("mcp__echo__echo", {"text": "three"}) == "echo: three")
        assert back and marker.read_text().count("started") == 2
    finally:
        manager.mcp.close()


PROBE: list[Any] = []


def probe(ctx: Any) -> None:
    PROBE.append(ctx)
    ctx.register_hook("pre_tool_call", lambda tool_name, args, **kw: PROBE.append(("pre", tool_name, dict(args))))
    ctx.register_hook("post_tool_call", lambda tool_name, result, status, **kw: PROBE.append(("post", tool_name, status)))


@pytest.mark.fires("pre_tool_call", "post_tool_call")
def test_an_mcp_tool_call_takes_the_hooks_and_ctx_call_mcp_has_hermes_envelope(home: Path) -> None:
    configure(home, server("echo"), more="plugins:\n  entries:\n    probe:\n      mcp_allowlist: [echo, ghost]\n"
                                         "    other: {}\n")
    PROBE.clear()
    manager = PluginManager(home=home).load()
    try:
        manager.add_plugin(probe, "probe")
        ctx = PROBE.pop(0)
        assert manager.dispatch_tool("mcp__echo__echo", {"text": "hooked"}) == "echo: hooked"
        assert PROBE == [("pre", "mcp__echo__echo", {"text": "hooked"}), ("post", "mcp__echo__echo", "ok")]

        assert ctx.call_mcp("echo", "echo", {"text": "hi"}) == {"ok": True, "result": "echo: hi"}
        assert ctx.call_mcp("echo", "structured") == {"ok": True, "result": "two fields",
                                                      "structuredContent": {"x": 1, "y": [2, 3]}}
        big = ctx.call_mcp("echo", "big", timeout=5)
        assert big["ok"] and big["truncated"] is True and len(big["result"]) == 65_536
        assert ctx.call_mcp("echo", "fails") == {"ok": False, "error": "the tool could not do it"}
        slow = ctx.call_mcp("echo", "slow", {"seconds": 5}, timeout=0.1)  # clamped to one second, then an error
        assert slow["ok"] is False and slow["error"]
        ghost = ctx.call_mcp("ghost", "echo", {"text": "x"})
        assert ghost["ok"] is False and "no MCP server 'ghost'" in ghost["error"]
        with pytest.raises(McpAllowlistError, match=r"plugins.entries.probe.mcp_allowlist") as refused:
            ctx.call_mcp("other-server", "echo", {})
        assert isinstance(refused.value, PermissionError)
    finally:
        manager.mcp.close()


def test_a_plugin_not_on_the_allowlist_is_refused(home: Path) -> None:
    configure(home, server("echo"))
    manager = PluginManager(home=home).load()
    try:
        PROBE.clear()
        manager.add_plugin(probe, "probe")
        with pytest.raises(PermissionError, match="may not call MCP server 'echo'"):
            PROBE[0].call_mcp("echo", "echo", {"text": "x"})  # deny by default
    finally:
        manager.mcp.close()


def test_without_the_extra_each_mcp_path_says_which_extra_to_install(home: Path, tmp_path: Path, monkeypatch: Any) -> None:
    blocked = tmp_path / "no-mcp"
    blocked.mkdir()
    (blocked / "sitecustomize.py").write_text("import sys\nsys.modules['mcp'] = None  # as if not installed\n")
    monkeypatch.setenv("PYTHONPATH", f"{blocked}:{__import__('os').environ.get('PYTHONPATH', '')}")
    configure(home, server("echo"))
    serve = hermes("mcp", "serve", check=1)
    assert serve.stderr.count("\n") == 1 and "pip install 'hermes-core[mcp]'" in serve.stderr
    listed = hermes("tools", "list", "--json")
    assert "mcp_servers in config.yaml needs the MCP extra" in listed.stderr
    assert not [row for row in json.loads(listed.stdout) if row["name"].startswith("mcp__")]


def test_the_reference_agent_offers_and_calls_an_mcp_servers_tools(home: Path, llm_server: Any) -> None:
    llm_config(home, llm_server.url, "mcp_servers:\n" + server("echo", extra="tools:\n  include: [echo]"))
    llm_server.reply(None, tool_calls=[tool_call("mcp__echo__echo", {"text": "from the model"}, call_id="m1")])
    llm_server.reply("done")
    assert hermes("run", "use the echo tool").stdout.strip() == "done"
    first, second = (request.body for request in llm_server.requests)
    (offered,) = [t["function"] for t in first["tools"] if t["function"]["name"].startswith("mcp__")]
    assert offered == {"name": "mcp__echo__echo", "description": "Say the text back.", "parameters": {
        "type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}}  # no MCP hints sent
    assert second["messages"][-1] == {"role": "tool", "tool_call_id": "m1", "content": "echo: from the model"}


def test_a_server_over_sse_with_headers_from_the_environment(home: Path, tmp_path: Path, monkeypatch: Any) -> None:
    url_file = tmp_path / "url"
    process = subprocess.Popen([sys.executable, str(SERVER), "--sse", str(url_file)], stderr=subprocess.PIPE)
    try:
        assert wait_for(url_file.exists, 30), "the SSE server did not start"
        monkeypatch.setenv("TEST_HEADER", "from-config")
        write_config(home, f"mcp_servers:\n  old:\n    url: {url_file.read_text()}\n    transport: sse\n"
                           "    headers: {X-Test: '${TEST_HEADER}'}\n")
        assert hermes("tools", "call", "mcp__old__echo", '{"text": "over sse"}').stdout.strip() == "echo: over sse"
    finally:
        process.kill()
        process.communicate(timeout=30)


def test_a_tool_with_an_invalid_schema_costs_only_itself(home: Path) -> None:
    raw = json.dumps([str(SERVER.with_name("raw_server.py"))])
    configure(home, f"  odd:\n    command: {sys.executable}\n    args: {raw}\n")
    listed = hermes("tools", "list", "--json")
    names = {row["name"] for row in json.loads(listed.stdout)}
    assert {"mcp__odd__echo", "mcp__odd__add"} <= names and "mcp__odd__broken" not in names
    assert "MCP server 'odd': tool 'broken' is left out: inputSchema: " in listed.stderr
    assert hermes("tools", "call", "mcp__odd__echo", '{"text": "still"}').stdout.strip() == "echo: still"


def test_a_lone_surrogate_in_a_servers_result_reaches_the_model_as_a_replacement_character(home: Path,
                                                                                          llm_server) -> None:
    from hermes_core.testing import Reply

    raw = json.dumps([str(SERVER.with_name("raw_server.py"))])
    llm_config(home, llm_server.url, f"mcp_servers:\n  odd:\n    command: {sys.executable}\n    args: {raw}\n")
    llm_server.push(Reply(None, tool_calls=[tool_call("mcp__odd__half", {}, call_id="h")]), Reply("Read it."))
    assert hermes("run", "Read half a pair.").stdout.strip() == "Read it."
    assert llm_server.requests[1].body["messages"][-1] == {"role": "tool", "tool_call_id": "h",
                                                           "content": "half \ufffd pair"}
    (stored,) = hermes_json("sessions", "list")
    shown = hermes_json("sessions", "show", stored["id"])
    assert shown["tool_calls"][0]["result"] == "half \ufffd pair"  # the transcript says what the model was given


def test_tools_and_servers_whose_names_become_one_keep_the_first_and_warn_naming_both(home: Path) -> None:
    raw = json.dumps([str(SERVER.with_name("raw_server.py")), "--collide"])
    configure(home, f"  odd:\n    command: {sys.executable}\n    args: {raw}\n", server("x.y", extra="tools:\n  include: [echo]"),
              server("x_y", extra="tools:\n  include: [add]"))
    listed = hermes("mcp", "list", "--json")
    rows = {row["name"]: row for row in json.loads(listed.stdout)}
    assert set(rows) == {"odd", "x.y"} and rows["x.y"]["tools"] == ["mcp__x_y__echo"]
    assert rows["odd"]["tools"].count("mcp__odd__a_b") == 1
    called = hermes("tools", "call", "mcp__odd__a_b", "{}")
    assert called.stdout.strip() == "this is a.b"  # the first the server listed, always
    warnings = [line for line in called.stderr.splitlines() if "a_b" in line or "x_y" in line]
    assert warnings == [
        "hermes: warning: MCP server 'x_y' is left out: its tools would be named as MCP server 'x.y''s "
        "(mcp__x_y__...; names keep letters, digits and _ only); rename one",
        "hermes: warning: MCP server 'odd': tool 'a_b' is left out: its name mcp__odd__a_b is also tool 'a.b''s, "
        "which the server listed first (names keep letters, digits and _ only); rename one on the server"]


def test_images_from_a_server_reach_a_model_that_takes_them_and_links_keep_their_uri(home: Path,
                                                                                     llm_server) -> None:
    from hermes_core.testing import Reply

    entry = server("helper", extra="tools:\n  include: [picture]")
    llm_config(home, llm_server.url, "plugins:\n  disabled: [cron, todo]\nmcp_servers:\n" + entry)
    llm_server.push(Reply("", tool_calls=[tool_call("mcp__helper__picture", {})]), Reply("A red dot."))
    assert hermes("run", "Show me.").stdout.strip() == "A red dot."
    seen = llm_server.requests[1].body["messages"][-1]
    assert seen["role"] == "tool" and isinstance(seen["content"], list)
    kinds = [part["type"] for part in seen["content"]]
    assert kinds == ["text", "image_url", "text", "text"]
    assert seen["content"][1]["image_url"]["url"].startswith("data:image/png;base64,iVBOR")
    assert seen["content"][2]["text"] == "[audio: wav]"
    assert seen["content"][3]["text"] == "[resource_link: The guide <file:///docs/guide.md> (text/markdown)]"

    # A text-only model gets the text and a line for each other part.
    llm_config(home, llm_server.url, "  supports_vision: false\nplugins:\n  disabled: [cron, todo]\nmcp_servers:\n"
               + entry)
    llm_server.push(Reply("", tool_calls=[tool_call("mcp__helper__picture", {})]), Reply("Described."))
    hermes("run", "Describe it.")
    assert llm_server.requests[-1].body["messages"][-1]["content"] == (
        "a red dot\n[image: image/png]\n[audio: wav]\n[resource_link: The guide <file:///docs/guide.md> (text/markdown)]")


READER = '''
import json

def register(ctx):
    def read(args, **kwargs):
        return json.dumps({"read": ctx.read_mcp_resource("helper", args["uri"]),
                           "listed": ctx.list_mcp_resources("helper"),
                           "prompt": ctx.get_mcp_prompt("helper", "review", {"code": "x = 1"}),
                           "prompts": ctx.list_mcp_prompts("helper"),
                           "echo": ctx.list_mcp_resources("echo")})
    ctx.register_tool("read_it", "reader", {"name": "read_it", "parameters": {"type": "object"}}, read)
'''


def test_a_servers_resources_and_prompts_are_tools_for_the_agent_and_ctx_calls_for_plugins(home: Path) -> None:
    from tests.helpers import make_folder_plugin

    make_folder_plugin(home / "plugins", "reader", READER, "name: reader\n")
    configure(home, server("helper", "--extras", extra="tools:\n  include: [echo]"), server("echo"),
              more="plugins:\n  enabled: [reader]\n  entries:\n    reader:\n      mcp_allowlist: [helper, echo]\n")
    rows = {row["name"] for row in hermes_json("tools", "list")}
    assert {"mcp__helper__list_resources", "mcp__helper__read_resource", "mcp__helper__list_prompts",
            "mcp__helper__get_prompt"} <= rows
    assert not any(name.startswith("mcp__echo__") and "resource" in name for name in rows)  # it offers none
    manager = PluginManager(home=home).load()  # the other calls in one process: each `hermes` starts the servers
    try:
        read = json.loads(manager.dispatch_tool("mcp__helper__read_resource", {"uri": "memo://items/7"}))
        prompt = json.loads(manager.dispatch_tool("mcp__helper__get_prompt",
                                                  {"name": "review", "arguments": {"code": "f()", "language": "Python"}}))
        missing = json.loads(manager.dispatch_tool("mcp__helper__read_resource", {"uri": "memo://nope"}))
        answers = json.loads(manager.dispatch_tool("read_it", {"uri": "memo://notes"}))
    finally:
        manager.mcp.close()
    assert read["contents"] == [{"uri": "memo://items/7", "mimeType": "text/plain", "text": "the text of memo://items/7"}]
    assert prompt["messages"][0]["content"]["text"] == "Review this Python: f()"
    assert "Resource not found" in missing["error"]

    assert answers["read"] == {"ok": True, "contents": [
        {"uri": "memo://notes", "mimeType": "text/plain", "text": "the text of memo://notes"}]}
    listed = answers["listed"]
    assert [r["uri"] for r in listed["resources"]] == ["memo://notes"] and listed["resources"][0]["title"] == "The notes"
    assert [t["uriTemplate"] for t in listed["resourceTemplates"]] == ["memo://items/{id}"]
    assert answers["prompt"]["messages"][0]["content"]["text"] == "Review this code: x = 1"
    assert [(a["name"], a.get("required", False)) for a in answers["prompts"]["prompts"][0]["arguments"]] == [
        ("code", True), ("language", False)]
    assert answers["echo"] == {"ok": False, "error": "MCP server 'echo' offers no resources"}


def test_sampling_requests_are_refused_unless_allowed_then_answered_by_the_hosts_model_within_its_cap(
        home: Path, llm_server) -> None:
    from hermes_core.testing import Reply

    def setup(sampling: str, budget: int = 100_000) -> None:
        llm_config(home, llm_server.url, f"plugins:\n  disabled: [cron, todo]\n  llm_budget: {{tokens_per_day: {budget}}}\n"
                   "mcp_servers:\n" + server("helper", extra="tools:\n  include: [sample]\n" + sampling))

    setup("")
    refused = hermes("tools", "call", "mcp__helper__sample", '{"q": "hi"}', check=1)
    assert "Sampling not supported" in refused.stdout  # not offered: the server is told so by the SDK
    assert llm_server.requests == []

    setup("sampling:\n  enabled: true\n  max_tokens_cap: 64\n")
    llm_server.reply("Forty-two.")
    answered = hermes("tools", "call", "mcp__helper__sample", '{"q": "What is the answer?"}')
    assert answered.stdout.strip() == "the model said: Forty-two. (scripted-model)"
    asked = llm_server.requests[-1].body
    assert asked["messages"] == [{"role": "system", "content": "Answer briefly."},
                                 {"role": "user", "content": "What is the answer?"}]
    assert asked["max_tokens"] == 64  # the server asked for 50,000
    rows = {row["plugin"]: row for row in json.loads(hermes("plugins", "usage", "--json").stdout)}
    assert rows["mcp:helper"]["requests"] == 1  # counted against the budget like a plugin's ctx.llm call

    setup("sampling:\n  enabled: true\n", budget=10)  # the budget gate refuses it: the server is told why
    over = hermes("tools", "call", "mcp__helper__sample", '{"q": "Again?"}', check=1)
    assert "the client's model did not answer: plugin 'mcp:helper' is at its LLM budget" in over.stdout
    assert len(llm_server.requests) == 1


def test_a_url_or_header_http_cannot_send_is_one_config_line_naming_it_and_never_retried(home: Path) -> None:
    configure(home, '  crlf:\n    url: "https://example.org/mcp\\r\\nX-Injected: 1"\n',
              '  tab:\n    url: "https://exam\\tple.org/mcp"\n',
              '  nul:\n    url: https://example.org/mcp\n    headers:\n      X-Key: "a\\0b"\n',
              '  name:\n    url: https://example.org/mcp\n    headers:\n      "X Key": b\n',
              server("fine", extra="tools:\n  include: [echo]"))
    listed = hermes("mcp", "list", "--json")
    assert [row["name"] for row in json.loads(listed.stdout)] == ["fine"]
    lines = listed.stderr.strip().splitlines()
    expected = {"crlf": "url must be printable ASCII", "tab": "url must be printable ASCII",
                "nul": "header X-Key must be printable ASCII", "name": "header name 'X Key' is not a token"}
    for name, said in expected.items():
        assert [line for line in lines if f"mcp_servers.{name}:" in line] == [
            line for line in lines if f"mcp_servers.{name}: {said}" in line and "is not started" in line], lines
        assert sum(f"mcp_servers.{name}:" in line for line in lines) == 1, lines  # said once
    assert "InvalidURL" not in listed.stderr and "retrying" not in listed.stderr, listed.stderr
