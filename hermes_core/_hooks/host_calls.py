"""The typed calls of the hooks only a gateway, an approval prompt, kanban, voice or subagent
machinery has a moment for (`hookspecs.host`): a mixin of `LifecycleHooks`, so a host that
has such a moment fires the hook as `manager.lifecycle.<hook>(...)`, typed like the rest."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from ..hookspecs import host as specs
from .chains import Chain, LastFields, SpeechDecision, SpeechGate
from .runner import HookCall

__all__ = ["HostHookCalls"]

R = TypeVar("R")


def _dispatch_action(result: Mapping[str, Any]) -> bool:
    return result.get("action") in ("skip", "rewrite", "allow")


def _blocks(result: Mapping[str, Any]) -> bool:
    return result.get("action") == "block" and bool(result.get("message"))


class HostHookCalls:
    """The gateway, approval, kanban, voice and subagent hooks (see `LifecycleHooks`)."""

    __slots__ = ()

    def _call(self, spec: Callable[..., Any], chain: Chain[R]) -> HookCall[R]:
        raise NotImplementedError

    def _notify(self, spec: Callable[..., Any], given: Mapping[str, Any]) -> HookCall[None]:
        raise NotImplementedError

    def _directive(
        self, spec: Callable[..., Any], given: Mapping[str, Any], recognised: Callable[[Mapping[str, Any]], bool]
    ) -> HookCall[dict[str, Any] | None]:
        raise NotImplementedError

    @staticmethod
    def _given(given: Mapping[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in given.items() if k != "self"}

    # -- subagents -------------------------------------------------------------------------

    def subagent_start(
        self, *, parent_session_id: str, parent_turn_id: str, parent_subagent_id: str | None,
        child_session_id: str, child_subagent_id: str, child_role: str, child_goal: str,
    ) -> HookCall[None]:
        """A delegated child agent is about to run."""
        return self._notify(specs.subagent_start, locals())

    def subagent_stop(
        self, *, parent_session_id: str, parent_turn_id: str, child_session_id: str, child_role: str,
        child_summary: str, child_status: str, duration_ms: int,
    ) -> HookCall[None]:
        """A delegated child agent finished."""
        return self._notify(specs.subagent_stop, locals())

    # -- approval --------------------------------------------------------------------------

    def pre_approval_request(
        self, *, command: str, description: str, pattern_key: str, pattern_keys: list[str], session_key: str,
        surface: str, turn_id: str = "", tool_call_id: str = "", session_id: str = "",
    ) -> HookCall[None]:
        """A dangerous command is about to be put to a human."""
        return self._notify(specs.pre_approval_request, locals())

    def post_approval_response(
        self, *, command: str, description: str, pattern_key: str, pattern_keys: list[str], session_key: str,
        surface: str, choice: str, turn_id: str = "", tool_call_id: str = "", session_id: str = "",
        decided_by: str | None = None,
    ) -> HookCall[None]:
        """The approval was decided."""
        return self._notify(specs.post_approval_response, locals())

    # -- skills, voice ---------------------------------------------------------------------

    def on_skill_lifecycle(
        self, *, action: str, skill_name: str, provenance: str, task_id: str, session_id: str,
        use_count: int | None = None, reused: bool | None = None, reuse_after_patch: bool | None = None,
    ) -> HookCall[None]:
        """A skill's usage state changed."""
        return self._notify(specs.on_skill_lifecycle, locals())

    def pre_transcription(
        self, *, file_path: str, provider: str, model: str, language: str | None, prompt: str | None, source: str
    ) -> HookCall[dict[str, str]]:
        """The `prompt`, `language` and `model` the callbacks set (the last writer wins per field)."""
        return self._call(specs.pre_transcription, LastFields(self._given(locals()), ("prompt", "language", "model")))

    def pre_tts_synthesis(self, *, text: str, provider: str) -> HookCall[SpeechDecision]:
        """Whether `text` may be spoken, and as which script (fails closed)."""
        return self._call(specs.pre_tts_synthesis, SpeechGate(self._given(locals())))

    # -- a gateway -------------------------------------------------------------------------

    def pre_gateway_dispatch(self, *, event: Any, gateway: Any, session_store: Any) -> HookCall[dict[str, Any] | None]:
        """An inbound message: the first `skip`/`rewrite`/`allow` directive, or None."""
        return self._directive(specs.pre_gateway_dispatch, locals(), _dispatch_action)

    def gateway_platform_event(self, *, platform: str, event_type: str, payload: dict[str, Any]) -> HookCall[None]:
        """A platform event that is not a message (no `telemetry_schema_version`, as in Hermes)."""
        return self._notify(specs.gateway_platform_event, locals())

    def on_room_member_activity(
        self, *, room_id: str, thread_id: str, member_id: str, turn_id: str, task_id: str,
        execution_generation: int, kind: str, seq: int, payload: dict[str, Any],
    ) -> HookCall[None]:
        """Activity of a member's turn in a hosted group chat."""
        return self._notify(specs.on_room_member_activity, locals())

    def pre_response_delivery(
        self, *, session_id: str, turn_id: str, user_message: Any, final_response: str,
        conversation_history: list[dict[str, Any]], platform: str,
    ) -> HookCall[dict[str, Any] | None]:
        """Before an answer is delivered: the first `block` directive (with a message), or None."""
        return self._directive(specs.pre_response_delivery, locals(), _blocks)

    # -- kanban ----------------------------------------------------------------------------

    def kanban_task_claimed(
        self, *, task_id: str, board: str, assignee: str, run_id: str, profile_name: str
    ) -> HookCall[None]:
        """A kanban task was claimed."""
        return self._notify(specs.kanban_task_claimed, locals())

    def kanban_task_completed(
        self, *, task_id: str, board: str, assignee: str, run_id: str, profile_name: str, summary: str
    ) -> HookCall[None]:
        """A kanban task was completed."""
        return self._notify(specs.kanban_task_completed, locals())

    def kanban_task_blocked(
        self, *, task_id: str, board: str, assignee: str, run_id: str, profile_name: str, reason: str
    ) -> HookCall[None]:
        """A kanban task was blocked."""
        return self._notify(specs.kanban_task_blocked, locals())

    def on_kanban_worker_spawned(
        self, *, task_id: str, board: str, assignee: str, run_id: str, profile_name: str, worker_pid: int,
        workspace_path: str,
    ) -> HookCall[None]:
        """A kanban worker started."""
        return self._notify(specs.on_kanban_worker_spawned, locals())

    def on_kanban_worker_exited(
        self, *, task_id: str, board: str, assignee: str, run_id: str, profile_name: str, worker_pid: int,
        exit_kind: str, exit_code: int | None, outcome: str, retry_status: str,
    ) -> HookCall[None]:
        """A kanban worker exited."""
        return self._notify(specs.on_kanban_worker_exited, locals())

    def on_kanban_worker_stale_claim(
        self, *, task_id: str, board: str, assignee: str, run_id: str, profile_name: str, worker_pid: int,
        heartbeat_stale: bool, retry_status: str,
    ) -> HookCall[None]:
        """A kanban worker's claim went stale."""
        return self._notify(specs.on_kanban_worker_stale_claim, locals())

    def on_kanban_task_updated(
        self, *, task_id: str, board: str, assignee: str, run_id: str, profile_name: str, changed_fields: list[str]
    ) -> HookCall[None]:
        """A kanban task's fields changed."""
        return self._notify(specs.on_kanban_task_updated, locals())

    def on_kanban_dispatch_tick(
        self, *, board: str, profile_name: str, dry_run: bool, outcome: str, result: Any
    ) -> HookCall[None]:
        """The kanban dispatcher ran one pass."""
        return self._notify(specs.on_kanban_dispatch_tick, locals())
