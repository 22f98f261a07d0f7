"""Hermes' hooks in the reference host: fired at Hermes' moments, in Hermes' order, with Hermes'
arguments, by `hermes run` / `hermes chat` (subprocesses) against the scripted server; and
plugins written the way published Hermes plugins are (narrow callbacks, `**kwargs` observers,
hooks this host has no moment for)."""

from __future__ import annotations

import pytest
import json
import signal
import subprocess
from pathlib import Path
from typing import Any

from hermes_core import PluginManager
from hermes_core.agent import FIRED_HOOKS, Agent
from hermes_core.testing import Reply, tool_call
from tests.helpers import HERMES, hermes, hermes_json, llm_config, make_folder_plugin, sigint_default

# Records every hook the reference host fires, with everything it was given, one JSON line each.
RECORDER = """
import json, os
from pathlib import Path

LOG = Path(os.environ["HERMES_HOME"]) / "hooks.jsonl"
SEEN = []

def _recorder(name):
    def record(**kwargs):
        SEEN.append((name, kwargs))
        with LOG.open("a", encoding="utf-8") as out:
            out.write(json.dumps([name, kwargs], default=repr) + "\\n")
    return record

def register(ctx):
    for name in HOOKS:
        ctx.register_hook(name, _recorder(name))
"""


def recorder(home: Path, hooks: set[str] | frozenset[str] = FIRED_HOOKS) -> None:
    make_folder_plugin(home / "plugins", "recorder", f"HOOKS = {sorted(hooks)!r}\n" + RECORDER, "name: recorder\n")


def recorded(home: Path) -> list[tuple[str, dict[str, Any]]]:
    path = home / "hooks.jsonl"
    return [tuple(json.loads(line)) for line in path.read_text().splitlines()] if path.exists() else []


def test_one_turn_fires_hermes_hooks_in_hermes_order_with_hermes_arguments(home: Path, llm_server) -> None:
    recorder(home)
    llm_config(home, llm_server.url, "plugins:\n  enabled: [recorder]\n")
    llm_server.reply("Let me look at the clock.", tool_calls=[tool_call("current_time", {}, call_id="c1")],
                     usage={"prompt_tokens": 120, "completion_tokens": 9,
                            "prompt_tokens_details": {"cached_tokens": 100}})
    llm_server.reply("It is noon.")
    assert hermes("run", "what", "time", "is", "it?").stdout.strip() == "It is noon."
    everything = recorded(home)
    # The stream hooks are delivered off the token path (their own worker, in their own order).
    streamed = [(name, kwargs) for name, kwargs in everything if name.startswith("on_stream_")]
    calls = [(name, kwargs) for name, kwargs in everything if not name.startswith("on_stream_")]
    assert [name for name, _ in calls] == [
        "on_session_start", "pre_llm_call",
        "pre_api_request", "post_api_request", "on_interim_message", "pre_tool_call", "post_tool_call",
        "transform_tool_result",
        "pre_api_request", "post_api_request", "transform_llm_output", "post_llm_call", "on_session_end",
        "on_session_finalize",
    ]
    assert all(kwargs["telemetry_schema_version"] == "hermes.observer.v1" for _, kwargs in calls)
    by = {}
    for name, kwargs in calls:
        by.setdefault(name, []).append(kwargs)
    (start,), (context,) = by["on_session_start"], by["pre_llm_call"]
    session_id, task_id, turn_id = context["session_id"], context["task_id"], context["turn_id"]
    assert start == {"session_id": session_id, "model": "scripted-model", "platform": "cli",
                     "telemetry_schema_version": "hermes.observer.v1"}
    assert turn_id.startswith(f"{session_id}:{task_id}:")
    assert (context["user_message"], context["is_first_turn"], context["platform"]) == ("what time is it?", True, "cli")
    assert context["conversation_history"] == [{"role": "user", "content": "what time is it?"}]
    assert (context["parent_session_id"], context["sender_id"]) == ("", "")

    first, second = by["pre_api_request"]
    assert [first["api_request_id"], second["api_request_id"]] == [f"{turn_id}:api:1", f"{turn_id}:api:2"]
    assert (first["api_call_count"], first["provider"], first["base_url"], first["model"], first["api_mode"]) == (
        1, "custom", llm_server.url, "scripted-model", "chat_completions")
    sent = llm_server.requests[0].body
    assert first["request_messages"] == sent["messages"] and first["message_count"] == len(sent["messages"])
    assert first["tool_count"] == len(sent["tools"]) and first["request"]["body"]["messages"] == sent["messages"]
    assert first["approx_input_tokens"] > 0 and first["middleware_trace"] == [] and first["task_id"] == task_id
    answered = by["post_api_request"][0]
    assert answered["finish_reason"] == "tool_calls" and answered["assistant_tool_call_count"] == 1
    assert answered["usage"]["input_tokens"] == 20 and answered["usage"]["cache_read_tokens"] == 100
    assert answered["usage"]["prompt_tokens"] == 120 and answered["usage"]["total_tokens"] == 129
    assert answered["usage"]["reported_usage_fields"]["cache_read_tokens"] is True
    assert answered["ended_at"] >= answered["started_at"] and answered["api_duration"] >= 0
    assert answered["response_model"] == "scripted-model" and answered["api_request_id"] == f"{turn_id}:api:1"
    assert by["post_api_request"][1]["finish_reason"] == "stop"

    (interim,) = by["on_interim_message"]
    assert (interim["text"], interim["iteration"], interim["turn_id"], interim["already_streamed"]) == (
        "Let me look at the clock.", 1, turn_id, True)
    # A plugin listens to the stream hooks, so each request was streamed: start, the text in pieces, end.
    names = [name for name, _ in streamed]
    assert names[0] == "on_stream_start" and names.count("on_stream_start") == names.count("on_stream_end") == 2
    for iteration, text in ((1, "Let me look at the clock."), (2, "It is noon.")):
        events = [kwargs for _, kwargs in streamed if kwargs["iteration"] == iteration]
        base = {"turn_id": turn_id, "iteration": iteration, "session_id": session_id, "model": "scripted-model",
                "provider": "custom", "surface": "cli", "telemetry_schema_version": "hermes.observer.v1"}
        assert events[0] == base and events[-1] == {**base, "final_text": text, "finished": True, "error": None}
        assert "".join(e["delta"] for e in events[1:-1]) == text and {e["kind"] for e in events[1:-1]} == {"text"}
    (gate,), (ran,), (shown,) = by["pre_tool_call"], by["post_tool_call"], by["transform_tool_result"]
    ids = {"session_id": session_id, "task_id": task_id, "turn_id": turn_id, "tool_call_id": "c1",
           "api_request_id": f"{turn_id}:api:1"}
    assert {k: gate[k] for k in ids} == ids == {k: ran[k] for k in ids} == {k: shown[k] for k in ids}
    assert (ran["tool_name"], ran["status"], ran["error_type"], ran["error_message"]) == ("current_time", "ok", None,
                                                                                         None)
    assert isinstance(ran["duration_ms"], int) and "weekday" in ran["result"] and "middleware_trace" not in shown

    (transform,), (done,), (end,), (final,) = (by["transform_llm_output"], by["post_llm_call"],
                                               by["on_session_end"], by["on_session_finalize"])
    assert transform["response_text"] == "It is noon." and transform["turn_id"] == turn_id
    assert done["assistant_response"] == "It is noon." and done["user_message"] == "what time is it?"
    assert [m["role"] for m in done["conversation_history"]] == ["user", "assistant", "tool", "assistant"]
    assert end == {"session_id": session_id, "task_id": task_id, "turn_id": turn_id, "completed": True,
                   "failed": False, "interrupted": False, "turn_exit_reason": "text_response(finish_reason=stop)",
                   "model": "scripted-model", "platform": "cli", "telemetry_schema_version": "hermes.observer.v1"}
    assert final == {"session_id": session_id, "platform": "cli", "reason": "shutdown", "old_session_id": None,
                     "new_session_id": None, "telemetry_schema_version": "hermes.observer.v1"}


# A plugin in hermes-loop-plugin's pattern: narrow callbacks that declare some of Hermes' arguments.
LOOP = """
import json, os
from pathlib import Path

LOG = Path(os.environ["HERMES_HOME"]) / "loop.jsonl"

def _log(*row):
    with LOG.open("a", encoding="utf-8") as out:
        out.write(json.dumps(row) + "\\n")

def _pre_llm_call(user_message, conversation_history, is_first_turn, **kwargs):
    _log("pre_llm_call", user_message, len(conversation_history), is_first_turn)
    return {"context": f"[loop] iteration {len(conversation_history)}"}

def _on_session_start(session_id, **kw):
    _log("on_session_start", session_id)

def _post_tool_call(tool_name, result, **kw):
    _log("post_tool_call", tool_name, json.loads(result))

def _on_session_end(session_id, completed, **kw):
    _log("on_session_end", completed)

def _loop_status(args, **kw):
    return json.dumps({"iteration": 1, "done": False})

def register(ctx):
    ctx.register_tool("loop_status", "loop", {"name": "loop_status", "description": "Where the loop is",
                      "parameters": {"type": "object", "properties": {}}}, _loop_status)
    ctx.register_hook("post_tool_call", _post_tool_call)
    ctx.register_hook("on_session_start", _on_session_start)
    ctx.register_hook("pre_llm_call", _pre_llm_call)
    ctx.register_hook("on_session_end", _on_session_end)
"""


def test_a_plugin_with_narrow_callbacks_works_through_a_three_turn_chat(home: Path, llm_server) -> None:
    make_folder_plugin(home / "plugins", "hermes-loop", LOOP, "name: hermes-loop\n")
    llm_config(home, llm_server.url, "plugins:\n  enabled: [hermes-loop]\n")
    llm_server.reply(None, tool_calls=[tool_call("loop_status", {}, call_id="c1")]).reply("Iteration 1 is running.")
    llm_server.reply("Second answer.").reply("Third answer.")
    chat = hermes("chat", input="start the loop\nnext\nand again\n/exit\n")
    assert "Iteration 1 is running." in chat.stdout and "Third answer." in chat.stdout
    assert "error" not in chat.stderr.lower() and "Traceback" not in chat.stderr
    rows = [json.loads(line) for line in (home / "loop.jsonl").read_text().splitlines()]
    (stored,) = hermes_json("sessions", "list")
    session_id = stored["id"]
    assert rows == [
        ["on_session_start", session_id],
        ["pre_llm_call", "start the loop", 1, True],
        ["post_tool_call", "loop_status", {"iteration": 1, "done": False}],
        ["on_session_end", True],
        ["pre_llm_call", "next", 5, False],
        ["on_session_end", True],
        ["pre_llm_call", "and again", 7, False],
        ["on_session_end", True],
    ]
    user_messages = [r.body["messages"][-1]["content"] for r in llm_server.requests if r.body["messages"][-1][
        "role"] == "user"]
    assert user_messages == ["start the loop\n\n[loop] iteration 1", "next\n\n[loop] iteration 5",
                             "and again\n\n[loop] iteration 7"]  # this turn's context, on the wire only


# A governance plugin in acp-hermes' pattern: `**kwargs` observers of the model requests.
OBSERVER = """
import json, os
from pathlib import Path

LOG = Path(os.environ["HERMES_HOME"]) / "acp.jsonl"

def _write(kind, kwargs):
    with LOG.open("a", encoding="utf-8") as out:
        out.write(json.dumps([kind, kwargs], default=repr) + "\\n")

def register(ctx):
    ctx.register_hook("pre_api_request", lambda **kw: _write("pre", kw))
    ctx.register_hook("post_api_request", lambda **kw: _write("post", kw))
    ctx.register_hook("api_request_error", lambda **kw: _write("error", kw))
"""


def observed(home: Path) -> list[list[Any]]:
    return [json.loads(line) for line in (home / "acp.jsonl").read_text().splitlines()]


def test_a_request_observer_sees_every_attempt_the_failure_and_the_fallback(home: Path, llm_server) -> None:
    make_folder_plugin(home / "plugins", "acp", OBSERVER, "name: acp\n")
    backup = llm_server.url_for("backup")
    llm_config(home, llm_server.url_for("main"),
               f"  fallback:\n    - {{provider: custom, model: backup-model, base_url: '{backup}'}}\n"
               "plugins:\n  enabled: [acp]\n")
    llm_server.fail(503, "upstream overloaded").reply("from the backup", model="backup-model")
    assert hermes("run", "hello").stdout.strip() == "from the backup"
    rows = observed(home)
    assert [kind for kind, _ in rows] == ["pre", "error", "pre", "post"]
    (_, pre_main), (_, error), (_, pre_backup), (_, post) = rows
    assert pre_main["base_url"] == llm_server.url_for("main") and pre_backup["base_url"] == backup
    assert pre_main["api_request_id"] == pre_backup["api_request_id"] == post["api_request_id"]
    assert pre_main["api_request_id"].endswith(":api:1") and post["api_call_count"] == 1
    assert (error["status_code"], error["reason"], error["retryable"], error["retry_count"]) == (
        503, "overloaded", True, 0)
    assert error["error"]["type"] == "InternalServerError" and "upstream overloaded" in error["error"]["message"]
    assert error["request"]["body"]["model"] == "scripted-model" and error["max_retries"] == 1
    assert (post["model"], post["provider"], post["base_url"], post["response_model"]) == (
        "backup-model", "custom", backup, "backup-model")
    assert post["usage"]["output_tokens"] == 3 and post["response"]["assistant_message"]["content"] == "from the backup"


CLASSIFIER = """
def register(ctx):
    def classify(status_code, error_message, error, **kw):
        assert type(error).__name__ == "LlmProviderError"  # never the SDK's exception (its request holds the key)
        if status_code == 400 and "quota" in error_message:
            return {"reason": "billing", "should_fallback": True}
    ctx.register_hook("transform_api_error_classification", classify)
"""


def test_an_error_classification_plugin_decides_whether_the_host_falls_back(home: Path, llm_server) -> None:
    make_folder_plugin(home / "plugins", "acp", OBSERVER, "name: acp\n")
    make_folder_plugin(home / "plugins", "classifier", CLASSIFIER, "name: classifier\n")
    fallback = f"  fallback:\n    - {{provider: custom, model: backup-model, base_url: '{llm_server.url_for('b')}'}}\n"
    llm_config(home, llm_server.url_for("main"), fallback + "plugins:\n  enabled: [acp]\n")
    llm_server.fail(400, "monthly quota exhausted")
    assert "refused the request" in hermes("run", "hello", check=1).stderr  # a 400 does not fall back...
    assert [(kind, row.get("reason")) for kind, row in observed(home)] == [("pre", None), ("error", "format_error")]
    (home / "acp.jsonl").unlink()
    llm_config(home, llm_server.url_for("main"), fallback + "plugins:\n  enabled: [acp, classifier]\n")
    llm_server.fail(400, "monthly quota exhausted").reply("from the backup")
    assert hermes("run", "hello").stdout.strip() == "from the backup"  # ...unless a plugin says it should
    error = next(row for kind, row in observed(home) if kind == "error")
    assert (error["reason"], error["retryable"], error["status_code"]) == ("billing", True, 400)


# A plugin in noisegate-hermes' pattern: one hook this host fires, one it has no moment for.
NOISEGATE = """
def register(ctx):
    ctx.register_hook("transform_tool_result", lambda result, **kw: None)
    ctx.register_hook("transform_terminal_output", lambda command, output, **kw: output[-2000:])
"""


def test_doctor_names_the_hooks_a_plugin_registered_that_this_host_never_fires(home: Path) -> None:
    make_folder_plugin(home / "plugins", "noisegate", NOISEGATE, "name: noisegate\n")
    (home / "config.yaml").write_text("plugins:\n  enabled: [noisegate]\n")
    report = hermes_json("plugins", "doctor")
    row = next(p for p in report["plugins"] if p["id"] == "noisegate")
    assert row["status"] == "ok" and row["registered"] == {"hooks": ["transform_tool_result",
                                                                     "transform_terminal_output"]}
    assert row["unfired_hooks"] == ["transform_terminal_output"]
    assert all(p["unfired_hooks"] == [] for p in report["plugins"] if p["id"] != "noisegate")
    line = "plugin 'noisegate' registered hooks this host never fires: transform_terminal_output"
    assert line in report["warnings"]  # --json carries what the text prints
    assert f"warning: {line}" in hermes("plugins", "doctor").stdout


def test_slash_commands_and_reset_fire_pre_command_and_the_session_boundary(home: Path, llm_server) -> None:
    recorder(home, {"pre_command", "on_session_start", "on_session_finalize", "on_session_reset", "pre_llm_call"})
    llm_config(home, llm_server.url, "plugins:\n  enabled: [recorder, textstats]\n")
    llm_server.always("ok")
    chat = hermes("chat", input="/wc one two three\n/reset\nhello\n/nope x\n/exit\n")
    assert "3 words" in chat.stdout and "conversation cleared" in chat.stdout and "unknown command /nope" in chat.stdout
    calls = recorded(home)
    session_id = calls[0][1]["session_id"]
    assert [(name, kwargs.get("command") or kwargs.get("reason")) for name, kwargs in calls] == [
        ("on_session_start", None), ("pre_command", "wc"), ("pre_command", "reset"),
        ("on_session_finalize", "session_boundary"), ("on_session_reset", "new_session"), ("on_session_start", None),
        ("pre_llm_call", None), ("on_session_finalize", "shutdown"),
    ]  # an unknown command is not a command: no pre_command
    wc = calls[1][1]
    assert {k: wc[k] for k in ("surface", "alias_used", "args_raw", "session_key", "platform")} == {
        "surface": "cli", "alias_used": "wc", "args_raw": "one two three", "session_key": session_id,
        "platform": "cli"}
    assert calls[6][1]["is_first_turn"] is True  # the cleared conversation starts afresh


def test_ctrl_c_during_a_turn_fires_agent_loop_stopped_and_an_interrupted_turn_end(home: Path, llm_server) -> None:
    import time

    recorder(home, {"agent_loop_stopped", "on_session_end", "pre_api_request"})
    llm_config(home, llm_server.url, "plugins:\n  enabled: [recorder]\n")
    llm_server.reply("too late", delay=30).reply("Here now.")
    chat = subprocess.Popen([str(HERMES), "chat"], preexec_fn=sigint_default, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    assert chat.stdin is not None
    chat.stdin.write("a slow question\n")
    chat.stdin.flush()
    deadline = time.monotonic() + 30
    while len(llm_server.requests) < 1:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    chat.send_signal(signal.SIGINT)
    out, err = chat.communicate("again\n/exit\n", timeout=60)
    assert chat.returncode == 0 and "Here now." in out, err
    calls = recorded(home)
    assert [name for name, _ in calls] == ["pre_api_request", "agent_loop_stopped", "on_session_end",
                                           "pre_api_request", "on_session_end"]
    stopped, interrupted, _, finished = (kwargs for _, kwargs in calls[1:])
    assert (stopped["reason"], stopped["invalidation_reason"], stopped["platform"]) == (
        "user_stop", "session_interrupt", "cli")
    assert stopped["session_key"] == interrupted["session_id"]
    assert (interrupted["interrupted"], interrupted["completed"], interrupted["turn_exit_reason"]) == (
        True, False, "interrupted")
    assert finished["completed"] is True and finished["turn_id"] != interrupted["turn_id"]


@pytest.mark.fires("pre_auxiliary_call", "post_auxiliary_call", "pre_llm_call")
def test_the_compression_summary_fires_the_auxiliary_hooks_naming_the_turn(home: Path, llm_server) -> None:
    recorder(home, {"pre_llm_call", "pre_auxiliary_call", "post_auxiliary_call", "pre_api_request"})
    llm_config(home, llm_server.url, "  context_length: 4000\ncompression:\n  protect_last_n: 4\n"
               "plugins:\n  enabled: [recorder]\n")
    llm_server.always(Reply("summary or answer", usage={"prompt_tokens": 3_000, "completion_tokens": 10}))
    manager = PluginManager()
    with Agent(manager) as agent:
        for n in range(6):
            agent.ask(f"turn {n}: tell me about topic{n} " + "and more " * 300)  # too big to keep whole
    calls = manager.record("recorder").module.SEEN
    aux = [(name, kwargs) for name, kwargs in calls if name.endswith("_auxiliary_call")]
    assert aux and [name for name, _ in aux[:2]] == ["pre_auxiliary_call", "post_auxiliary_call"]
    (_, pre), (_, post) = aux[:2]
    turn = [kwargs for name, kwargs in calls if name == "pre_llm_call" and
            calls.index((name, kwargs)) < calls.index(("pre_auxiliary_call", pre))][-1]
    assert (pre["aux_task"], pre["task"], pre["turn_id"], pre["session_id"], pre["platform"]) == (
        "compression", "compression", turn["turn_id"], agent.session_id, "cli")
    assert pre["system_prompt"] and pre["request_messages"] and pre["retry_count"] == 0 and pre["api_call_count"] == 1
    assert post["error"] is None and post["usage"]["output_tokens"] == 10 and post["api_request_id"] == pre[
        "api_request_id"]
    assert not any(kwargs["api_request_id"] == pre["api_request_id"] for name, kwargs in calls
                   if name == "pre_api_request")  # side calls are not the turn's model requests
