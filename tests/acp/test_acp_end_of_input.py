"""`hermes acp` as a raw JSON-RPC peer over pipes: the requests in flight when the editor closes
its input are answered before the process exits (finished within `acp.end_grace`, else
cancelled), a request of ours that nobody is left to answer fails at once, and an id is echoed
back as it was sent (a fractional number too; an id of the wrong type is -32600 with id null)."""

from __future__ import annotations

import json
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("acp", reason="the ACP tests need the agent-client-protocol SDK (hermes-core[acp])")

from hermes_core.testing import Reply, tool_call  # noqa: E402
from tests.helpers import HERMES, llm_config, make_folder_plugin  # noqa: E402
from tests.helpers.chat import GUARD  # noqa: E402

INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}}


def prompt(ident: Any, session_id: str, text: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": ident, "method": "session/prompt",
            "params": {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]}}


def prompted_then_closed(home: Path, text: str) -> tuple[list[dict[str, Any]], int, str]:
    """Open a session, send one prompt, close stdin at once: every line the agent wrote, its exit
    status and its stderr."""
    with subprocess.Popen([str(HERMES), "acp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True) as process:
        assert process.stdin is not None and process.stdout is not None and process.stderr is not None
        new = {"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": str(home), "mcpServers": []}}
        process.stdin.write(json.dumps(INITIALIZE) + "\n" + json.dumps(new) + "\n")
        process.stdin.flush()
        seen: list[dict[str, Any]] = []
        while not any(message.get("id") == 2 for message in seen):
            seen.append(json.loads(process.stdout.readline()))
        (opened,) = [message for message in seen if message.get("id") == 2]
        process.stdin.write(json.dumps(prompt(3, opened["result"]["sessionId"], text)) + "\n")
        process.stdin.close()  # the editor goes away with its prompt in flight
        seen += [json.loads(line) for line in process.stdout]
        status = process.wait(timeout=60)
        return seen, status, process.stderr.read()


def answer_to(seen: list[dict[str, Any]], ident: Any) -> dict[str, Any]:
    answers = [m for m in seen if m.get("id") == ident and "method" not in m]
    assert len(answers) == 1, seen
    return answers[0]


def test_a_prompt_in_flight_when_the_input_ends_is_answered_before_the_process_exits(home: Path, llm_server) -> None:
    llm_config(home, llm_server.url, "plugins:\n  disabled: [cron]\n")
    llm_server.push(Reply("Late but whole.", delay=1.0))
    seen, status, stderr = prompted_then_closed(home, "take your time")
    assert status == 0 and "Traceback" not in stderr, stderr
    assert answer_to(seen, 3)["result"]["stopReason"] == "end_turn", seen
    said = "".join(m["params"]["update"]["content"]["text"] for m in seen if m.get("method") == "session/update"
                   and m["params"]["update"]["sessionUpdate"] == "agent_message_chunk")
    assert said == "Late but whole."


def test_a_prompt_that_outlasts_the_grace_is_answered_cancelled(home: Path, llm_server) -> None:
    llm_config(home, llm_server.url, "plugins:\n  disabled: [cron]\nacp:\n  end_grace: 0.5\n")
    held = threading.Event()
    llm_server.push(Reply("PIECE0 PIECE1 PIECE2", hold=held, hold_after=1))
    try:
        seen, status, stderr = prompted_then_closed(home, "never finish")
    finally:
        held.set()
    assert status == 0 and "Traceback" not in stderr, stderr
    assert answer_to(seen, 3)["result"]["stopReason"] == "cancelled", seen


def test_a_permission_asked_after_the_input_ended_is_refused_at_once(home: Path, llm_server) -> None:
    make_folder_plugin(home / "plugins", "guard", GUARD, "name: guard\n")
    llm_config(home, llm_server.url, "plugins:\n  enabled: [guard]\n  disabled: [cron]\nacp:\n  end_grace: 60\n")
    llm_server.push(Reply("", tool_calls=[tool_call("wipe", {"path": "/a"})], delay=0.5), Reply("Left /a alone."))
    seen, status, stderr = prompted_then_closed(home, "wipe /a")
    assert status == 0 and "Traceback" not in stderr, stderr
    assert [m["method"] for m in seen if "method" in m and "id" in m] == ["session/request_permission"]
    assert answer_to(seen, 3)["result"]["stopReason"] == "end_turn", seen
    assert not (home / "wiped.txt").exists()  # nobody approved it
    assert len(llm_server.requests) == 2  # and the turn went on at once, well within its minute of grace


def test_an_id_is_echoed_as_sent_and_one_of_the_wrong_type_is_an_invalid_request(home: Path, llm_server) -> None:
    llm_config(home, llm_server.url, "plugins:\n  disabled: [cron]\n")
    ids = [1.5, 7.0, -3, "x", None, 1e300]
    wrong = ['{"jsonrpc": "2.0", "id": true, "method": "initialize", "params": {"protocolVersion": 1}}',
             '{"jsonrpc": "2.0", "id": {"a": 1}, "method": "initialize", "params": {"protocolVersion": 1}}',
             '{"jsonrpc": "2.0", "id": [2], "method": "initialize", "params": {"protocolVersion": 1}}',
             '{"jsonrpc": "2.0", "id": 1e400, "method": "initialize", "params": {"protocolVersion": 1}}']
    lines = [json.dumps({**INITIALIZE, "id": ident}) for ident in ids] + wrong
    process = subprocess.run([str(HERMES), "acp"], input="\n".join(lines) + "\n", capture_output=True, text=True,
                             timeout=120)
    assert process.returncode == 0 and "Traceback" not in process.stderr, process.stderr
    raw = process.stdout.splitlines()
    answers = [json.loads(line) for line in raw]
    good = [a for a in answers if "result" in a]
    assert sorted(map(repr, (a["id"] for a in good))) == sorted(map(repr, ids))
    assert all(a["result"]["protocolVersion"] == 1 for a in good)
    assert {'"id":1.5', '"id":7.0', '"id":1e+300'} <= {part for line in raw for part in line.split(",")}
    refused = [a for a in answers if "error" in a]
    assert [(a["id"], a["error"]["code"]) for a in refused] == [(None, -32600)] * len(wrong), refused
