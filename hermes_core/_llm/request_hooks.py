"""The host's request hooks: Hermes' events around each attempt of the host's own model calls.

The agent's requests get `pre_api_request`, then `post_api_request`, or (after
`transform_api_error_classification`, which may change whether the host falls back)
`api_request_error`; the host's side calls (compression summaries, ...) get
`pre_auxiliary_call` / `post_auxiliary_call` with the identity of the turn they run in
(`current_turn`). Each observer is handed to `LlmHost` with the call and sees every attempt,
retries and fallbacks included. A payload is built only when a plugin listens, and building
or firing one never disturbs the call: a failure here is logged and the call goes on.

Payloads are Hermes' shapes: `usage` in its canonical buckets, `request`/`response` as
sanitised JSON (keys that name secrets redacted, long strings and lists cut, 50,000
characters at most), error messages with every credential scrubbed. Plugins never see the
SDK's exception (its request holds the key): `error` is an `LlmProviderError`.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import logging
import time
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

import attrs

from .._errors import LlmProviderError
from .._messages import Messages, estimate_tokens, message_text
from .credentials import scrub
from .routes import Route
from .transport import Failure

if TYPE_CHECKING:
    from .._hooks.calls import LifecycleHooks
    from .reply import LlmAnswer

__all__ = ["AgentRequestHooks", "AuxiliaryCallHooks", "TurnIdentity", "current_turn", "turn_scope"]

log = logging.getLogger("hermes_core.hooks")
API_MODE = "chat_completions"
PAYLOAD_MAX_CHARS = 50_000
_SENSITIVE = {"api_key", "authorization", "proxy_authorization", "cookie", "set_cookie"}


@attrs.frozen
class TurnIdentity:
    """The turn a call runs in, as Hermes' hooks name it (`""` outside a turn)."""

    session_id: str = ""
    task_id: str = ""
    turn_id: str = ""
    platform: str = ""


_turn: contextvars.ContextVar[TurnIdentity] = contextvars.ContextVar("hermes_turn", default=TurnIdentity())


def current_turn() -> TurnIdentity:
    """The turn the calling code runs in (set by the host loop with `turn_scope`)."""
    return _turn.get()


@contextlib.contextmanager
def turn_scope(turn: TurnIdentity) -> Iterator[TurnIdentity]:
    """Run a block as part of `turn`: the host's side calls made in it name that turn."""
    token = _turn.set(turn)
    try:
        yield turn
    finally:
        _turn.reset(token)


# -- payloads -------------------------------------------------------------------------------


def _jsonable(value: Any, depth: int = 0, max_string: int = 8000, max_items: int = 200) -> Any:
    if depth > 8:
        return f"<{type(value).__name__} depth limit>"
    if value is None or isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, str):
        return value if len(value) <= max_string else value[:max_string] + f"...[truncated {len(value) - max_string} chars]"
    if isinstance(value, (bytes, bytearray)):
        return f"<{len(value)} bytes>"
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for index, (key, item) in enumerate(value.items()):
            if index >= max_items:
                out["_truncated_items"] = len(value) - max_items
                break
            name = str(key)
            secret = name.lower().replace("-", "_") in _SENSITIVE or name.lower().endswith("_api_key")
            out[name] = "<redacted>" if secret else _jsonable(item, depth + 1, max_string, max_items)
        return out
    if isinstance(value, (list, tuple, set)):
        items = list(value)
        cut = [_jsonable(item, depth + 1, max_string, max_items) for item in items[:max_items]]
        return cut + ([{"_truncated_items": len(items) - max_items}] if len(items) > max_items else [])
    return str(value)[:max_string]


def sanitized(value: Any) -> Any:
    """`value` as JSON-able data under the size cap: whole, then with tighter cuts, then a preview."""
    encoded = ""
    for max_string, max_items in ((8000, 200), (1000, 50)):
        payload = _jsonable(value, max_string=max_string, max_items=max_items)
        encoded = json.dumps(payload, ensure_ascii=False, default=str)
        if len(encoded) <= PAYLOAD_MAX_CHARS:
            return payload
    return {"_truncated": True, "original_type": type(value).__name__, "preview": encoded[:PAYLOAD_MAX_CHARS]}


def _count(value: Any) -> int:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0 else 0


def canonical_usage(usage: Any) -> dict[str, Any] | None:
    """A completion's `usage` in Hermes' canonical buckets: `input_tokens` (not cached),
    `output_tokens`, cache reads and writes, reasoning, `prompt_tokens`, `total_tokens`, and
    `reported_usage_fields` (which buckets the provider actually reported)."""
    if not isinstance(usage, Mapping) or not usage:
        return None
    details = usage.get("prompt_tokens_details")
    details = details if isinstance(details, Mapping) else {}
    out_details = usage.get("completion_tokens_details")
    out_details = out_details if isinstance(out_details, Mapping) else {}
    cache_read = _count(details.get("cached_tokens")) or _count(usage.get("cache_read_input_tokens"))
    cache_write = _count(details.get("cache_write_tokens")) or _count(usage.get("cache_creation_input_tokens"))
    prompt = _count(usage.get("prompt_tokens"))
    output = _count(usage.get("completion_tokens"))
    reasoning = _count(out_details.get("reasoning_tokens"))
    fresh = max(0, prompt - cache_read - cache_write)
    reported = {
        "prompt_tokens": "prompt_tokens" in usage, "input_tokens": "prompt_tokens" in usage,
        "output_tokens": "completion_tokens" in usage,
        "cache_read_tokens": "cached_tokens" in details or "cache_read_input_tokens" in usage,
        "cache_write_tokens": "cache_write_tokens" in details or "cache_creation_input_tokens" in usage,
        "reasoning_tokens": "reasoning_tokens" in out_details,
    }
    return {"input_tokens": fresh, "output_tokens": output, "cache_read_tokens": cache_read,
            "cache_write_tokens": cache_write, "reasoning_tokens": reasoning, "request_count": 1,
            "prompt_tokens": fresh + cache_read + cache_write, "total_tokens": fresh + cache_read + cache_write + output,
            "reported_usage_fields": reported}


def _reply(body: bytes) -> tuple[dict[str, Any], dict[str, Any], str | None]:
    """The completion's JSON, its first message and its finish reason."""
    data = json.loads(body)
    choice = data["choices"][0]
    return data, choice.get("message") or {}, choice.get("finish_reason")


def _request_facts(request: Mapping[str, Any]) -> dict[str, Any]:
    messages = request.get("messages") or []
    chars = sum(len(message_text(m)) for m in messages if isinstance(m, dict))
    return {"message_count": len(messages), "tool_count": len(request.get("tools") or []),
            "approx_input_tokens": chars // 4, "request_char_count": chars, "max_tokens": request.get("max_tokens")}


def failover_reason(failure: Failure) -> str:
    """Hermes' `FailoverReason` value for a failed attempt."""
    status = failure.status
    text = failure.reason.lower()
    if status is None:
        if "timed out" in failure.reason or "connection failed" in failure.reason:
            return "timeout"
        return "invalid_response" if "malformed response" in failure.reason else "unknown"
    if status in (401, 403):
        return "auth"
    if status == 402:
        return "billing"
    if status == 429:
        return "rate_limit"
    if status == 413:
        return "payload_too_large"
    if status == 404:
        return "model_not_found"
    if status in (503, 529):
        return "overloaded"
    if status >= 500:
        return "server_error"
    if any(p in text for p in ("context length", "context window", "maximum context", "too many tokens")):
        return "context_overflow"
    return "format_error" if status == 400 else "unknown"


def _fire(what: str, fire: Any) -> None:
    """Build and fire one hook call; a failure building the payload is logged, never raised."""
    try:
        fire()
    except Exception:  # noqa: BLE001 - a hook payload must never break the host's call
        log.warning("the %s hook payload could not be built; the call goes on", what, exc_info=True)


class _AttemptClock:
    __slots__ = ("started", "attempt", "routes", "request")

    def __init__(self) -> None:
        self.started, self.attempt, self.routes = 0.0, 0, 1
        self.request: dict[str, Any] = {}

    def start(self, request: dict[str, Any], attempt: int, routes: int) -> None:
        self.started, self.attempt, self.routes, self.request = time.time(), attempt, routes, request


# -- the agent's requests -------------------------------------------------------------------


class AgentRequestHooks:
    """The request hooks of one model request of an agent turn (`api_call_count` within the turn)."""

    def __init__(
        self, hooks: LifecycleHooks, turn: TurnIdentity, api_call_count: int, *, user_message: Any,
        conversation_history: Messages, context_length: int,
    ) -> None:
        self._hooks, self._turn, self._count = hooks, turn, api_call_count
        self._user_message, self._history, self._context_length = user_message, conversation_history, context_length
        self._clock = _AttemptClock()
        self.api_request_id = f"{turn.turn_id}:api:{api_call_count}"

    def _base(self, route: Route) -> dict[str, Any]:
        turn = self._turn
        return {"task_id": turn.task_id, "turn_id": turn.turn_id, "api_request_id": self.api_request_id,
                "session_id": turn.session_id, "platform": turn.platform, "model": route.model,
                "provider": route.provider, "base_url": route.base_url, "api_mode": API_MODE,
                "api_call_count": self._count}

    def sending(self, route: Route, request: dict[str, Any], attempt: int, routes: int) -> None:
        self._clock.start(request, attempt, routes)
        if not self._hooks.has("pre_api_request"):
            return
        _fire("pre_api_request", lambda: self._hooks.pre_api_request(
            **self._base(route), user_message=self._user_message, conversation_history=list(self._history),
            request_messages=list(request.get("messages") or []), started_at=self._clock.started,
            request=sanitized({"method": "POST", "body": request}), **_request_facts(request),
        ).run())

    def answered(self, route: Route, body: bytes, answer: LlmAnswer) -> None:
        ended = time.time()
        if not self._hooks.has("post_api_request"):
            return
        try:
            data, message, finish_reason = _reply(body)
        except (ValueError, LookupError, TypeError, AttributeError):  # read by `answer_of` already: not expected
            return

        def fire() -> None:
            usage = canonical_usage(data.get("usage"))
            content = message.get("content")
            calls = message.get("tool_calls") or []
            assistant = {"role": message.get("role") or "assistant", "content": content, "tool_calls": calls}
            self._hooks.post_api_request(
                **self._base(route), api_duration=max(0.0, ended - self._clock.started),
                started_at=self._clock.started, ended_at=ended, finish_reason=finish_reason,
                message_count=len(self._clock.request.get("messages") or []), response_model=data.get("model"),
                response=sanitized({"model": data.get("model"), "upstream_provider": data.get("provider"),
                                    "finish_reason": finish_reason, "assistant_message": assistant, "usage": usage}),
                usage=usage, assistant_message=assistant,
                assistant_content_chars=len(content) if isinstance(content, str) else 0,
                assistant_tool_call_count=len(calls),
            ).run()

        _fire("post_api_request", fire)

    def failed(self, route: Route, error: BaseException, failure: Failure) -> Failure | None:
        reason = failover_reason(failure)
        changed: Failure | None = None
        if self._hooks.has("transform_api_error_classification"):
            verdict: dict[str, Any] | None = None

            def classify() -> None:
                nonlocal verdict
                verdict = self._classification(route, error, failure)

            _fire("transform_api_error_classification", classify)
            if verdict is not None:
                reason = verdict["reason"]
                retryable = verdict.get("should_fallback", verdict.get("retryable", failure.retryable))
                changed = attrs.evolve(failure, reason=verdict.get("message") or failure.reason,
                                       retryable=bool(retryable))
        final = changed or failure
        if self._hooks.has("api_request_error"):
            ended = time.time()
            _fire("api_request_error", lambda: self._hooks.api_request_error(
                **self._base(route), api_duration=max(0.0, ended - self._clock.started),
                started_at=self._clock.started, ended_at=ended, status_code=final.status,
                retry_count=self._clock.attempt, max_retries=max(0, self._clock.routes - 1),
                retryable=final.retryable, reason=reason,
                error={"type": type(error).__name__, "message": final.reason},
                request=sanitized({"method": "POST", "body": self._clock.request}),
            ).run())
        return changed

    def _classification(self, route: Route, error: BaseException, failure: Failure) -> dict[str, Any] | None:
        body = getattr(error, "body", None)
        body = sanitized(body) if isinstance(body, Mapping) else {}
        inner = body.get("error") if isinstance(body.get("error"), Mapping) else body
        code = inner.get("code") if isinstance(inner, Mapping) else None
        messages = self._clock.request.get("messages") or []
        stand_in = LlmProviderError(scrub(failure.reason), provider=route.provider, model=route.model,
                                    status_code=failure.status)
        return self._hooks.transform_api_error_classification(
            provider=route.provider, model=route.model, status_code=failure.status, error_type=type(error).__name__,
            error_code=None if code is None else str(code), error_message=scrub(failure.reason),
            error_body=json.loads(scrub(json.dumps(body, default=str))), error=stand_in,
            approx_tokens=estimate_tokens(messages), context_length=self._context_length,
            num_messages=len(messages),
        ).run()


# -- the host's side calls ------------------------------------------------------------------


class AuxiliaryCallHooks:
    """`pre_auxiliary_call` / `post_auxiliary_call` around each attempt of one side call
    (`aux_task`: `compression`, ...); the attempts share one `api_request_id`."""

    def __init__(self, hooks: LifecycleHooks, aux_task: str) -> None:
        self._hooks, self._task = hooks, aux_task
        self._turn = current_turn()
        self._clock = _AttemptClock()
        self._id = f"aux:{aux_task}:{time.time_ns():x}"

    def _base(self, route: Route) -> dict[str, Any]:
        turn, clock = self._turn, self._clock
        return {"session_id": turn.session_id, "task_id": turn.task_id, "turn_id": turn.turn_id,
                "platform": turn.platform, "aux_task": self._task, "task": self._task, "api_request_id": self._id,
                "retry_count": clock.attempt, "api_call_count": clock.attempt + 1, "model": route.model,
                "provider": route.provider, "base_url": route.base_url, "api_mode": API_MODE, "streaming": False,
                "started_at": clock.started, "message_count": len(clock.request.get("messages") or [])}

    def sending(self, route: Route, request: dict[str, Any], attempt: int, routes: int) -> None:
        self._clock.start(request, attempt, routes)
        if not self._hooks.has("pre_auxiliary_call"):
            return

        def fire() -> None:
            messages = list(request.get("messages") or [])
            first = messages[0] if messages and isinstance(messages[0], dict) else {}
            system = first.get("content") if first.get("role") == "system" else ""
            facts = _request_facts(request)
            del facts["message_count"]
            self._hooks.pre_auxiliary_call(
                **self._base(route), request_messages=messages, system_prompt=system if isinstance(system, str) else "",
                request=sanitized({"method": "POST", "body": request}), **facts,
            ).run()

        _fire("pre_auxiliary_call", fire)

    def _post(self, route: Route, **outcome: Any) -> None:
        ended = time.time()
        self._hooks.post_auxiliary_call(**self._base(route), ended_at=ended,
                                        api_duration=max(0.0, ended - self._clock.started), **outcome).run()

    def answered(self, route: Route, body: bytes, answer: LlmAnswer) -> None:
        if not self._hooks.has("post_auxiliary_call"):
            return

        def fire() -> None:
            data, message, finish_reason = _reply(body)
            usage = canonical_usage(data.get("usage"))
            content = message.get("content")
            calls = message.get("tool_calls") or []
            assistant = {"role": message.get("role") or "assistant", "content": content, "tool_calls": calls}
            self._post(route, error=None, error_type=None, finish_reason=finish_reason,
                       response_model=data.get("model"), usage=usage,
                       response=sanitized({"model": data.get("model"), "finish_reason": finish_reason,
                                           "assistant_message": assistant, "usage": usage}),
                       assistant_content_chars=len(content) if isinstance(content, str) else 0,
                       assistant_tool_call_count=len(calls))

        _fire("post_auxiliary_call", fire)

    def failed(self, route: Route, error: BaseException, failure: Failure) -> Failure | None:
        if self._hooks.has("post_auxiliary_call"):
            _fire("post_auxiliary_call", lambda: self._post(
                route, error=f"{type(error).__name__}: {scrub(failure.reason)}"[:2000],
                error_type=type(error).__name__, finish_reason=None, response_model=None, usage=None,
                response=None, assistant_content_chars=0, assistant_tool_call_count=0))
        return None
