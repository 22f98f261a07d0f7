"""The hook specifications of hermes-core (pluggy project name ``"hermes"``).

Three families. *Registration hooks* run once when a plugin loads and receive that plugin's
own ``ctx``; the *CLI hook* runs when the ``hermes`` command line is built; *lifecycle hooks*
run while an agent works. Implement any of them in a plugin module with ``@hookimpl``; a
plain module-level ``register(ctx)`` needs no decorator.

Each spec is declared with its family (and, for a registration hook, what its return value
is), and every list of hook names below is derived from the declarations: adding a hook is
one spec here plus the code that calls it (for a lifecycle hook, a method of
``hermes_core.LifecycleHooks``).

The lifecycle hooks are Hermes Agent's, by name and keyword arguments (Hermes passes
``telemetry_schema_version`` on every call but ``gateway_platform_event``, and so does
hermes-core). Those the agent loop has a moment for are here; those only a gateway, an
approval prompt, kanban, voice or subagent machinery has a moment for are declared in
``hookspecs.host`` and re-exported here, so that any host can fire them. One lifecycle hook
is hermes-core's own (``HERMES_CORE_HOOKS``): ``on_budget_check``, around ``ctx.llm``'s budgets.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from .._messages import Message, Messages
from . import host
from ._markers import (
    PROJECT_NAME, TELEMETRY_SCHEMA_VERSION, UNVERSIONED_HOOKS, HookFamily, declare, declared, hookimpl, hookspec,
)
# The hooks only a gateway, an approval prompt, kanban, voice or subagent machinery has a moment for.
from .host import (
    gateway_platform_event, kanban_task_blocked, kanban_task_claimed, kanban_task_completed, on_kanban_dispatch_tick,
    on_kanban_task_updated, on_kanban_worker_exited, on_kanban_worker_spawned, on_kanban_worker_stale_claim,
    on_room_member_activity, on_skill_lifecycle, post_approval_response, pre_approval_request, pre_gateway_dispatch,
    pre_response_delivery, pre_transcription, pre_tts_synthesis, subagent_start, subagent_stop,
)

if TYPE_CHECKING:
    import click

    from .._ctx.context import PluginContext

__all__ = [
    "PROJECT_NAME", "hookspec", "hookimpl", "HookFamily", "HOOKS", "REGISTRATION_HOOKS", "LIFECYCLE_HOOKS",
    "CLI_HOOKS", "HERMES_CORE_HOOKS", "TELEMETRY_SCHEMA_VERSION", "UNVERSIONED_HOOKS", "hook_arguments",
]


# -- registration hooks ------------------------------------------------------------------


@declare("registration")
def register(ctx: PluginContext) -> None:
    """Register everything the plugin offers through ``ctx.register_*``; called once at load.

    Example::

        def register(ctx):
            ctx.register_tool("roll", "dice", {"name": "roll", "parameters": {"type": "object"}},
                              lambda args, **kw: '{"value": 4}')
    """


@declare("registration", returns="tools")
def register_tool(ctx: PluginContext) -> Any:
    """Return a ``Tool``, an iterable of ``Tool``, or None; called once at load.

    Example::

        @hookimpl
        def register_tool(ctx):
            return Tool("roll", "dice", {"name": "roll", "parameters": {"type": "object"}},
                        lambda args, **kw: '{"value": 4}')
    """


@declare("registration", returns="commands")
def register_command(ctx: PluginContext) -> Any:
    """Return a ``Command``, an iterable of ``Command``, or None; called once at load.

    Example::

        @hookimpl
        def register_command(ctx):
            return Command("shout", lambda raw_args: raw_args.upper(), description="Shout it")
    """


@declare("registration", returns="context_engine")
def register_context_engine(ctx: PluginContext) -> Any:
    """Return a context engine (a class, a factory or an instance), or None.

    It joins the ``context_engine`` slot; only ``context.engine`` in config activates it.

    Example::

        @hookimpl
        def register_context_engine(ctx):
            return LcmEngine   # the class: a fresh engine per agent session
    """


@declare("registration", returns="memory")
def register_memory_provider(ctx: PluginContext) -> Any:
    """Return a memory provider (a class, a factory or an instance), or None.

    It joins the ``memory`` slot; only ``memory.provider`` in config activates it.

    Example::

        @hookimpl
        def register_memory_provider(ctx):
            return VectorMemory
    """


@declare("cli")
def register_cli_commands(cli: click.Group, ctx: PluginContext) -> None:
    """Add click commands to the ``hermes`` command line; called when the CLI is built.

    Example::

        @hookimpl
        def register_cli_commands(cli, ctx):
            @cli.command("dice-stats")
            def dice_stats():
                click.echo("rolled 12 times")
    """


# -- lifecycle hooks ---------------------------------------------------------------------
# Hermes' names and keyword arguments. A callback receives only the keyword arguments it
# declares (``**kwargs`` gets them all), so payloads can grow without breaking a plugin.
# The reference host fires each hook below at the moment its docstring names, unless it says
# otherwise; `docs/hooks.md` has the detail.


@declare("lifecycle")
def on_session_start(session_id: str, model: str, platform: str, telemetry_schema_version: str) -> None:
    """An agent session begins (the reference host: when it opens the session, and again after ``/reset``).

    Example::

        @hookimpl
        def on_session_start(session_id, model):
            log.info("session %s started on %s", session_id, model)
    """


@declare("lifecycle")
def on_session_end(
    session_id: str, task_id: str, turn_id: str, completed: bool, failed: bool, interrupted: bool,
    turn_exit_reason: str, model: str, platform: str, telemetry_schema_version: str,
) -> None:
    """A turn was finalised: fired once per turn, as Hermes does, not once per session
    (``on_session_finalize`` is the session's end).

    Example::

        @hookimpl
        def on_session_end(session_id, completed, turn_exit_reason):
            if not completed:
                log.warning("turn of %s ended: %s", session_id, turn_exit_reason)
    """


@declare("lifecycle")
def on_session_finalize(
    session_id: str, platform: str, reason: str, old_session_id: str | None, new_session_id: str | None,
    telemetry_schema_version: str,
) -> None:
    """The session is over: ``reason`` is ``"shutdown"`` at exit, ``"session_boundary"`` at
    ``/reset`` or ``/new``. ``old_session_id``/``new_session_id`` are a gateway's (None here).

    Example::

        @hookimpl
        def on_session_finalize(session_id, reason):
            exporter.flush(session_id)
    """


@declare("lifecycle")
def on_session_reset(
    session_id: str, platform: str, reason: str, old_session_id: str | None, new_session_id: str | None,
    telemetry_schema_version: str,
) -> None:
    """The conversation was cleared (``/reset``, ``/new``) and goes on: ``reason="new_session"``.

    Example::

        @hookimpl
        def on_session_reset(session_id):
            counters.pop(session_id, None)
    """


@declare("lifecycle")
def pre_llm_call(
    session_id: str, task_id: str, turn_id: str, user_message: Any, conversation_history: Messages,
    is_first_turn: bool, model: str, platform: str, parent_session_id: str, sender_id: str,
    telemetry_schema_version: str,
) -> Any:
    """Once per turn, before the first model request. Return text (or ``{"context": text}``)
    to add to this turn's user message on the wire; it never reaches the system prompt and
    is never stored.

    Example::

        @hookimpl
        def pre_llm_call(user_message, is_first_turn):
            if is_first_turn:
                return f"Current time: {datetime.now():%H:%M}"
    """


@declare("lifecycle")
def post_llm_call(
    session_id: str, task_id: str, turn_id: str, user_message: Any, assistant_response: str,
    conversation_history: Messages, model: str, platform: str, telemetry_schema_version: str,
) -> None:
    """A turn produced its final answer (after ``transform_llm_output``); not for interrupted turns.

    Example::

        @hookimpl
        def post_llm_call(user_message, assistant_response):
            journal.append((user_message, assistant_response))
    """


@declare("lifecycle")
def transform_llm_output(
    response_text: str, session_id: str, model: str, platform: str, turn_id: str, telemetry_schema_version: str
) -> Any:
    """Rewrite the turn's final answer before it is stored and shown: the first non-empty
    string a callback returns wins.

    Example::

        @hookimpl
        def transform_llm_output(response_text):
            return response_text.replace("\\t", "    ")
    """


@declare("lifecycle")
def pre_api_request(
    task_id: str, turn_id: str, api_request_id: str, session_id: str, user_message: Any,
    conversation_history: Messages, platform: str, model: str, provider: str, base_url: str,
    api_mode: str, api_call_count: int, request_messages: Messages, message_count: int,
    tool_count: int, approx_input_tokens: int, request_char_count: int, max_tokens: int | None,
    started_at: float, middleware_trace: list[Any], request: dict[str, Any], telemetry_schema_version: str,
) -> None:
    """Right before each attempt of a model request (retries and fallbacks included);
    ``api_request_id`` is ``<turn_id>:api:<api_call_count>``.

    Example::

        @hookimpl
        def pre_api_request(api_request_id, model, approx_input_tokens):
            spans.start(api_request_id, model=model, tokens=approx_input_tokens)
    """


@declare("lifecycle")
def post_api_request(
    task_id: str, turn_id: str, api_request_id: str, session_id: str, platform: str, model: str, provider: str,
    base_url: str, api_mode: str, api_call_count: int, api_duration: float, started_at: float, ended_at: float,
    finish_reason: str | None, message_count: int, response_model: str | None, response: dict[str, Any],
    usage: dict[str, Any] | None, assistant_message: Message, assistant_content_chars: int,
    assistant_tool_call_count: int, telemetry_schema_version: str,
) -> None:
    """A model request was answered, before its tool calls or final answer are handled.

    Example::

        @hookimpl
        def post_api_request(api_request_id, usage, api_duration):
            spans.end(api_request_id, tokens=(usage or {}).get("total_tokens"), seconds=api_duration)
    """


@declare("lifecycle")
def api_request_error(
    task_id: str, turn_id: str, api_request_id: str, session_id: str, platform: str, model: str, provider: str,
    base_url: str, api_mode: str, api_call_count: int, api_duration: float, started_at: float, ended_at: float,
    first_chunk_at: float | None, first_delta_at: float | None, status_code: int | None, retry_count: int,
    max_retries: int, retryable: bool, reason: str, error: dict[str, Any], request: dict[str, Any],
    telemetry_schema_version: str,
) -> None:
    """An attempt of a model request failed (after ``transform_api_error_classification``);
    ``reason`` is Hermes' ``FailoverReason`` value (``rate_limit``, ``timeout``, ...).

    Example::

        @hookimpl
        def api_request_error(api_request_id, status_code, reason, retryable):
            spans.fail(api_request_id, status=status_code, reason=reason, final=not retryable)
    """


@declare("lifecycle")
def transform_api_error_classification(
    provider: str, model: str, status_code: int | None, error_type: str, error_code: str | None,
    error_message: str, error_body: dict[str, Any], error: BaseException, approx_tokens: int,
    context_length: int, num_messages: int, telemetry_schema_version: str,
) -> Any:
    """Classify a provider error: every callback runs, and the first dict with a valid
    ``reason`` (a ``FailoverReason``) wins; ``retryable``/``should_fallback`` decide whether
    the host goes on down its fallback chain.

    Example::

        @hookimpl
        def transform_api_error_classification(status_code, error_message):
            if status_code == 400 and "quota" in error_message:
                return {"reason": "billing", "should_fallback": True}
    """


@declare("lifecycle")
def on_interim_message(
    turn_id: str, iteration: int, session_id: str, model: str, provider: str, surface: str, text: str,
    already_streamed: bool, telemetry_schema_version: str,
) -> None:
    """The model said something on its way to calling tools (an assistant message with tool
    calls and visible text), just before the tools run.

    Example::

        @hookimpl
        def on_interim_message(text):
            status_bar.show(text)
    """


@declare("lifecycle")
def on_stream_start(
    turn_id: str, iteration: int, session_id: str, model: str, provider: str, surface: str,
    telemetry_schema_version: str,
) -> None:
    """A streamed model response begins (its first chunk arrived).

    Example::

        @hookimpl
        def on_stream_start(turn_id):
            typing_indicator.on(turn_id)
    """


@declare("lifecycle")
def on_stream_delta(
    turn_id: str, iteration: int, session_id: str, model: str, provider: str, surface: str, delta: str,
    kind: str, telemetry_schema_version: str,
) -> None:
    """One delta of a streamed response: ``kind`` is ``text`` (or ``reasoning``).

    Example::

        @hookimpl
        def on_stream_delta(delta, kind):
            if kind == "text":
                mirror.write(delta)
    """


@declare("lifecycle")
def on_stream_end(
    turn_id: str, iteration: int, session_id: str, model: str, provider: str, surface: str, final_text: str,
    finished: bool, error: str | None, telemetry_schema_version: str,
) -> None:
    """A streamed response closed (``finished``) or broke off (``error``).

    Example::

        @hookimpl
        def on_stream_end(turn_id, finished):
            typing_indicator.off(turn_id)
    """


@declare("lifecycle")
def pre_tool_call(
    tool_name: str, args: dict[str, Any], task_id: str, session_id: str, tool_call_id: str, turn_id: str,
    api_request_id: str, middleware_trace: list[Any], telemetry_schema_version: str,
) -> Any:
    """Before a tool runs. Return None to allow, ``{"action": "block", "message": text}`` to
    block (the message becomes the tool result), ``{"action": "modify", "args": {...}}`` to
    merge new arguments in, or ``{"action": "approve", "message": text}`` to ask a human (a
    host without an approval prompt blocks). A callback that raises or times out blocks the
    call (fail closed).

    Example::

        @hookimpl
        def pre_tool_call(tool_name, args):
            if tool_name == "terminal" and "rm -rf" in args.get("command", ""):
                return {"action": "block", "message": "refusing to delete recursively"}
    """


@declare("lifecycle")
def post_tool_call(
    tool_name: str, args: dict[str, Any], result: str, task_id: str, session_id: str, tool_call_id: str,
    turn_id: str, api_request_id: str, duration_ms: int, status: str, error_type: str | None,
    error_message: str | None, middleware_trace: list[Any], telemetry_schema_version: str,
) -> None:
    """After a tool ran (or was blocked): ``status`` is ``ok``, ``error`` or ``blocked``.

    Example::

        @hookimpl
        def post_tool_call(tool_name, status, duration_ms):
            metrics.observe(tool_name, status, duration_ms)
    """


@declare("lifecycle")
def transform_tool_result(
    tool_name: str, args: dict[str, Any], result: str, task_id: str, session_id: str, tool_call_id: str,
    turn_id: str, api_request_id: str, duration_ms: int, status: str, error_type: str | None,
    error_message: str | None, telemetry_schema_version: str,
) -> Any:
    """Rewrite a tool result before the model sees it: the first string a callback returns wins.

    Example::

        @hookimpl
        def transform_tool_result(result):
            return redact_secrets(result)
    """


@declare("lifecycle")
def transform_terminal_output(
    command: str, output: str, returncode: int | None, task_id: str, env_type: str, tool_call_id: str,
    telemetry_schema_version: str,
) -> Any:
    """Rewrite a shell command's output before truncation and redaction (a host with a
    terminal tool fires it; the reference host has none): the first string wins.

    Example::

        @hookimpl
        def transform_terminal_output(command, output):
            if command.startswith("pytest"):
                return "\\n".join(line for line in output.splitlines() if "PASSED" not in line)
    """


@declare("lifecycle")
def pre_verify(
    session_id: str, platform: str, model: str, coding: bool, attempt: int, final_response: str,
    changed_paths: list[str], telemetry_schema_version: str,
) -> Any:
    """Before a turn that edited files delivers its answer: return ``{"action": "continue",
    "message": text}`` (or ``{"decision": "block", "reason": text}``) to send the model back
    to work with that text.

    Example::

        @hookimpl
        def pre_verify(changed_paths, attempt):
            if attempt == 0 and any(p.endswith(".py") for p in changed_paths):
                return {"action": "continue", "message": "Run the tests before you finish."}
    """


@declare("lifecycle")
def pre_command(
    surface: str, command: str, alias_used: str, args_raw: str, session_key: str, platform: str,
    telemetry_schema_version: str,
) -> None:
    """A slash command is about to run (its return value is ignored).

    Example::

        @hookimpl
        def pre_command(command, args_raw):
            audit.write(f"/{command} {args_raw}")
    """


@declare("lifecycle")
def agent_loop_stopped(
    session_key: str, platform: str, reason: str, invalidation_reason: str, telemetry_schema_version: str
) -> None:
    """A running turn was stopped by the user (the reference host: Ctrl-C during a turn).

    Example::

        @hookimpl
        def agent_loop_stopped(session_key, reason):
            pending_jobs.cancel(session_key)
    """


@declare("lifecycle")
def pre_auxiliary_call(
    session_id: str, task_id: str, turn_id: str, platform: str, aux_task: str, task: str,
    middleware_trace: list[Any], api_request_id: str, retry_count: int, api_call_count: int, model: str,
    provider: str, base_url: str, api_mode: str, streaming: bool, started_at: float, message_count: int,
    request_messages: Messages, system_prompt: str, tool_count: int, approx_input_tokens: int,
    request_char_count: int, max_tokens: int | None, request: dict[str, Any], telemetry_schema_version: str,
) -> None:
    """Before each attempt of a host side call to a model (``aux_task`` ``compression``, ...),
    with the identity of the turn it runs in (``""`` outside one).

    Example::

        @hookimpl
        def pre_auxiliary_call(aux_task, model):
            log.info("side call %s on %s", aux_task, model)
    """


@declare("lifecycle")
def post_auxiliary_call(
    session_id: str, task_id: str, turn_id: str, platform: str, aux_task: str, task: str,
    middleware_trace: list[Any], api_request_id: str, retry_count: int, api_call_count: int, model: str,
    provider: str, base_url: str, api_mode: str, streaming: bool, started_at: float, message_count: int,
    ended_at: float, api_duration: float, error: str | None, error_type: str | None, finish_reason: str | None,
    response_model: str | None, usage: dict[str, Any] | None, response: dict[str, Any] | None,
    assistant_content_chars: int, assistant_tool_call_count: int, telemetry_schema_version: str,
) -> None:
    """After each attempt of a host side call: answered (``usage``) or failed (``error``).

    Example::

        @hookimpl
        def post_auxiliary_call(aux_task, usage, error):
            costs.add(aux_task, (usage or {}).get("total_tokens", 0), failed=error is not None)
    """


# hermes-core's own lifecycle hooks: no Hermes version defines these (HERMES_CORE_HOOKS).


@declare("lifecycle")
def on_budget_check(
    plugin_id: str, budget: dict[str, Any], used: dict[str, float], requested: dict[str, float],
    telemetry_schema_version: str,
) -> Any:
    """hermes-core's own (not Hermes'): before a plugin's ``ctx.llm`` call is sent, with the
    plugin's LLM budget (``budget``: its limits, ``{}`` of them when it has none), what it has
    ``used`` of each kind (``tokens_per_day``, ``cost_per_day``, ``cost_per_month``,
    ``requests_per_minute``, ``max_concurrent``) and what the call may take at most
    (``requested``: ``tokens``, ``cost``). Return ``{"action": "block", "message": text}`` to
    refuse a call the numbers would allow; anything else lets the numbers decide (they always
    win over an allow). A plugin that implements it is not asked about its own calls.

    Example::

        @hookimpl
        def on_budget_check(plugin_id, used, requested):
            if plugin_id.startswith("experimental-") and used["cost_per_day"] + requested["cost"] > 0.10:
                return {"action": "block", "message": "experimental plugins get 10 cents a day"}
    """


# Every hook by name, with its family: the specs above in their order, then the host hooks in theirs.
HOOKS: dict[str, HookFamily] = {
    name: family
    for module in (sys.modules[__name__], host)
    for name, value in list(vars(module).items())
    if (family := declared(value)) is not None and value.__module__ == module.__name__
}


def hook_arguments(name: str) -> tuple[str, ...]:
    """The keyword arguments hook `name` is called with, as its spec declares them (`()` for a
    name that is no hook)."""
    hook = HOOKS.get(name)
    if hook is None or hook.spec is None:
        return ()
    code = hook.spec.__code__
    return code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]


def _family(family: str) -> tuple[str, ...]:
    return tuple(name for name, hook in HOOKS.items() if hook.family == family)


REGISTRATION_HOOKS = _family("registration")
CLI_HOOKS = _family("cli")
LIFECYCLE_HOOKS = _family("lifecycle")
HERMES_CORE_HOOKS = ("on_budget_check",)  # lifecycle hooks of hermes-core's own, not Hermes Agent's
