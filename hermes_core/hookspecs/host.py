"""The lifecycle hooks only a gateway, an approval prompt, kanban, voice or subagent machinery
has a moment for: Hermes' names and keyword arguments, declared so that a host with such a
moment fires them (`manager.lifecycle.<hook>(...)`). The reference host fires none of them.
Re-exported by `hermes_core.hookspecs`, where the rest of the specs are.
"""

from __future__ import annotations

from typing import Any

from .._messages import Messages
from ._markers import declare

__all__ = [
    "gateway_platform_event", "kanban_task_blocked", "kanban_task_claimed", "kanban_task_completed",
    "on_kanban_dispatch_tick", "on_kanban_task_updated", "on_kanban_worker_exited", "on_kanban_worker_spawned",
    "on_kanban_worker_stale_claim", "on_room_member_activity", "on_skill_lifecycle", "post_approval_response",
    "pre_approval_request", "pre_gateway_dispatch", "pre_response_delivery", "pre_transcription",
    "pre_tts_synthesis", "subagent_start", "subagent_stop",
]


@declare("lifecycle")
def subagent_start(
    parent_session_id: str, parent_turn_id: str, parent_subagent_id: str | None, child_session_id: str,
    child_subagent_id: str, child_role: str, child_goal: str, telemetry_schema_version: str,
) -> None:
    """A delegated child agent was built and is about to run.

    Example::

        @hookimpl
        def subagent_start(parent_session_id, child_session_id, child_goal):
            tree.add(parent_session_id, child_session_id, child_goal)
    """


@declare("lifecycle")
def subagent_stop(
    parent_session_id: str, parent_turn_id: str, child_session_id: str, child_role: str, child_summary: str,
    child_status: str, duration_ms: int, telemetry_schema_version: str,
) -> None:
    """A delegated child agent finished: ``child_status`` is ``completed``, ``failed``,
    ``interrupted``, ``error`` or ``timeout``.

    Example::

        @hookimpl
        def subagent_stop(child_session_id, child_status, duration_ms):
            tree.close(child_session_id, child_status, duration_ms)
    """


@declare("lifecycle")
def pre_approval_request(
    command: str, description: str, pattern_key: str, pattern_keys: list[str], session_key: str, surface: str,
    turn_id: str, tool_call_id: str, session_id: str, telemetry_schema_version: str,
) -> None:
    """A dangerous command is about to be put to a human (or a guardian model); a plugin
    cannot answer for them.

    Example::

        @hookimpl
        def pre_approval_request(command, surface):
            pager.notify(f"approval needed on {surface}: {command}")
    """


@declare("lifecycle")
def post_approval_response(
    command: str, description: str, pattern_key: str, pattern_keys: list[str], session_key: str, surface: str,
    turn_id: str, tool_call_id: str, session_id: str, choice: str, decided_by: str | None,
    telemetry_schema_version: str,
) -> None:
    """The approval was decided: ``choice`` is ``once``, ``session``, ``always``, ``deny``,
    ``timeout``, ... (``smart_approve``/``smart_deny`` with ``decided_by="aux_llm"``).

    Example::

        @hookimpl
        def post_approval_response(command, choice):
            audit.write(f"{choice}: {command}")
    """


@declare("lifecycle")
def on_skill_lifecycle(
    action: str, skill_name: str, provenance: str, task_id: str, session_id: str, use_count: int | None,
    reused: bool | None, reuse_after_patch: bool | None, telemetry_schema_version: str,
) -> None:
    """A skill's usage state changed (``action`` ``loaded``, ``patched``, ...).

    Example::

        @hookimpl
        def on_skill_lifecycle(action, skill_name):
            stats[skill_name][action] += 1
    """


@declare("lifecycle")
def pre_transcription(
    file_path: str, provider: str, model: str, language: str | None, prompt: str | None, source: str,
    telemetry_schema_version: str,
) -> Any:
    """Before audio is transcribed: return a dict with ``prompt``, ``language`` or ``model``
    (strings) to change them; the last callback to set a field wins.

    Example::

        @hookimpl
        def pre_transcription(source):
            if source == "voice_mode":
                return {"language": "pt"}
    """


@declare("lifecycle")
def pre_tts_synthesis(text: str, provider: str, telemetry_schema_version: str) -> Any:
    """Before text is spoken: return ``{"action": "block", "message": text}`` to refuse, or
    ``{"text": script}`` to rewrite the script once. Fails closed: a callback that raises,
    times out or answers anything else refuses synthesis.

    Example::

        @hookimpl
        def pre_tts_synthesis(text):
            return {"text": text.replace("https://", "link: ")}
    """


@declare("lifecycle")
def pre_gateway_dispatch(event: Any, gateway: Any, session_store: Any, telemetry_schema_version: str) -> Any:
    """An inbound gateway message, before auth and dispatch: ``{"action": "skip", "reason": text}``
    drops it, ``{"action": "rewrite", "text": text}`` replaces its text; the first such dict wins.

    Example::

        @hookimpl
        def pre_gateway_dispatch(event):
            if event.text.strip() == "ping":
                return {"action": "skip", "reason": "health check"}
    """


@declare("lifecycle")
def gateway_platform_event(platform: str, event_type: str, payload: dict[str, Any]) -> None:
    """A platform event that is not a message (``reaction``, ``message_edited``, ...); Hermes
    adds no ``telemetry_schema_version`` here.

    Example::

        @hookimpl
        def gateway_platform_event(platform, event_type, payload):
            if event_type == "reaction":
                reactions.record(platform, payload)
    """


@declare("lifecycle")
def on_room_member_activity(
    room_id: str, thread_id: str, member_id: str, turn_id: str, task_id: str, execution_generation: int,
    kind: str, seq: int, payload: dict[str, Any], telemetry_schema_version: str,
) -> None:
    """Activity of a member's turn in a hosted group chat (``kind`` ``tool.started``, ``message.delta``, ...).

    Example::

        @hookimpl
        def on_room_member_activity(room_id, member_id, kind):
            feed.push(room_id, member_id, kind)
    """


@declare("lifecycle")
def kanban_task_claimed(
    task_id: str, board: str, assignee: str, run_id: str, profile_name: str, telemetry_schema_version: str
) -> None:
    """A kanban task was claimed, right before its worker is spawned.

    Example::

        @hookimpl
        def kanban_task_claimed(task_id, assignee):
            board_ui.mark(task_id, f"claimed by {assignee}")
    """


@declare("lifecycle")
def kanban_task_completed(
    task_id: str, board: str, assignee: str, run_id: str, profile_name: str, summary: str,
    telemetry_schema_version: str,
) -> None:
    """A kanban task was completed by its worker.

    Example::

        @hookimpl
        def kanban_task_completed(task_id, summary):
            changelog.add(task_id, summary)
    """


@declare("lifecycle")
def kanban_task_blocked(
    task_id: str, board: str, assignee: str, run_id: str, profile_name: str, reason: str,
    telemetry_schema_version: str,
) -> None:
    """A kanban task was blocked by its worker.

    Example::

        @hookimpl
        def kanban_task_blocked(task_id, reason):
            pager.notify(f"task {task_id} blocked: {reason}")
    """


@declare("lifecycle")
def on_kanban_worker_spawned(
    task_id: str, board: str, assignee: str, run_id: str, profile_name: str, worker_pid: int,
    workspace_path: str, telemetry_schema_version: str,
) -> None:
    """A kanban worker process started.

    Example::

        @hookimpl
        def on_kanban_worker_spawned(task_id, worker_pid):
            workers[task_id] = worker_pid
    """


@declare("lifecycle")
def on_kanban_worker_exited(
    task_id: str, board: str, assignee: str, run_id: str, profile_name: str, worker_pid: int, exit_kind: str,
    exit_code: int | None, outcome: str, retry_status: str, telemetry_schema_version: str,
) -> None:
    """A kanban worker process exited.

    Example::

        @hookimpl
        def on_kanban_worker_exited(task_id, exit_code, outcome):
            workers.pop(task_id, None)
    """


@declare("lifecycle")
def on_kanban_worker_stale_claim(
    task_id: str, board: str, assignee: str, run_id: str, profile_name: str, worker_pid: int,
    heartbeat_stale: bool, retry_status: str, telemetry_schema_version: str,
) -> None:
    """A kanban worker's claim went stale (no heartbeat).

    Example::

        @hookimpl
        def on_kanban_worker_stale_claim(task_id, worker_pid):
            log.warning("worker %s of %s is stale", worker_pid, task_id)
    """


@declare("lifecycle")
def on_kanban_task_updated(
    task_id: str, board: str, assignee: str, run_id: str, profile_name: str, changed_fields: list[str],
    telemetry_schema_version: str,
) -> None:
    """A kanban task's fields changed (``changed_fields`` names them).

    Example::

        @hookimpl
        def on_kanban_task_updated(task_id, changed_fields):
            board_ui.refresh(task_id, changed_fields)
    """


@declare("lifecycle")
def on_kanban_dispatch_tick(
    board: str, profile_name: str, dry_run: bool, outcome: str, result: Any, telemetry_schema_version: str
) -> None:
    """The kanban dispatcher ran one pass.

    Example::

        @hookimpl
        def on_kanban_dispatch_tick(board, outcome):
            heartbeat.beat(board, outcome)
    """


@declare("lifecycle")
def pre_response_delivery(
    session_id: str, turn_id: str, user_message: Any, final_response: str,
    conversation_history: Messages, platform: str, telemetry_schema_version: str,
) -> Any:
    """Before a final answer is delivered (an older Hermes hook): ``{"action": "block",
    "message": text}`` sends the model back to work with that text; the first block wins.

    Example::

        @hookimpl
        def pre_response_delivery(final_response):
            if "TODO" in final_response:
                return {"action": "block", "message": "Finish the TODOs first."}
    """
