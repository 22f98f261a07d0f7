"""One tool call, from the model's arguments to the string the model gets back.

The arguments are parsed and the tool looked up once; then `pre_tool_call` (block/modify),
availability and JSON Schema validation of the final arguments, the handler (timed),
`post_tool_call` and `transform_tool_result` with Hermes' arguments (`status` ok/error/blocked,
`duration_ms`, the turn's ids): the same path for a plugin's tool and an active engine's.
Written once as a policy (`_runtime.invoke`), run by `dispatch` from sync code and `adispatch` from a
coroutine. A call never raises: every failure becomes `{"error": ...}`.
"""

from __future__ import annotations

import itertools
import json
import logging
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

import attrs

from .. import _telemetry
from .._errors import ConfigError, owner
from .._hermes.host import describe
from .._messages import storable_text
from .._quote import clip, quoted
from .._runtime.approvals import APPROVED, ApprovalRequest, current_approver, pattern_key
from .._runtime.invoke import Failure, Invoke, Policy, Resolvable, adrive, drive, keeps_own_limit
from .tool import ToolEntry

if TYPE_CHECKING:
    from .._hooks.calls import LifecycleHooks

__all__ = [
    "MAX_ERROR_CHARS", "NO_IDS", "ToolCallIds", "ToolOutcome", "Tools", "adispatch", "arun", "dispatch", "error_result",
    "parse_arguments",
]

log = logging.getLogger("hermes_core.tools")
MAX_ERROR_CHARS = 2048


@attrs.frozen
class ToolCallIds:
    """Who asks for a tool call, as its hooks see it: the session, the turn's task and turn ids,
    the model's call id and the id of the model request that made the call (`""` when unknown)."""

    session_id: str = ""
    task_id: str = ""
    turn_id: str = ""
    tool_call_id: str = ""
    api_request_id: str = ""

    def arguments(self) -> dict[str, Any]:
        """The ids as the tool hooks' keyword arguments."""
        return {"session_id": self.session_id, "task_id": self.task_id, "turn_id": self.turn_id,
                "tool_call_id": self.tool_call_id, "api_request_id": self.api_request_id}


NO_IDS = ToolCallIds()


@attrs.frozen
class ToolOutcome:
    """A finished tool call: the string the model gets, and whether a `pre_tool_call` hook blocked it."""

    result: str
    blocked: bool = False

    @property
    def status(self) -> str:
        """Hermes' status of the call: `blocked`, `error` (a JSON object with an `error` key) or `ok`."""
        return _status(self.result, self.blocked)[0]

    @property
    def message(self) -> str:
        """The error's or the block's message (the result itself when it is neither)."""
        return _status(self.result, self.blocked)[2] or self.result


class Tools(Protocol):
    """Where a call finds its tool (a `ToolRegistry`): the entry of tool `name`, and its time limit."""

    def entry(self, name: str) -> ToolEntry | None: ...

    def limit(self, name: str) -> float | None: ...


def error_result(message: str) -> str:
    """`{"error": message}` as a JSON string, the message cut to `MAX_ERROR_CHARS`."""
    if len(message) > MAX_ERROR_CHARS:
        message = message[: MAX_ERROR_CHARS - 1] + "…"
    return json.dumps({"error": message}, ensure_ascii=False)


def parse_arguments(args: Any) -> tuple[dict[str, Any] | None, str | None]:
    """Tool arguments as a dict (a JSON string, as models send them, is parsed), or the problem."""
    if isinstance(args, (str, bytes)):
        try:
            args = json.loads(args) if args.strip() else {}
        except ValueError as exc:
            return None, f"not JSON ({exc})"
        except RecursionError:
            return None, "nested too deeply to read"
    if args is None:
        return {}, None
    if not isinstance(args, Mapping):
        return None, f"expected an object, got {type(args).__name__}"
    return dict(args), None


def _invalid(entry: ToolEntry, args: dict[str, Any]) -> str | None:
    """What is wrong with `args` for the tool's `parameters` (naming the field), or None."""
    if entry.validator is None:
        from jsonschema.validators import validator_for

        parameters = entry.schema["parameters"]
        entry.validator = validator_for(parameters)(parameters)
    errors = entry.validator.iter_errors(args)
    first = next(errors, None)
    if first is None:  # valid: the common case, decided without jsonschema's ranking
        return None
    from jsonschema.exceptions import best_match

    error = best_match(itertools.chain((first,), errors))
    field = "/".join(str(p) for p in error.absolute_path)
    if not field and error.validator == "required":
        missing = [n for n in error.validator_value if n not in error.instance]
        field = missing[0] if missing else ""
    message = error.message
    shown = repr(error.instance)
    if len(shown) > 80:  # "'xxxx…(10001 chars)' is too long", not the whole value
        message = message.replace(shown, f"{shown[:60]}…({len(shown)} chars)")
    return f"field {field!r}: {message}" if field else message


def _checked(entry: ToolEntry, args: dict[str, Any]) -> str | None:
    """The error result when the tool cannot run with `args` now, else None."""
    tool = entry.tool
    ok, reason = tool.availability()
    if not ok:
        return error_result(f"Tool {tool.name!r} ({owner(tool.plugin_id)}) is not available: {reason}")
    problem = _invalid(entry, args)
    return error_result(f"Invalid arguments for tool {tool.name!r}: {problem}") if problem else None


def _result(entry: ToolEntry, value: Any) -> str:
    """The handler's answer as the string the model gets: its failure, or non-strings as JSON; a
    lone surrogate in it (an MCP server's escaped "\\ud800") as U+FFFD, so that the hooks, the
    store, a trajectory, a log and the model all get the same text, which UTF-8 can take."""
    tool = entry.tool
    if isinstance(value, Failure) and value.timed_out:
        log.error("tool %s (%s) %s; abandoned", quoted(tool.name), owner(tool.plugin_id), value.describe())
        return error_result(f"Tool {quoted(tool.name)} ({owner(tool.plugin_id)}) {value.describe()} and was "
                            f"stopped waiting for (the operator's limit: tools.timeouts.{clip(tool.name, 60)}, "
                            "else tools.timeout)")
    if isinstance(value, Failure):
        exc = value.error
        what = describe(exc)  # a Hermes-only import says what it needs
        log.error("tool %r (%s) failed: %s", tool.name, owner(tool.plugin_id), what,
                  exc_info=(type(exc), exc, exc.__traceback__))
        return error_result(f"Tool execution failed: {what}")
    if isinstance(value, str):
        return storable_text(value)  # type: ignore[no-any-return]
    try:
        return storable_text(json.dumps(value, ensure_ascii=False, default=str))  # type: ignore[no-any-return]
    except (TypeError, ValueError) as exc:
        return error_result(f"Tool execution failed: {type(exc).__name__}: handler returned {type(value).__name__}")


def _status(result: str, blocked: bool) -> tuple[str, str | None, str | None]:
    """Hermes' `status`, `error_type` and `error_message` of a finished call: blocked by a
    plugin, an error (a JSON object with an `error` key), or ok."""
    if blocked:
        return "blocked", "plugin_block", result
    if result.lstrip().startswith("{") and '"error"' in result:
        try:
            value = json.loads(result)
        except (ValueError, RecursionError):  # not JSON, or nested past the parser: not an error result
            value = None
        if isinstance(value, dict) and value.get("error"):
            return "error", "tool_error", str(value["error"])
    return "ok", None, None


def _imported(registry: Tools, entry: ToolEntry) -> Policy[tuple[ToolEntry, str | None]]:
    """The entry of a tool whose plugin was not imported yet, once it is (its stand-in handler
    resolved: on a worker thread for an async caller), or the error result saying why it cannot run."""
    tool = entry.tool
    assert isinstance(tool.handler, Resolvable)
    resolved = yield Invoke(tool.handler.resolve)
    real = registry.entry(tool.name)
    if isinstance(resolved, Failure) or real is None or isinstance(real.tool.handler, Resolvable):
        why = str(resolved.error) if isinstance(resolved, Failure) else "its plugin no longer registers it"
        return entry, error_result(f"Tool {quoted(tool.name)} ({owner(tool.plugin_id)}) is not available: {why}")
    return real, None


def _call(
    registry: Tools, hooks: LifecycleHooks | None, name: str, args: Any, ids: ToolCallIds,
    kwargs: Mapping[str, Any],
) -> Policy[ToolOutcome]:
    entry = registry.entry(name)
    if entry is None:
        return ToolOutcome(error_result(f"Unknown tool: {clip(name)}"))
    parsed, problem = parse_arguments(args)
    if parsed is None:
        return ToolOutcome(error_result(f"Invalid arguments for tool {quoted(name)}: {clip(problem)}"))
    blocked: str | None = None
    if hooks is not None and hooks.has("pre_tool_call"):  # none: the arguments go on as they are
        decision = yield hooks.pre_tool_call(tool_name=name, args=parsed, **ids.arguments())
        parsed = dict(decision.args)
        blocked = storable_text(decision.message) if decision.blocked else None  # said to the model: encodable
        if decision.asks is not None and current_approver() is not None:  # put to a human
            blocked = yield from _approval(hooks, name, parsed, decision, ids)
    started = time.monotonic()
    result = blocked
    if result is None and isinstance(entry.tool.handler, Resolvable):  # its plugin is imported now
        entry, result = yield from _imported(registry, entry)
    result = result or _checked(entry, parsed)
    if result is None:
        handler_args = (name, parsed) if entry.source is not None else (parsed,)
        try:  # a handler that keeps its own limit (an isolated plugin's: its process is killed) is not abandoned
            limit = None if keeps_own_limit(entry.tool.handler) else registry.limit(name)
        except ConfigError as exc:  # tools.timeouts.<name> is no number: the operator's to fix
            return ToolOutcome(error_result(str(exc)))
        result = _result(entry, (yield Invoke(entry.tool.handler, handler_args, kwargs, is_async=entry.is_async,
                                              limit=limit)))
    duration_ms = 0 if blocked else int((time.monotonic() - started) * 1000)
    if hooks is None or not (hooks.has("post_tool_call") or hooks.has("transform_tool_result")):
        return ToolOutcome(result, blocked is not None)
    status, error_type, error_message = _status(result, blocked is not None)
    done: dict[str, Any] = {"result": result, "duration_ms": duration_ms, "status": status, "error_type": error_type,
                             "error_message": error_message, **ids.arguments()}
    yield hooks.post_tool_call(tool_name=name, args=dict(parsed), **done)
    changed = yield hooks.transform_tool_result(tool_name=name, args=dict(parsed), **done)
    return ToolOutcome(changed if changed is not None else result, blocked is not None)


def _approval(hooks: LifecycleHooks, name: str, args: Mapping[str, Any], decision: Any,
              ids: ToolCallIds) -> Policy[str | None]:
    """Ask the turn's approver about a call a `pre_tool_call` callback put to a human, with
    Hermes' approval hooks around the question; None when it may run, else why it may not."""
    approver = current_approver()
    assert approver is not None
    request = ApprovalRequest(name, dict(args), decision.asks, pattern_key(name, decision.asks, decision.rule_key),
                              session_id=ids.session_id, turn_id=ids.turn_id, tool_call_id=ids.tool_call_id)
    about: dict[str, Any] = {
        "command": request.command, "description": request.description, "pattern_key": request.pattern_key,
        "pattern_keys": [request.pattern_key], "session_key": getattr(approver, "session_key", ids.session_id),
        "surface": getattr(approver, "surface", "gateway"), "turn_id": ids.turn_id, "tool_call_id": ids.tool_call_id,
        "session_id": ids.session_id}
    yield hooks.pre_approval_request(**about)
    answer = yield Invoke(approver, (request,))  # waits for the human: on a worker thread for an async caller
    choice = answer if isinstance(answer, str) else "notify_failed"
    yield hooks.post_approval_response(**about, choice=choice)
    telemetry = _telemetry.ACTIVE
    if telemetry is not None:
        telemetry.event("hermes.tool.approval", {"hermes.approval.choice": choice,
                                                 "hermes.approval.pattern_key": request.pattern_key})
    if choice in APPROVED:
        return None
    return (f"Tool call {name!r} was not approved ({choice}): {decision.asks}. Do not try it again; tell the user "
            "what you wanted to do instead")


def dispatch(
    registry: Tools, hooks: LifecycleHooks | None, name: str, args: Any, *, ids: ToolCallIds = NO_IDS,
    kwargs: Mapping[str, Any],
) -> str:
    """Run tool `name` of `registry` from synchronous code, with `hooks` around it (None: none)."""
    return run(registry, hooks, name, args, ids=ids, kwargs=kwargs).result


def run(
    registry: Tools, hooks: LifecycleHooks | None, name: str, args: Any, *, ids: ToolCallIds = NO_IDS,
    kwargs: Mapping[str, Any],
) -> ToolOutcome:
    """`dispatch`, telling a blocked call from one that ran."""
    telemetry = _telemetry.ACTIVE
    if telemetry is None:
        return drive(_call(registry, hooks, name, args, ids, kwargs))
    with telemetry.tool(name, *_owner(registry, name), ids.tool_call_id, args) as span:
        return span.done(drive(_call(registry, hooks, name, args, ids, kwargs)))  # type: ignore[no-any-return]


async def adispatch(
    registry: Tools, hooks: LifecycleHooks | None, name: str, args: Any, *, ids: ToolCallIds = NO_IDS,
    kwargs: Mapping[str, Any],
) -> str:
    """`dispatch` from a coroutine: async handlers are awaited, sync ones run on a worker thread."""
    return (await arun(registry, hooks, name, args, ids=ids, kwargs=kwargs)).result


async def arun(
    registry: Tools, hooks: LifecycleHooks | None, name: str, args: Any, *, ids: ToolCallIds = NO_IDS,
    kwargs: Mapping[str, Any],
) -> ToolOutcome:
    """`adispatch`, telling a blocked call from one that ran (what `hermes mcp serve` needs)."""
    telemetry = _telemetry.ACTIVE
    if telemetry is None:
        return await adrive(_call(registry, hooks, name, args, ids, kwargs))
    with telemetry.tool(name, *_owner(registry, name), ids.tool_call_id, args) as span:
        return span.done(await adrive(_call(registry, hooks, name, args, ids, kwargs)))  # type: ignore[no-any-return]


def _owner(registry: Tools, name: str) -> tuple[str | None, str]:
    """The plugin that owns tool `name` and its GenAI tool type (`extension`: an MCP server's, `mcp:<server>`)."""
    entry = registry.entry(name)
    plugin_id = entry.tool.plugin_id if entry is not None else None
    return plugin_id, "extension" if plugin_id and plugin_id.startswith("mcp:") else "function"
