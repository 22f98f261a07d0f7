"""The hooks only a gateway, an approval prompt, kanban, voice or subagent machinery has a moment
for: declared with Hermes' arguments, so that a host with such a moment fires them through the
typed layer (`manager.lifecycle`), each with Hermes' way of combining the callbacks' answers."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from hermes_core import HookRunner, LifecycleHooks, PluginManager


@pytest.fixture
def runner() -> HookRunner:
    return HookRunner(lambda: 1.0)


@pytest.fixture
def hooks(runner: HookRunner) -> LifecycleHooks:
    return LifecycleHooks(runner)


@pytest.mark.fires("subagent_start", "subagent_stop")
def test_a_host_fires_a_declared_hook_through_the_manager(home: Path) -> None:
    manager = PluginManager(discover_plugins=False)
    seen = []
    manager.add_plugin(lambda ctx: [
        ctx.register_hook("subagent_start", lambda child_goal: seen.append(("started", child_goal))),
        ctx.register_hook("subagent_stop", lambda child_status, **kw: seen.append(
            (child_status, kw["duration_ms"], kw["telemetry_schema_version"])))], "tree")
    manager.lifecycle.subagent_start(parent_session_id="p", parent_turn_id="p:t:1", parent_subagent_id=None,
                                     child_session_id="c", child_subagent_id="c1", child_role="leaf",
                                     child_goal="sum it").run()
    manager.lifecycle.subagent_stop(parent_session_id="p", parent_turn_id="p:t:1", child_session_id="c",
                                    child_role="leaf", child_summary="42", child_status="completed",
                                    duration_ms=12).run()
    assert seen == [("started", "sum it"), ("completed", 12, "hermes.observer.v1")]


@pytest.mark.fires("pre_gateway_dispatch")
def test_pre_gateway_dispatch_the_first_recognised_action_wins(runner, hooks) -> None:
    runner.add("pre_gateway_dispatch", lambda event: "not a directive", "a")
    runner.add("pre_gateway_dispatch", lambda event: {"action": "frobnicate"}, "b")
    runner.add("pre_gateway_dispatch", lambda event: {"action": "rewrite", "text": event.upper()}, "c")
    runner.add("pre_gateway_dispatch", lambda event: {"action": "skip", "reason": "never asked"}, "d")
    decision = hooks.pre_gateway_dispatch(event="hi", gateway=None, session_store=None).run()
    assert decision == {"action": "rewrite", "text": "HI"}


@pytest.mark.fires("gateway_platform_event")
def test_gateway_platform_event_carries_no_telemetry_version(runner, hooks) -> None:
    seen = []
    runner.add("gateway_platform_event", lambda **kw: seen.append(sorted(kw)), "p")
    hooks.gateway_platform_event(platform="telegram", event_type="reaction", payload={"emoji": "+1"}).run()
    assert seen == [["event_type", "payload", "platform"]]


@pytest.mark.fires("pre_transcription")
def test_pre_transcription_the_last_writer_wins_per_field(runner, hooks) -> None:
    runner.add("pre_transcription", lambda: {"language": "en", "prompt": "names: Ana", "file_path": "/x"}, "a")
    runner.add("pre_transcription", lambda: {"language": "pt", "model": 3}, "b")
    changes = hooks.pre_transcription(file_path="/tmp/a.ogg", provider="local", model="whisper", language=None,
                                      prompt=None, source="gateway").run()
    assert changes == {"language": "pt", "prompt": "names: Ana"}  # strings only; file_path is not theirs


@pytest.mark.fires("pre_tts_synthesis")
def test_pre_tts_synthesis_rewrites_once_and_fails_closed(runner, hooks) -> None:
    def speak():
        return hooks.pre_tts_synthesis(text="see https://x.io", provider="edge").run()

    assert speak() == speak() and not speak().blocked  # no callbacks: spoken as it is
    runner.add("pre_tts_synthesis", lambda text: {"text": text.replace("https://", "")}, "tidy")
    decision = speak()
    assert not decision.blocked and decision.text == "see x.io"
    runner.add("pre_tts_synthesis", lambda text: {"text": text + "!"}, "again")
    assert speak().blocked  # a second rewrite is refused


@pytest.mark.parametrize("answer", [lambda text: 1 / 0, lambda text: "ok", lambda text: {"action": "block"}])
def test_pre_tts_synthesis_refuses_on_failure_or_nonsense(runner, hooks, answer) -> None:
    runner.add("pre_tts_synthesis", answer, "guard")
    decision = hooks.pre_tts_synthesis(text="hello", provider="edge").run()
    assert decision.blocked and decision.text == "hello" and decision.message


@pytest.mark.fires("pre_response_delivery")
def test_pre_response_delivery_the_first_block_with_a_message_wins(runner, hooks) -> None:
    runner.add("pre_response_delivery", lambda: {"action": "block"}, "empty")
    runner.add("pre_response_delivery", lambda final_response: {"action": "block", "message": "finish TODOs"}
               if "TODO" in final_response else None, "todo")
    ask = dict(session_id="s", turn_id="s:t:1", user_message="hi", conversation_history=[], platform="cli")
    assert hooks.pre_response_delivery(final_response="TODO: all", **ask).run() == {
        "action": "block", "message": "finish TODOs"}
    assert hooks.pre_response_delivery(final_response="done", **ask).run() is None


@pytest.mark.fires("pre_approval_request", "post_approval_response", "on_skill_lifecycle", "on_room_member_activity",
                   "kanban_task_claimed", "kanban_task_completed", "kanban_task_blocked", "on_kanban_worker_spawned",
                   "on_kanban_worker_exited", "on_kanban_worker_stale_claim", "on_kanban_task_updated",
                   "on_kanban_dispatch_tick")
def test_the_approval_skill_room_and_kanban_hooks_reach_their_callbacks(runner, hooks) -> None:
    seen = []
    for name in ("pre_approval_request", "post_approval_response", "on_skill_lifecycle", "on_room_member_activity",
                 "kanban_task_claimed", "kanban_task_completed", "kanban_task_blocked", "on_kanban_worker_spawned",
                 "on_kanban_worker_exited", "on_kanban_worker_stale_claim", "on_kanban_task_updated",
                 "on_kanban_dispatch_tick"):
        runner.add(name, lambda name=name, **kw: seen.append((name, kw.get("choice") or kw.get("task_id") or
                                                              kw.get("board"))), "p")
    approval = dict(command="rm -rf build", description="recursive delete", pattern_key="rm", pattern_keys=["rm"],
                    session_key="s", surface="cli")
    hooks.pre_approval_request(**approval).run()
    hooks.post_approval_response(**approval, choice="once").run()
    hooks.on_skill_lifecycle(action="loaded", skill_name="git", provenance="local", task_id="t1", session_id="s").run()
    hooks.on_room_member_activity(room_id="r", thread_id="th", member_id="m", turn_id="u", task_id="t2",
                                  execution_generation=1, kind="tool.started", seq=1, payload={}).run()
    task = dict(task_id="k1", board="main", assignee="bot", run_id="r1", profile_name="default")
    hooks.kanban_task_claimed(**task).run()
    hooks.kanban_task_completed(**task, summary="done").run()
    hooks.kanban_task_blocked(**task, reason="waiting").run()
    hooks.on_kanban_worker_spawned(**task, worker_pid=7, workspace_path="/w").run()
    hooks.on_kanban_worker_exited(**task, worker_pid=7, exit_kind="normal", exit_code=0, outcome="completed",
                                  retry_status="none").run()
    hooks.on_kanban_worker_stale_claim(**task, worker_pid=7, heartbeat_stale=True, retry_status="retry").run()
    hooks.on_kanban_task_updated(**task, changed_fields=["title"]).run()
    hooks.on_kanban_dispatch_tick(board="main", profile_name="default", dry_run=False, outcome="idle",
                                  result=None).run()
    assert seen == [("pre_approval_request", None), ("post_approval_response", "once"),
                    ("on_skill_lifecycle", "t1"), ("on_room_member_activity", "t2"),
                    *[(name, "k1") for name in ("kanban_task_claimed", "kanban_task_completed",
                                                "kanban_task_blocked", "on_kanban_worker_spawned",
                                                "on_kanban_worker_exited", "on_kanban_worker_stale_claim",
                                                "on_kanban_task_updated")],
                    ("on_kanban_dispatch_tick", "main")]


@pytest.mark.fires("pre_verify")
def test_pre_verify_the_first_continue_or_block_with_text_wins(runner, hooks) -> None:
    runner.add("pre_verify", lambda: {"action": "continue"}, "no-text")
    runner.add("pre_verify", lambda changed_paths: {"decision": "block", "reason": f"test {changed_paths[0]}"}, "a")
    runner.add("pre_verify", lambda: {"action": "continue", "message": "never asked"}, "b")
    verdict = hooks.pre_verify(session_id="s", platform="cli", model="m", coding=True, attempt=0,
                               final_response="done", changed_paths=["app.py"]).run()
    assert verdict == {"decision": "block", "reason": "test app.py"}


def test_the_stream_hooks_can_be_fired_by_a_streaming_host(runner, hooks) -> None:
    seen = []
    runner.add("on_stream_start", lambda turn_id: seen.append(("start", turn_id)), "p")
    runner.add("on_stream_delta", lambda delta, kind: seen.append(("delta", delta, kind)), "p")
    runner.add("on_stream_end", lambda final_text, finished, error: seen.append(("end", final_text, finished, error)),
               "p")
    base = dict(turn_id="s:t:1", iteration=1, session_id="s", model="m", provider="custom", surface="cli")
    hooks.on_stream_start(**base).run()
    hooks.on_stream_delta(**base, delta="Hel").run()
    hooks.on_stream_end(**base, final_text="Hello", finished=True).run()
    assert seen == [("start", "s:t:1"), ("delta", "Hel", "text"), ("end", "Hello", True, None)]


@pytest.mark.fires("transform_terminal_output")
def test_transform_terminal_output_the_first_string_wins_even_empty(runner, hooks) -> None:
    runner.add("transform_terminal_output", lambda: None, "quiet")
    runner.add("transform_terminal_output", lambda output: "", "silence")
    runner.add("transform_terminal_output", lambda output: "never", "late")
    assert hooks.transform_terminal_output(command="ls", output="a b", returncode=0, task_id="t",
                                           env_type="local").run() == ""


def test_a_declared_hook_a_host_never_fires_is_kept_without_a_warning(home: Path, caplog) -> None:
    manager = PluginManager(discover_plugins=False)
    with caplog.at_level(logging.WARNING):
        record = manager.add_plugin(lambda ctx: ctx.register_hook("on_kanban_task_updated", print), "board")
    assert record.registered == {"hooks": ["on_kanban_task_updated"]} and "unknown hook" not in caplog.text
