"""`hermes acp` driven as an editor drives it: the official SDK's client side spawns the command
and speaks ACP to it over stdio, against the scripted model. Streaming, tool calls, approvals
allowed and rejected, cancel during a slow tool and mid-answer (cancelled every time, nothing
half-said stored), load (replayed) against resume (not), the host's stored sessions both ways, and
bad input on the wire."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("acp", reason="the ACP tests need the agent-client-protocol SDK (hermes-core[acp])")

from acp import PROTOCOL_VERSION, RequestError, spawn_agent_process, text_block  # noqa: E402
from acp.schema import AllowedOutcome, DeniedOutcome, RequestPermissionResponse  # noqa: E402

from hermes_core.testing import Reply, tool_call  # noqa: E402
from tests.helpers import HERMES, hermes, hermes_json, llm_config, make_folder_plugin  # noqa: E402
from tests.helpers.chat import GUARD  # noqa: E402


class Editor:
    """The client side: every update it was sent, and how it answers permission requests."""

    def __init__(self, answers: list[str] | None = None) -> None:
        self.updates: list[dict[str, Any]] = []
        self.asked: list[dict[str, Any]] = []
        self.answers = list(answers or [])
        self.on_update: Callable[[dict[str, Any]], None] = lambda update: None

    async def session_update(self, session_id: str, update: Any, **_: Any) -> None:
        shown = update.model_dump(mode="json", by_alias=True, exclude_none=True)
        self.updates.append(shown)
        self.on_update(shown)

    async def request_permission(self, session_id: str, tool_call: Any, options: list[Any], **_: Any) -> Any:
        self.asked.append({"tool_call_id": tool_call.tool_call_id, "title": tool_call.title,
                           "options": [(o.option_id, o.kind) for o in options]})
        answer = self.answers.pop(0) if self.answers else "cancelled"
        outcome = DeniedOutcome(outcome="cancelled") if answer == "cancelled" else \
            AllowedOutcome(outcome="selected", option_id=answer)
        return RequestPermissionResponse(outcome=outcome)

    async def read_text_file(self, *args: Any, **kwargs: Any) -> Any:
        raise RequestError.method_not_found("fs/read_text_file")

    async def write_text_file(self, *args: Any, **kwargs: Any) -> Any:
        raise RequestError.method_not_found("fs/write_text_file")

    def text(self) -> str:
        return "".join(u["content"]["text"] for u in self.updates if u["sessionUpdate"] == "agent_message_chunk")

    def kinds(self) -> list[str]:
        return [u["sessionUpdate"] for u in self.updates]


def session(editor: Editor, work: Callable[[Any], Any], capabilities: Any = None, memory: int | None = None) -> Any:
    """Run `work(conn)` (a coroutine function) against a fresh `hermes acp`, initialized (the
    editor offering `capabilities`; with at most `memory` bytes of address space when given)."""
    command = [str(HERMES), "acp"]
    if memory is not None:  # the limit holds across exec
        command = [sys.executable, "-c", "import os, resource, sys; resource.setrlimit(resource.RLIMIT_AS, "
                   f"({memory}, {memory})); os.execv(sys.argv[1], sys.argv[1:])", *command]

    async def main() -> Any:
        async with spawn_agent_process(editor, *command, env=dict(os.environ),
                                       transport_kwargs={"stderr": subprocess.DEVNULL}) as (conn, _process):
            await conn.initialize(protocol_version=PROTOCOL_VERSION, client_capabilities=capabilities)
            return await work(conn)

    return asyncio.run(main())


def test_initialize_says_what_works_and_a_prompt_streams_its_answer_into_a_stored_session(
        home: Path, llm_server) -> None:
    llm_config(home, llm_server.url, "plugins:\n  disabled: [cron]\n")
    llm_server.push(Reply("", tool_calls=[tool_call("current_time", {})]), Reply("It is about noon, friend."))
    editor = Editor()

    async def work(conn: Any) -> Any:
        answer = await conn.initialize(protocol_version=PROTOCOL_VERSION)
        new = await conn.new_session(cwd=str(home), mcp_servers=[])
        done = await conn.prompt(session_id=new.session_id, prompt=[text_block("What time is it?")])
        return answer, new.session_id, done.stop_reason

    answer, session_id, stop = session(editor, work)
    capabilities = answer.agent_capabilities
    assert answer.protocol_version == PROTOCOL_VERSION and answer.agent_info.name == "hermes-core"
    assert capabilities.load_session and capabilities.prompt_capabilities.embedded_context
    assert not capabilities.prompt_capabilities.image and capabilities.mcp_capabilities.http
    assert {"list", "resume", "close"} <= set(capabilities.session_capabilities.model_dump(exclude_none=True))
    assert stop == "end_turn" and editor.text() == "It is about noon, friend."
    started = [u for u in editor.updates if u["sessionUpdate"] == "tool_call"]
    finished = [u for u in editor.updates if u["sessionUpdate"] == "tool_call_update"]
    assert [(u["title"], u["status"], u["rawInput"]) for u in started] == [("current_time", "in_progress", {})]
    assert finished[0]["status"] == "completed" and finished[0]["toolCallId"] == started[0]["toolCallId"]
    assert "utc" in finished[0]["content"][0]["content"]["text"].lower()
    kinds = editor.kinds()
    assert kinds.index("tool_call") < kinds.index("tool_call_update") < kinds.index("agent_message_chunk")
    listed = {row["id"]: row for row in hermes_json("sessions", "list")}
    assert listed[session_id]["platform"] == "acp"  # the host's own store: hermes sessions list shows it


def test_approvals_are_asked_of_the_editor_and_a_rejected_tool_never_runs(home: Path, llm_server) -> None:
    make_folder_plugin(home / "plugins", "guard", GUARD, "name: guard\n")
    llm_config(home, llm_server.url, "plugins:\n  enabled: [guard]\n  disabled: [cron]\n")
    for path, answer in (("/a", "Wiped /a."), ("/b", "Left /b."), ("/c", "Wiped /c."), ("/d", "Wiped /d.")):
        llm_server.push(Reply("", tool_calls=[tool_call("wipe", {"path": path})]), Reply(answer))
    editor = Editor(answers=["once", "deny", "session"])

    async def work(conn: Any) -> list[str]:
        new = await conn.new_session(cwd=str(home), mcp_servers=[])
        stops = []
        for path in ("/a", "/b", "/c", "/d"):
            done = await conn.prompt(session_id=new.session_id, prompt=[text_block(f"wipe {path}")])
            stops.append(done.stop_reason)
        return stops

    assert session(editor, work) == ["end_turn"] * 4
    assert (home / "wiped.txt").read_text().split() == ["/a", "/c", "/d"]  # /b was denied; /d by the session grant
    assert len(editor.asked) == 3
    assert editor.asked[0]["options"] == [("once", "allow_once"), ("session", "allow_always"),
                                          ("always", "allow_always"), ("deny", "reject_once")]
    assert editor.asked[0]["title"] == "wipe: it deletes files"
    statuses = [u["status"] for u in editor.updates if u["sessionUpdate"] == "tool_call_update"]
    assert statuses == ["completed", "failed", "completed", "completed"]
    heard = [json.loads(line) for line in (home / "approvals.log").read_text().splitlines()]
    assert [h[1] for h in heard if h[0] == "post_approval_response"] == ["once", "deny", "session", "session"]
    assert {h[3] for h in heard} == {"acp"}


SLOW = '''
import json, os, time

def register(ctx):
    def slow(args, **kwargs):
        time.sleep(3)
        open(os.path.join(os.environ["HERMES_HOME"], "slow-done"), "w").write("done")
        return json.dumps({"slept": 3})

    ctx.register_tool("slow", "slow", {"name": "slow", "parameters": {"type": "object"}}, slow)
'''


def test_cancel_answers_at_once_during_a_slow_tool_and_the_session_goes_on(home: Path, llm_server) -> None:
    make_folder_plugin(home / "plugins", "slow", SLOW, "name: slow\n")
    llm_config(home, llm_server.url, "plugins:\n  enabled: [slow]\n  disabled: [cron]\n")
    llm_server.push(Reply("", tool_calls=[tool_call("slow", {})]))
    editor = Editor()
    running = threading.Event()
    editor.on_update = lambda update: running.set() if update["sessionUpdate"] == "tool_call" else None

    async def work(conn: Any) -> tuple[str, bool, str]:
        new = await conn.new_session(cwd=str(home), mcp_servers=[])
        asked = asyncio.ensure_future(conn.prompt(session_id=new.session_id, prompt=[text_block("be slow")]))
        await asyncio.to_thread(running.wait, 30)
        await conn.cancel(session_id=new.session_id)
        stop = (await asked).stop_reason
        tool_done = (home / "slow-done").exists()
        llm_server.reply("Fresh answer.")
        again = await conn.prompt(session_id=new.session_id, prompt=[text_block("and now?")])
        return stop, tool_done, again.stop_reason

    stop, tool_done, again = session(editor, work)
    assert (stop, tool_done, again) == ("cancelled", False, "end_turn")  # answered before the tool ended
    assert editor.text() == "Fresh answer."
    assert len(llm_server.requests) == 2  # the cancelled turn asked the model nothing after its tool


def test_load_replays_a_stored_session_and_resume_does_not(home: Path, llm_server) -> None:
    llm_config(home, llm_server.url, "plugins:\n  disabled: [cron]\n")
    llm_server.reply("Remembered: blue.")
    first = Editor()

    async def start(conn: Any) -> str:
        new = await conn.new_session(cwd=str(home), mcp_servers=[])
        await conn.prompt(session_id=new.session_id, prompt=[text_block("My colour is blue.")])
        return new.session_id

    session_id = session(first, start)
    loaded = Editor()

    async def load(conn: Any) -> None:
        await conn.load_session(cwd=str(home), session_id=session_id, mcp_servers=[])
        for _ in range(200):  # the SDK's client hands each notification to a task of its own
            if len(loaded.updates) >= 2:
                break
            await asyncio.sleep(0.02)

    session(loaded, load)
    assert [(u["sessionUpdate"], u["content"]["text"]) for u in loaded.updates] == [
        ("user_message_chunk", "My colour is blue."), ("agent_message_chunk", "Remembered: blue.")]

    resumed = Editor()
    llm_server.reply("Blue, as you said.")

    async def go_on(conn: Any) -> str:
        await conn.resume_session(session_id=session_id, cwd=str(home))
        done = await conn.prompt(session_id=session_id, prompt=[text_block("What is my colour?")])
        return done.stop_reason

    assert session(resumed, go_on) == "end_turn"
    assert set(resumed.kinds()) == {"agent_message_chunk"} and resumed.text() == "Blue, as you said."  # no replay
    sent = [m["content"] for m in llm_server.requests[-1].body["messages"] if m["role"] in ("user", "assistant")]
    assert sent == ["My colour is blue.", "Remembered: blue.", "What is my colour?"]
    # The same stored session goes on from the command line, and the other way round.
    llm_server.reply("Still blue.")
    assert hermes("run", "--session", session_id, "Once more?").stdout.strip() == "Still blue."
    run_id = hermes_json("sessions", "list")[0]["id"]
    listed = Editor()

    async def listing(conn: Any) -> list[str]:
        return [s.session_id for s in (await conn.list_sessions(cwd=str(home))).sessions]

    assert session_id in session(listed, listing) and run_id == session_id


def test_bad_input_gets_errors_and_the_server_keeps_serving_with_stdout_only_json(home: Path, llm_server) -> None:
    make_folder_plugin(home / "plugins", "noisy", '''
print("noise at import")
import json

def register(ctx):
    print("noise in register")
    def loud(args, **kwargs):
        print("noise in a tool")
        return json.dumps({"ok": True})
    ctx.register_tool("loud", "noisy", {"name": "loud", "parameters": {"type": "object"}}, loud)
''', "name: noisy\n")
    llm_config(home, llm_server.url, "plugins:\n  enabled: [noisy]\n  disabled: [cron]\n")
    llm_server.push(Reply("", tool_calls=[tool_call("loud", {})]), Reply("Loud done."))
    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}},
        "{this is not json",
        {"jsonrpc": "2.0", "id": 2, "method": "no/such_method", "params": {}},
        {"jsonrpc": "2.0", "id": 3, "method": "session/prompt", "params": {"sessionId": "nope", "prompt": []}},
        {"jsonrpc": "2.0", "id": 4, "method": "session/new", "params": {"cwd": str(home), "mcpServers": []}},
    ]
    with subprocess.Popen([str(HERMES), "acp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True) as process:
        assert process.stdin is not None and process.stdout is not None and process.stderr is not None

        def send(message: Any) -> None:
            process.stdin.write((message if isinstance(message, str) else json.dumps(message)) + "\n")
            process.stdin.flush()

        def answer(wanted: int) -> None:
            while wanted not in answers:
                message = json.loads(process.stdout.readline())  # every stdout line is JSON-RPC
                answers[message.get("id")] = message

        answers: dict[Any, Any] = {}
        for line in lines:
            send(line)
        answer(4)
        send({"jsonrpc": "2.0", "id": 5, "method": "session/prompt", "params": {
            "sessionId": answers[4]["result"]["sessionId"], "prompt": [{"type": "text", "text": "be loud"}]}})
        answer(5)
        process.stdin.close()  # the editor goes away: the process ends
        assert process.wait(timeout=30) == 0
        stderr = process.stderr.read()
    assert answers[1]["result"]["protocolVersion"] == 1
    assert answers[2]["error"]["code"] == -32601
    assert answers[3]["error"]["code"] == -32602 and "no open session" in json.dumps(answers[3]["error"])
    assert answers[5]["result"]["stopReason"] == "end_turn"
    assert "noise in a tool" in stderr and "noise at import" in stderr


def test_lines_that_are_no_request_get_json_rpc_errors_and_the_server_keeps_serving(home: Path, llm_server) -> None:
    llm_config(home, llm_server.url, "plugins:\n  disabled: [cron]\n")
    initialize = {"jsonrpc": "2.0", "id": 7, "method": "initialize", "params": {"protocolVersion": 1}}
    lines = ["[]", json.dumps([initialize, {"jsonrpc": "2.0", "method": "session/cancel"}, 3]), "42", '"str"', "null",
             "{malformed", b"\xff\xfe".decode("latin-1"), '{"jsonrpc": "2.0", "id": {}, "method": "initialize"}',
             '{"jsonrpc": "2.0", "id": [1], "result": {}}', json.dumps({**initialize, "id": 1})]
    process = subprocess.run([str(HERMES), "acp"], input="\n".join(lines) + "\n", capture_output=True, text=True,
                             encoding="latin-1", timeout=120)
    answers = [json.loads(line) for line in process.stdout.splitlines()]  # every stdout line is JSON-RPC
    assert process.returncode == 0 and "Traceback" not in process.stderr, process.stderr
    codes = [[(a["id"], a["error"]["code"]) for a in answer] if isinstance(answer, list) else
             (answer["id"], answer["error"]["code"]) for answer in answers[:-1]]
    assert codes == [(None, -32600), [(7, -32600), (None, -32600)], (None, -32600), (None, -32600), (None, -32600),
                     (None, -32700), (None, -32700), (None, -32600)]
    assert "batch" in answers[1][0]["error"]["message"] and "not a number" in answers[2]["error"]["message"]
    assert answers[-1]["id"] == 1 and answers[-1]["result"]["protocolVersion"] == 1  # still serving


def test_stdout_can_be_a_file(home: Path, tmp_path: Path, llm_server) -> None:
    llm_config(home, llm_server.url, "plugins:\n  disabled: [cron]\n")
    transcript = tmp_path / "transcript.jsonl"
    with transcript.open("wb") as taken, subprocess.Popen([str(HERMES), "acp"], stdin=subprocess.PIPE, stdout=taken,
                                                          stderr=subprocess.PIPE) as process:
        assert process.stdin is not None and process.stderr is not None
        process.stdin.write(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                                        "params": {"protocolVersion": 1}}).encode() + b"\n")
        process.stdin.flush()
        while not transcript.read_bytes().endswith(b"\n") and process.poll() is None:  # its answer, then EOF
            threading.Event().wait(0.05)
        process.stdin.close()
        assert process.wait(timeout=60) == 0, process.stderr.read()
    (answer,) = [json.loads(line) for line in transcript.read_text(encoding="utf-8").splitlines()]
    assert answer["id"] == 1 and answer["result"]["protocolVersion"] == 1


def test_the_editors_mcp_servers_are_that_sessions_tools_only(home: Path, llm_server) -> None:
    from acp.schema import McpServerStdio

    server = McpServerStdio(name="helper", command=sys.executable,
                            args=[str(Path(__file__).parents[1] / "mcp" / "mcp_server.py")], env=[])
    llm_config(home, llm_server.url, "plugins:\n  disabled: [cron]\n")
    llm_server.push(Reply("", tool_calls=[tool_call("mcp__helper__echo", {"text": "from the editor"})]),
                    Reply("Echoed."), Reply("No helper here."))
    editor = Editor()

    async def work(conn: Any) -> None:
        with_helper = await conn.new_session(cwd=str(home), mcp_servers=[server])
        without = await conn.new_session(cwd=str(home), mcp_servers=[])
        await conn.prompt(session_id=with_helper.session_id, prompt=[text_block("echo it")])
        await conn.prompt(session_id=without.session_id, prompt=[text_block("echo it")])

    session(editor, work)
    finished = [u for u in editor.updates if u["sessionUpdate"] == "tool_call_update"]
    assert finished[0]["status"] == "completed" and "from the editor" in finished[0]["content"][0]["content"]["text"]
    offered = [{t["function"]["name"] for t in r.body.get("tools", [])} for r in llm_server.requests]
    assert "mcp__helper__echo" in offered[0] and not any(n.startswith("mcp__helper") for n in offered[2])


def test_another_acp_agent_is_a_tool_the_agent_hands_a_task_to(home: Path, tmp_path: Path, llm_server) -> None:
    """The delegate is another `hermes acp` with a home of its own, on the same scripted model."""
    other = tmp_path / "other-home"
    other.mkdir()
    llm_config(other, llm_server.url, "plugins:\n  disabled: [cron, memory/builtin]\n")
    make_folder_plugin(home / "plugins", "guard", GUARD, "name: guard\n")
    make_folder_plugin(other / "plugins", "guard", GUARD, "name: guard\n")
    (other / "config.yaml").write_text((other / "config.yaml").read_text() + "  enabled: [guard]\n")
    llm_config(home, llm_server.url, "plugins:\n  disabled: [cron]\nacp_agents:\n  helper:\n"
                                     f"    command: {HERMES}\n    args: [acp]\n    env:\n      HERMES_HOME: {other}\n"
                                     "    description: a careful assistant\n")
    llm_server.push(Reply("", tool_calls=[tool_call("acp__helper", {"task": "wipe /tmp/z and say so"})]),
                    Reply("", tool_calls=[tool_call("wipe", {"path": "/tmp/z"})]),  # the helper's own turn
                    Reply("I did not wipe it."), Reply("The helper says it did not wipe it."))
    result = hermes("run", "Ask the helper to wipe /tmp/z.")
    assert result.stdout.strip() == "The helper says it did not wipe it."
    tools = {t["function"]["name"]: t["function"] for t in llm_server.requests[0].body["tools"]}
    assert "a careful assistant" in tools["acp__helper"]["description"]
    handed = llm_server.requests[1].body["messages"][-1]["content"]
    assert handed == "wipe /tmp/z and say so"  # the helper's own session got the task
    answer = llm_server.requests[3].body["messages"][-1]["content"]
    assert answer.startswith("I did not wipe it.") and "wipe" in answer and "(failed)" in answer
    assert not (other / "wiped.txt").exists()  # its permission request had no one to ask here: refused


def test_a_stopped_turn_cancels_the_task_it_handed_to_another_acp_agent(home: Path, tmp_path: Path,
                                                                         llm_server) -> None:
    from hermes_core import PluginManager
    from hermes_core.agent import Agent
    from hermes_core.hosting import Cancelled

    other = tmp_path / "other-home"
    other.mkdir()
    llm_config(other, llm_server.url, "plugins:\n  disabled: [cron, memory/builtin]\n")
    llm_config(home, llm_server.url, "plugins:\n  disabled: [cron, memory/builtin]\nacp_agents:\n  helper:\n"
                                     f"    command: {HERMES}\n    args: [acp]\n    env:\n      HERMES_HOME: {other}\n")
    llm_server.push(Reply("", tool_calls=[tool_call("acp__helper", {"task": "think for a long time"})]),
                    Reply("too late", delay=20))
    outcome: dict[str, Any] = {}
    with Agent(PluginManager()) as agent:
        def run() -> None:
            try:
                outcome["result"] = agent.ask("Ask the helper.")
            except BaseException as exc:  # noqa: BLE001 - what the turn raised is the outcome
                outcome["raised"] = exc

        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        for _ in range(600):  # until the helper's own model request is under way
            if len(llm_server.requests) >= 2:
                break
            threading.Event().wait(0.05)
        agent.cancel()
        thread.join(15)
    assert isinstance(outcome.get("raised"), Cancelled), outcome
    assert len(llm_server.requests) == 2  # nothing was asked after the stop


class FileEditor(Editor):
    """An editor that offers its file system: its open buffers, which differ from the disk."""

    def __init__(self, buffers: dict[str, str]) -> None:
        super().__init__()
        self.buffers = buffers
        self.reads: list[tuple[str, int | None, int | None]] = []

    async def read_text_file(self, session_id: str, path: str, line: int | None = None, limit: int | None = None,
                             **_: Any) -> Any:
        from acp.schema import ReadTextFileResponse

        self.reads.append((path, line, limit))
        if path not in self.buffers:
            raise RequestError.resource_not_found(path)
        kept = self.buffers[path].splitlines(keepends=True)[(line or 1) - 1:]
        return ReadTextFileResponse(content="".join(kept[:limit] if limit else kept))

    async def write_text_file(self, session_id: str, path: str, content: str, **_: Any) -> Any:
        self.buffers[path] = content


def tool_results(editor: Editor) -> list[tuple[str, str]]:
    return [(u["status"], u["content"][0]["content"]["text"]) for u in editor.updates
            if u["sessionUpdate"] == "tool_call_update"]


def test_file_tools_read_the_editors_unsaved_buffers_and_write_through_it(home: Path, tmp_path: Path,
                                                                          llm_server) -> None:
    from acp.schema import ClientCapabilities, FileSystemCapabilities

    project = tmp_path / "editor-project"
    project.mkdir()
    (project / "notes.md").write_text("saved line\n")
    (tmp_path / "secret.txt").write_text("outside\n")
    llm_config(home, llm_server.url, "plugins:\n  disabled: [cron]\n")
    calls = [tool_call("read_file", {"path": "notes.md"}),
             tool_call("write_file", {"path": "sub/new.md", "content": "written\n"}),
             tool_call("read_file", {"path": "../secret.txt"}),
             tool_call("read_file", {"path": str(project / "notes.md"), "offset": 2, "limit": 1})]
    llm_server.push(*[Reply("", tool_calls=[call]) for call in calls], Reply("Done with the files."))
    editor = FileEditor({str(project / "notes.md"): "first, unsaved\nsecond, unsaved\nthird\n"})

    async def work(conn: Any) -> str:
        new = await conn.new_session(cwd=str(project), mcp_servers=[])
        return (await conn.prompt(session_id=new.session_id, prompt=[text_block("edit")])).stop_reason

    files = ClientCapabilities(fs=FileSystemCapabilities(read_text_file=True, write_text_file=True))
    assert session(editor, work, files) == "end_turn"
    results = tool_results(editor)
    read, written, refused, paged = results
    assert read[0] == "completed" and "     1|first, unsaved" in json.loads(read[1])["content"]
    assert json.loads(written[1])["path"] == str(project / "sub" / "new.md")
    assert editor.buffers[str(project / "sub" / "new.md")] == "written\n" and not (project / "sub").exists()
    assert refused[0] == "failed" and "outside the workspace" in refused[1]
    assert json.loads(paged[1])["content"] == "     2|second, unsaved"
    assert editor.reads == [(str(project / "notes.md"), 1, 500), (str(project / "notes.md"), 2, 1)]
    offered = {t["function"]["name"] for t in llm_server.requests[0].body["tools"]}
    assert {"read_file", "write_file"} <= offered

    # An editor that does not offer its files: the session's folder on disk. Outside a workspace
    # (hermes run), the file tools are not offered at all.
    lone = tool_call("write_file", {"path": "odd.md", "content": "half \ud800 pair"})
    llm_server.push(Reply("", tool_calls=[calls[0]]), Reply("", tool_calls=[calls[1]]), Reply("", tool_calls=[lone]),
                    Reply("Done."))
    plain = Editor()
    assert session(plain, work) == "end_turn"
    assert "     1|saved line" in json.loads(tool_results(plain)[0][1])["content"]
    assert (project / "sub" / "new.md").read_text() == "written\n"
    assert (project / "odd.md").read_text(encoding="utf-8") == "half \ufffd pair"  # a lone surrogate: U+FFFD
    llm_server.reply("No files here.")
    hermes("run", "read notes.md")
    assert not {"read_file", "write_file"} & {t["function"]["name"] for t in llm_server.requests[-1].body["tools"]}


def test_read_file_of_a_huge_file_reads_only_the_lines_asked_for(home: Path, tmp_path: Path, llm_server) -> None:
    llm_config(home, llm_server.url, "plugins:\n  disabled: [cron]\n")
    project = tmp_path / "project"
    project.mkdir(exist_ok=True)
    with (project / "huge.log").open("wb") as huge:  # 1.5 GB, sparse: nothing past the first lines is on disk
        huge.write(b"one\ntwo\nthree\nfour\n")
        huge.truncate(3 * 2**29)
    (project / "flat.bin").write_bytes(b"")
    os.truncate(project / "flat.bin", 3 * 2**29)  # no newline at all: one line of 1.5 G characters
    calls = [tool_call("read_file", {"path": "huge.log", "limit": 3}),
             tool_call("read_file", {"path": "huge.log", "offset": 4, "limit": 1}),
             tool_call("read_file", {"path": "flat.bin", "limit": 3})]
    llm_server.push(*[Reply("", tool_calls=[call]) for call in calls], Reply("Read."))
    editor = Editor()  # no file system of its own: the files are read from disk

    async def work(conn: Any) -> str:
        new = await conn.new_session(cwd=str(project), mcp_servers=[])
        return (await conn.prompt(session_id=new.session_id, prompt=[text_block("read")])).stop_reason

    assert session(editor, work, memory=2**30) == "end_turn"  # 1 GiB of address space: a whole read would fail
    first, fourth, flat = (json.loads(result) for _, result in tool_results(editor))
    assert first["content"] == "     1|one\n     2|two\n     3|three"
    assert fourth["content"] == "     4|four"
    assert "more than one read takes (100000 characters)" in flat["error"]


def test_the_agents_task_list_is_the_editors_plan(home: Path, llm_server) -> None:
    llm_config(home, llm_server.url, "plugins:\n  disabled: [cron]\n")
    todos = [{"id": "1", "content": "Read the code", "status": "completed"},
             {"id": "2", "content": "Fix the bug", "status": "in_progress"},
             {"id": "3", "content": "Try a rewrite", "status": "cancelled"}]
    llm_server.push(Reply("", tool_calls=[tool_call("todo_list", {"todos": todos})]),
                    Reply("", tool_calls=[tool_call("todo_list", {"todos": [{"id": "2", "content": "Fix the bug",
                                                                             "status": "completed"}],
                                                                  "merge": True})]),
                    Reply("Planned and done."))
    editor = Editor()

    async def work(conn: Any) -> None:
        new = await conn.new_session(cwd=str(home), mcp_servers=[])
        await conn.prompt(session_id=new.session_id, prompt=[text_block("plan it")])

    session(editor, work)
    plans = [[(e["content"], e["status"]) for e in u["entries"]] for u in editor.updates
             if u["sessionUpdate"] == "plan"]
    assert plans == [[("Read the code", "completed"), ("Fix the bug", "in_progress"),
                      ("[cancelled] Try a rewrite", "completed")],
                     [("Read the code", "completed"), ("Fix the bug", "completed"),
                      ("[cancelled] Try a rewrite", "completed")]]
    assert json.loads(tool_results(editor)[1][1])["revision"] == 2


def test_end_to_end_with_acpx_from_npm(home: Path, tmp_path: Path, llm_server) -> None:
    """`acpx`, a headless ACP client no one here wrote, runs a prompt against `hermes acp`: its
    file system serves the read, the task list reaches it as a plan, the answer streams."""
    import shutil

    acpx = os.environ.get("ACPX") or shutil.which("acpx")
    if acpx is None:
        pytest.skip("acpx is not installed (npm install -g acpx; tested with 0.19.1), or set ACPX to its path")
    project = tmp_path / "acpx-project"
    project.mkdir()
    (project / "notes.md").write_text("from the project\n")
    llm_config(home, llm_server.url, "plugins:\n  disabled: [cron]\n")
    llm_server.push(Reply("", tool_calls=[tool_call("read_file", {"path": "notes.md"})]),
                    Reply("", tool_calls=[tool_call("todo_list", {"todos": [
                        {"id": "1", "content": "Say hello", "status": "in_progress"}]})]),
                    Reply("Hello from hermes."))
    result = subprocess.run([acpx, "--agent", f"{HERMES} acp", "--cwd", str(project), "--approve-all",
                             "--format", "json", "exec", "read my notes"],
                            env={**os.environ, "HOME": str(tmp_path)}, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    messages = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    methods = [m.get("method") for m in messages]
    assert "fs/read_text_file" in methods  # acpx's own file system served the read
    updates = [m["params"]["update"] for m in messages if m.get("method") == "session/update"]
    assert [e["content"] for u in updates if u["sessionUpdate"] == "plan" for e in u["entries"]] == ["Say hello"]
    read = next(u for u in updates if u["sessionUpdate"] == "tool_call_update")
    assert "     1|from the project" in read["content"][0]["content"]["text"]
    assert "".join(u["content"]["text"] for u in updates if u["sessionUpdate"] == "agent_message_chunk") \
        == "Hello from hermes."
    assert any(m.get("result", {}).get("stopReason") == "end_turn" for m in messages)


def test_a_delegates_streamed_text_reaches_the_editor_while_it_works(home: Path, tmp_path: Path, llm_server) -> None:
    other = tmp_path / "other-home"
    other.mkdir()
    llm_config(other, llm_server.url, "plugins:\n  disabled: [cron, memory/builtin]\n")
    llm_config(home, llm_server.url, "plugins:\n  disabled: [cron]\nacp_agents:\n  helper:\n"
                                     f"    command: {HERMES}\n    args: [acp]\n    env:\n      HERMES_HOME: {other}\n")
    llm_server.push(Reply("", tool_calls=[tool_call("acp__helper", {"task": "say it"})]),
                    Reply("The helper's own words."), Reply("Relayed."))
    editor = Editor()

    async def work(conn: Any) -> None:
        new = await conn.new_session(cwd=str(home), mcp_servers=[])
        await conn.prompt(session_id=new.session_id, prompt=[text_block("ask the helper")])
        for _ in range(200):  # the SDK's client hands each notification to a task of its own
            if any(u.get("status") == "completed" for u in editor.updates):
                break
            await asyncio.sleep(0.02)

    session(editor, work)
    updates = [u for u in editor.updates if u["sessionUpdate"] == "tool_call_update"]
    running = [u["content"][0]["content"]["text"] for u in updates if u["status"] == "in_progress"]
    assert running and running[-1] == "The helper's own words."  # streamed while the task ran
    assert updates[-1]["status"] == "completed" and updates.index(updates[-1]) > 0


HALTED_ANSWER = "PIECE0 PIECE1 PIECE2 PIECE3 PIECE4"


@pytest.mark.parametrize("streams", ["yes", "unframed"], ids=["chunked", "closed-at-end"])
def test_four_cancels_mid_answer_are_each_cancelled_and_nothing_half_said_is_stored(
        home: Path, llm_server, streams: str) -> None:
    llm_server.streams = streams  # unframed: a stream broken off looks like one that ended
    llm_config(home, llm_server.url, "plugins:\n  disabled: [cron]\n")
    holds = [threading.Event() for _ in range(4)]
    for index, held in enumerate(holds):
        llm_server.push(Reply(HALTED_ANSWER, hold=held, hold_after=1 + index % 3))
    editor = Editor()

    async def work(conn: Any) -> tuple[str, list[str]]:
        new = await conn.new_session(cwd=str(home), mcp_servers=[])
        reasons = []
        for index in range(4):
            shown = len(editor.text())
            asked = asyncio.ensure_future(conn.prompt(session_id=new.session_id, prompt=[text_block(f"ask {index}")]))
            while len(editor.text()) == shown:  # the first piece of this answer reached the editor
                await asyncio.sleep(0.01)
            await conn.cancel(session_id=new.session_id)
            reasons.append((await asked).stop_reason)
        return new.session_id, reasons

    try:
        session_id, reasons = session(editor, work)
    finally:
        for held in holds:
            held.set()
    assert reasons == ["cancelled"] * 4
    stored = hermes_json("sessions", "show", session_id)["messages"]
    assert [(m["role"], m["content"]) for m in stored] == [("user", f"ask {index}") for index in range(4)]


def test_the_editors_folder_is_the_sessions_working_folder_for_its_agents_md(home: Path, tmp_path: Path,
                                                                             llm_server) -> None:
    llm_config(home, llm_server.url)
    project = tmp_path / "editor-project"
    project.mkdir()
    (project / "AGENTS.md").write_text("Editor project: run pnpm test.", encoding="utf-8")
    (Path.cwd() / "AGENTS.md").write_text("never read: the process's own folder", encoding="utf-8")
    llm_server.reply("ok")

    async def work(conn: Any) -> Any:
        new = await conn.new_session(cwd=str(project), mcp_servers=[])
        return await conn.prompt(session_id=new.session_id, prompt=[text_block("hi")])

    session(Editor(), work)
    system = llm_server.requests[0].body["messages"][0]["content"]
    assert "## AGENTS.md\n\nEditor project: run pnpm test." in system and "never read" not in system


def test_an_escaped_lone_surrogate_or_a_nul_in_a_request_is_answered_in_words(home: Path, llm_server) -> None:
    llm_config(home, llm_server.url, "plugins:\n  disabled: [cron]\n")
    lines = ['{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}}',
             '{"jsonrpc": "2.0", "id": 2, "method": "session/load", "params": {"cwd": "/tmp", "sessionId": "a\\ud800",'
             ' "mcpServers": []}}',
             '{"jsonrpc": "2.0", "id": 3, "method": "session/new", "params": {"cwd": "/tmp\\u0000x", "mcpServers": []}}',
             '{"jsonrpc": "2.0", "id": 4, "method": "session/resume", "params": {"cwd": "/tmp", "sessionId": "\\udc80",'
             ' "mcpServers": []}}']
    with subprocess.Popen([str(HERMES), "acp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True) as process:
        assert process.stdin is not None and process.stdout is not None and process.stderr is not None
        process.stdin.write("\n".join(lines) + "\n")
        process.stdin.flush()
        answers = {}
        while len(answers) < len(lines):
            message = json.loads(process.stdout.readline())
            answers[message["id"]] = message
        process.stdin.close()
        assert process.wait(timeout=30) == 0
        stderr = process.stderr.read()
    assert answers[2]["error"]["code"] == -32002 and answers[2]["error"]["data"]["uri"] == "a\ufffd", answers[2]
    assert answers[3]["error"]["code"] == -32602 and "cwd" in answers[3]["error"]["data"], answers[3]
    assert answers[4]["error"]["code"] == -32002, answers[4]
    assert "Unhandled error" not in stderr and "Traceback" not in stderr, stderr


def test_a_resumed_editor_session_sends_the_system_prompt_it_started_with(home: Path, tmp_path: Path,
                                                                          llm_server) -> None:
    llm_config(home, llm_server.url)
    project = tmp_path / "editor-project"
    project.mkdir()
    (project / "AGENTS.md").write_text("Editor project: run pnpm test.", encoding="utf-8")
    (home / "SOUL.md").write_text("You are Quill.", encoding="utf-8")
    llm_server.always("ok")

    async def start(conn: Any) -> str:
        new = await conn.new_session(cwd=str(project), mcp_servers=[])
        await conn.prompt(session_id=new.session_id, prompt=[text_block("hi")])
        return new.session_id

    session_id = session(Editor(), start)
    (project / "AGENTS.md").write_text("Editor project: run vitest.", encoding="utf-8")
    (home / "SOUL.md").write_text("You are Nib.", encoding="utf-8")

    async def go_on(conn: Any) -> None:
        await conn.resume_session(session_id=session_id, cwd=str(project))
        await conn.prompt(session_id=session_id, prompt=[text_block("again")])

    session(Editor(), go_on)
    first, resumed = (request.body["messages"][0]["content"] for request in llm_server.requests)
    assert resumed == first and first.startswith("You are Quill.") and "run pnpm test." in first


def test_the_memory_provider_gets_what_hermes_hands_it_from_an_editor(home: Path, llm_server) -> None:
    from tests.helpers.keyed_memory import SELECT, initialized, install

    install(home)
    llm_config(home, llm_server.url, SELECT)
    llm_server.reply("Hello editor.")

    async def work(conn: Any) -> Any:
        new = await conn.new_session(cwd=str(home), mcp_servers=[])
        await conn.prompt(session_id=new.session_id, prompt=[text_block("Hi")])
        return new.session_id

    session_id = session(Editor(), work)
    seen = initialized(home)[-1]
    assert {key: seen.get(key) for key in ("session_id", "platform", "agent_context", "agent_identity",
                                           "agent_workspace")} == {
        "session_id": session_id, "platform": "acp", "agent_context": "primary", "agent_identity": "default",
        "agent_workspace": "hermes"}
