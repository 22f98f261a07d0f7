"""`LifecycleHooks`: the typed call layer over the lifecycle hooks, one method per hook.

Host code never fires a hook by a string: it calls the method of that hook, whose keyword
arguments are the spec's (`hookspecs`, Hermes' names) and gets a `HookCall` to `run()` (sync
code) or `await arun()` (async code). A renamed or removed spec is an error here, at import
and in the type checker, not a hook that silently stops firing (tox 4's typed call layer is
the model). Each method hands its own keyword arguments on as the payload (`locals()`), so
the payload is exactly the signature, which a meta-test holds to the spec;
`telemetry_schema_version` is added by the runner. The hooks only a gateway, approval prompt,
kanban, voice or subagent machinery fires are in `host_calls`.

>>> hooks = manager.lifecycle
>>> hooks.on_session_start(session_id="s1", model="gpt-4o", platform="cli").run()
>>> decision = await hooks.pre_tool_call(tool_name="terminal", args={"command": "ls"}, task_id="t1",
...     session_id="s1", tool_call_id="c1", turn_id="s1:t1:1", api_request_id="s1:t1:1:api:1").arun()
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from .. import hookspecs
from .._messages import Message, Messages
from .chains import Chain, Classification, Context, FirstDirective, FirstText, Gate, Notify, ToolDecision
from .host_calls import HostHookCalls
from .runner import HookCall, HookRunner

__all__ = ["LifecycleHooks"]

R = TypeVar("R")


def _payload(given: Mapping[str, Any]) -> dict[str, Any]:
    """A typed method's keyword arguments as the hook's payload (`middleware_trace` None → [])."""
    payload = {k: v for k, v in given.items() if k != "self"}
    if "middleware_trace" in payload and payload["middleware_trace"] is None:
        payload["middleware_trace"] = []
    return payload


def _continues(result: Mapping[str, Any]) -> bool:
    """`pre_verify`: `{"action"|"decision": "continue"|"block", "message"|"reason": text}`."""
    verdict = result.get("action") or result.get("decision")
    text = result.get("message") or result.get("reason")
    return verdict in ("continue", "block") and isinstance(text, str) and bool(text.strip())


def _blocks(result: Mapping[str, Any]) -> bool:
    """`on_budget_check`: `{"action": "block", "message": text}`."""
    return result.get("action") == "block"


class LifecycleHooks(HostHookCalls):
    """Every lifecycle hook a host calls, typed: see `hookspecs` (and docs/hooks.md) for when
    each one fires and what its arguments mean."""

    __slots__ = ("_runner", "__weakref__")

    def __init__(self, runner: HookRunner) -> None:
        self._runner = runner

    def __repr__(self) -> str:
        return "<LifecycleHooks>"

    def has(self, hook: str) -> bool:
        """Whether any plugin registered a callback for `hook`: skip building a costly payload when not."""
        return self._runner.has(hook)

    def _call(self, spec: Callable[..., Any], chain: Chain[R]) -> HookCall[R]:
        return self._runner.call(spec.__name__, chain)

    def _notify(self, spec: Callable[..., Any], given: Mapping[str, Any]) -> HookCall[None]:
        return self._call(spec, Notify(_payload(given)))

    def _directive(
        self, spec: Callable[..., Any], given: Mapping[str, Any], recognised: Callable[[Mapping[str, Any]], bool]
    ) -> HookCall[dict[str, Any] | None]:
        return self._call(spec, FirstDirective(_payload(given), recognised))

    # -- the session -----------------------------------------------------------------------

    def on_session_start(self, *, session_id: str, model: str, platform: str) -> HookCall[None]:
        """An agent session begins."""
        return self._notify(hookspecs.on_session_start, locals())

    def on_session_end(
        self, *, session_id: str, task_id: str, turn_id: str, completed: bool, failed: bool, interrupted: bool,
        turn_exit_reason: str, model: str, platform: str,
    ) -> HookCall[None]:
        """A turn was finalised (Hermes fires this once per turn)."""
        return self._notify(hookspecs.on_session_end, locals())

    def on_session_finalize(
        self, *, session_id: str, platform: str, reason: str, old_session_id: str | None = None,
        new_session_id: str | None = None,
    ) -> HookCall[None]:
        """The session is over: `reason` `shutdown` or `session_boundary`."""
        return self._notify(hookspecs.on_session_finalize, locals())

    def on_session_reset(
        self, *, session_id: str, platform: str, reason: str, old_session_id: str | None = None,
        new_session_id: str | None = None,
    ) -> HookCall[None]:
        """The conversation was cleared and goes on."""
        return self._notify(hookspecs.on_session_reset, locals())

    # -- the turn --------------------------------------------------------------------------

    def pre_llm_call(
        self, *, session_id: str, task_id: str, turn_id: str, user_message: Any,
        conversation_history: Messages, is_first_turn: bool, model: str, platform: str,
        parent_session_id: str = "", sender_id: str = "",
    ) -> HookCall[str | None]:
        """Once per turn: the context to add to this turn's user message, or None."""
        return self._call(hookspecs.pre_llm_call, Context(_payload(locals())))

    def post_llm_call(
        self, *, session_id: str, task_id: str, turn_id: str, user_message: Any, assistant_response: str,
        conversation_history: Messages, model: str, platform: str,
    ) -> HookCall[None]:
        """The turn's final answer is known."""
        return self._notify(hookspecs.post_llm_call, locals())

    def transform_llm_output(
        self, *, response_text: str, session_id: str, model: str, platform: str, turn_id: str
    ) -> HookCall[str | None]:
        """The final answer as it should be stored and shown: the first non-empty string, or None."""
        return self._call(hookspecs.transform_llm_output, FirstText(_payload(locals()), empty=False))

    def pre_verify(
        self, *, session_id: str, platform: str, model: str, coding: bool, attempt: int, final_response: str,
        changed_paths: list[str],
    ) -> HookCall[dict[str, Any] | None]:
        """Before a turn that edited files finishes: the first continue/block directive, or None."""
        return self._directive(hookspecs.pre_verify, locals(), _continues)

    def on_interim_message(
        self, *, turn_id: str, iteration: int, session_id: str, model: str, provider: str, surface: str,
        text: str, already_streamed: bool = False,
    ) -> HookCall[None]:
        """The model's visible text on its way to calling tools."""
        return self._notify(hookspecs.on_interim_message, locals())

    def agent_loop_stopped(
        self, *, session_key: str, platform: str, reason: str, invalidation_reason: str
    ) -> HookCall[None]:
        """A running turn was stopped by the user."""
        return self._notify(hookspecs.agent_loop_stopped, locals())

    def pre_command(
        self, *, surface: str, command: str, alias_used: str, args_raw: str, session_key: str, platform: str
    ) -> HookCall[None]:
        """A slash command is about to run."""
        return self._notify(hookspecs.pre_command, locals())

    # -- model requests --------------------------------------------------------------------

    def pre_api_request(
        self, *, task_id: str, turn_id: str, api_request_id: str, session_id: str, user_message: Any,
        conversation_history: Messages, platform: str, model: str, provider: str, base_url: str,
        api_mode: str, api_call_count: int, request_messages: Messages, message_count: int,
        tool_count: int, approx_input_tokens: int, request_char_count: int, max_tokens: int | None,
        started_at: float, request: dict[str, Any], middleware_trace: list[Any] | None = None,
    ) -> HookCall[None]:
        """Right before an attempt of a model request."""
        return self._notify(hookspecs.pre_api_request, locals())

    def post_api_request(
        self, *, task_id: str, turn_id: str, api_request_id: str, session_id: str, platform: str, model: str,
        provider: str, base_url: str, api_mode: str, api_call_count: int, api_duration: float, started_at: float,
        ended_at: float, finish_reason: str | None, message_count: int, response_model: str | None,
        response: dict[str, Any], usage: dict[str, Any] | None, assistant_message: Message,
        assistant_content_chars: int, assistant_tool_call_count: int,
    ) -> HookCall[None]:
        """A model request was answered."""
        return self._notify(hookspecs.post_api_request, locals())

    def api_request_error(
        self, *, task_id: str, turn_id: str, api_request_id: str, session_id: str, platform: str, model: str,
        provider: str, base_url: str, api_mode: str, api_call_count: int, api_duration: float, started_at: float,
        ended_at: float, status_code: int | None, retry_count: int, max_retries: int, retryable: bool,
        reason: str, error: dict[str, Any], request: dict[str, Any], first_chunk_at: float | None = None,
        first_delta_at: float | None = None,
    ) -> HookCall[None]:
        """An attempt of a model request failed."""
        return self._notify(hookspecs.api_request_error, locals())

    def transform_api_error_classification(
        self, *, provider: str, model: str, status_code: int | None, error_type: str, error_code: str | None,
        error_message: str, error_body: dict[str, Any], error: BaseException, approx_tokens: int,
        context_length: int, num_messages: int,
    ) -> HookCall[dict[str, Any] | None]:
        """A plugin's classification of a provider error (`reason`, flags), or None."""
        return self._call(hookspecs.transform_api_error_classification, Classification(_payload(locals())))

    def pre_auxiliary_call(
        self, *, session_id: str, task_id: str, turn_id: str, platform: str, aux_task: str, task: str,
        api_request_id: str, retry_count: int, api_call_count: int, model: str, provider: str, base_url: str,
        api_mode: str, streaming: bool, started_at: float, message_count: int,
        request_messages: Messages, system_prompt: str, tool_count: int, approx_input_tokens: int,
        request_char_count: int, max_tokens: int | None, request: dict[str, Any],
        middleware_trace: list[Any] | None = None,
    ) -> HookCall[None]:
        """Before an attempt of a host side call to a model."""
        return self._notify(hookspecs.pre_auxiliary_call, locals())

    def post_auxiliary_call(
        self, *, session_id: str, task_id: str, turn_id: str, platform: str, aux_task: str, task: str,
        api_request_id: str, retry_count: int, api_call_count: int, model: str, provider: str, base_url: str,
        api_mode: str, streaming: bool, started_at: float, message_count: int, ended_at: float,
        api_duration: float, error: str | None, error_type: str | None, finish_reason: str | None,
        response_model: str | None, usage: dict[str, Any] | None, response: dict[str, Any] | None,
        assistant_content_chars: int, assistant_tool_call_count: int, middleware_trace: list[Any] | None = None,
    ) -> HookCall[None]:
        """After an attempt of a host side call."""
        return self._notify(hookspecs.post_auxiliary_call, locals())

    def on_budget_check(
        self, *, plugin_id: str, budget: dict[str, Any], used: dict[str, float], requested: dict[str, float],
    ) -> HookCall[dict[str, Any] | None]:
        """Before a plugin's `ctx.llm` call: a `{"action": "block", "message": text}` refusal, or None."""
        return self._directive(hookspecs.on_budget_check, locals(), _blocks)

    def implementers(self, hook: str) -> frozenset[str]:
        """The plugin ids with a callback for `hook`."""
        return frozenset(cb.plugin_id for cb in self._runner.callbacks(hook) if cb.plugin_id is not None)

    # -- streaming (queued off the token path: `agent.streaming`) -----------------------------

    def on_stream_start(
        self, *, turn_id: str, iteration: int, session_id: str, model: str, provider: str, surface: str
    ) -> HookCall[None]:
        """A streamed response begins."""
        return self._notify(hookspecs.on_stream_start, locals())

    def on_stream_delta(
        self, *, turn_id: str, iteration: int, session_id: str, model: str, provider: str, surface: str,
        delta: str, kind: str = "text",
    ) -> HookCall[None]:
        """One delta of a streamed response."""
        return self._notify(hookspecs.on_stream_delta, locals())

    def on_stream_end(
        self, *, turn_id: str, iteration: int, session_id: str, model: str, provider: str, surface: str,
        final_text: str, finished: bool, error: str | None = None,
    ) -> HookCall[None]:
        """A streamed response closed or broke off."""
        return self._notify(hookspecs.on_stream_end, locals())

    # -- tools ------------------------------------------------------------------------------

    def pre_tool_call(
        self, *, tool_name: str, args: Mapping[str, Any], task_id: str, session_id: str, tool_call_id: str,
        turn_id: str, api_request_id: str, middleware_trace: list[Any] | None = None,
    ) -> HookCall[ToolDecision]:
        """Before a tool runs: whether it may, and with which arguments (fails closed)."""
        rest = _payload(locals())
        del rest["tool_name"], rest["args"]
        return self._call(hookspecs.pre_tool_call, Gate(tool_name, args, rest))

    def post_tool_call(
        self, *, tool_name: str, args: dict[str, Any], result: str, task_id: str, session_id: str,
        tool_call_id: str, turn_id: str, api_request_id: str, duration_ms: int, status: str,
        error_type: str | None, error_message: str | None, middleware_trace: list[Any] | None = None,
    ) -> HookCall[None]:
        """After a tool ran (or was blocked)."""
        return self._notify(hookspecs.post_tool_call, locals())

    def transform_tool_result(
        self, *, tool_name: str, args: dict[str, Any], result: str, task_id: str, session_id: str,
        tool_call_id: str, turn_id: str, api_request_id: str, duration_ms: int, status: str,
        error_type: str | None, error_message: str | None,
    ) -> HookCall[str | None]:
        """A tool's result as the model should see it: the first string a callback returns, or None."""
        return self._call(hookspecs.transform_tool_result, FirstText(_payload(locals())))

    def transform_terminal_output(
        self, *, command: str, output: str, returncode: int | None, task_id: str, env_type: str,
        tool_call_id: str = "",
    ) -> HookCall[str | None]:
        """A shell command's output as it should go on: the first string a callback returns, or None."""
        return self._call(hookspecs.transform_terminal_output, FirstText(_payload(locals())))
