"""The host side of `ctx.llm`: per call, read the config, check trust, route, authenticate,
fall back, account for usage and cost, and audit. Plugins never hold this object's secrets:
it has none (see `credentials`)."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Protocol, TypeVar

import attrs

from .. import _telemetry
from .. import config_keys as keys
from .._runtime.cancel import cancel_check, pause
from .._config.config import Config
from .._errors import ConfigError, LlmConfigError, LlmProviderError, PluginLlmBudgetError, PluginLlmTrustError
from .._messages import Messages
from .audit import AuditLog
from .budget import Budgets, host_holder
from .gate import Admission, admission, admitted, admitted_async, hooks_of
from .counters import Counters, redis_url
from .ledger import Ledger, Reservation
from .settle import asettle, settle, settlement
from .writer import LedgerThread
from .credentials import Pool, pool_for
from .reply import LlmAnswer, answer_of
from .results import PluginLlmUsage
from .routes import Plan, Plans, Route, plan_auxiliary, plan_call, tool_call_content
from .stream import EmptyStream, StreamSink, fold, streams_from, whole_answers_from
from .structured import Structured, has_images, refuses_format
from .profiles import own_client, post_own, shape
from .transport import Failure, apost, async_client, classify, dropped_connection, post, post_stream, sync_client
from .trust import check_overrides

__all__ = ["AttemptObserver", "Call", "LlmHost"]

R = TypeVar("R")
_NO_USAGE = PluginLlmUsage()


class AttemptObserver(Protocol):
    """Sees every attempt of one call (the host's request hooks hang on this): what is about to
    be sent, and how it ended. `failed` may answer a different `Failure` (a plugin's own
    classification of the error); it must not raise."""

    def sending(self, route: Route, request: dict[str, Any], attempt: int, routes: int) -> None: ...

    def answered(self, route: Route, body: bytes, answer: LlmAnswer) -> None: ...

    def failed(self, route: Route, error: BaseException, failure: Failure) -> Failure | None: ...


@attrs.define
class Call:
    """One request as a plugin made it, checked and shaped, before routing."""

    plugin_id: str
    kind: str
    messages: Messages
    temperature: float | None = None
    max_tokens: int | None = None
    timeout: float | None = None
    provider: str | None = None
    model: str | None = None
    agent_id: str | None = None
    profile: str | None = None
    purpose: str | None = None
    response_format: dict[str, Any] | None = None
    task: str | None = None  # a host side task (`auxiliary.<task>`), not a plugin's call
    tools: list[dict[str, Any]] | None = None  # the OpenAI `tools` list (the host's agent loop)
    observer: AttemptObserver | None = None  # the host's request hooks (its own calls only)
    structured: Structured | None = None  # structured output: its `response_format` is chosen per route
    stream: StreamSink | None = None  # stream the answer (where the route allows) and tell this sink as it comes

    def streams(self, route: Route) -> bool:
        return self.stream is not None and streams_from(route, bool(self.tools))

    def mode(self, route: Route) -> str | None:
        """How structured output is asked of `route` (`json_schema`, `json_object`, `prompt`)."""
        return self.structured.mode(route) if self.structured is not None else None

    def request(self, route: Route) -> dict[str, Any]:
        """The request body for `route`: with tools, the route's `tool_choice` (unless "omit");
        the content of assistant messages that carry tool calls as the route wants it ("" or null)."""
        messages, response_format = self.messages, self.response_format
        mode = self.mode(route)
        if self.structured is not None and mode is not None:
            messages, response_format = self.structured.messages(messages, mode), self.structured.response_format(mode)
        body: dict[str, Any] = {"model": route.model, "messages": tool_call_content(messages, route)}
        if self.temperature is not None:
            body["temperature"] = self.temperature
        if self.max_tokens is not None:
            body["max_tokens"] = self.max_tokens
        if response_format is not None:
            body["response_format"] = response_format
        if self.tools:
            body["tools"] = self.tools
            choice = route.tool_choice or "auto"
            if choice != "omit":
                body["tool_choice"] = choice
        if self.streams(route):
            body["stream"] = True
            body["stream_options"] = {"include_usage": True}
        return body


@attrs.define
class _Attempt:
    route: Route
    key: str | None
    delay: float = 0.0


class _Attempts:
    """The order of attempts for one call: each route of the plan in turn; on 401/429 the
    next key of the route's pool; one wait for a `Retry-After` within the cap; on 429, 5xx,
    connection errors and timeouts the next route; on anything else, stop.

    A driver sends each attempt and reports back with `answered(body)` or `failed(exc)`.
    Exhaustion raises from `__next__`, outside the driver's `except` block, so the error
    carries no SDK exception (whose request holds the key) in its context.
    """

    def __init__(self, home: Path, plan: Plan, call: Call) -> None:
        self._home, self._plan, self._profile = home, plan, call.profile
        self._call = call
        self._route_index = -1
        self._pool: Pool | None = None
        self._key_index = 0
        self._waited = False
        self._failure: Failure | None = None
        self._sent = 0
        self._again = False  # the route refused the response format: try it again one step down
        self._reconnect = False  # the route ended a stream empty: a dropped connection is tried once more
        self.mode: str | None = None  # the structured-output mode of the latest attempt
        self.history: list[str] = []
        self.route: Route | None = None
        self.answer: LlmAnswer | None = None
        self.admission: Callable[[], Admission] | None = None  # the call's way past its budget, to drive
        self.reservation: Reservation | None = None  # what the call reserved of its budget, once admitted

    def __iter__(self) -> _Attempts:
        return self

    @property
    def sent(self) -> int:
        """How many requests went out (a call cut off after one has used its prompt's tokens)."""
        return self._sent

    @property
    def timeout(self) -> float:
        return self._plan.timeout

    def send(self, attempt: _Attempt) -> dict[str, Any]:
        """The request body of `attempt`, announced to the call's observer."""
        request = shape(attempt.route.provider, attempt.route.base_url, self._call.request(attempt.route))
        self.mode = self._call.mode(attempt.route)
        observer = self._call.observer
        if observer is not None:
            observer.sending(attempt.route, request, self._sent, len(self._plan.routes))
        self._sent += 1
        return request

    def failed(self, exc: BaseException) -> None:
        failure = classify(exc, self._plan.timeout)
        structured, route, mode = self._call.structured, self.route, self.mode
        if isinstance(exc, EmptyStream) and route is not None:
            whole_answers_from(route, bool(self._call.tools))
            self.history.append(f"{route.label}: an empty stream (asking for whole answers from now on)")
            self._again = self._reconnect = True
            return
        if self._reconnect and route is not None and dropped_connection(exc):
            # A server that ended a stream empty may also drop the connection it kept open.
            self._reconnect = False
            self.history.append(f"{route.label}: {failure.reason} (on the connection of the empty stream; again)")
            self._again = True
            return
        if structured is not None and route is not None and mode is not None and refuses_format(exc):
            lower = structured.step_down(route, mode)
            if lower is not None:
                self.history.append(f"{route.label}: {failure.reason} ({mode} refused; asking with {lower})")
                self._again = True
                return
        observer = self._call.observer
        if observer is not None and self.route is not None:
            failure = observer.failed(self.route, exc, failure) or failure
        self._failure = failure

    def answered(self, body: bytes) -> None:
        """Read the completion from the response body; a body that is not one is a failure
        (a malformed response, which falls back like a 5xx)."""
        assert self.route is not None and self._pool is not None
        try:
            self.answer = answer_of(body, self.route.provider, self.route.model, self._plan.agent_id, self._plan.pricing)
        except ValueError as exc:
            self.failed(exc)
        else:
            self._pool.worked(self._key_index)
            if self._call.observer is not None:
                self._call.observer.answered(self.route, body, self.answer)

    def _next_route(self) -> _Attempt:
        self._route_index += 1
        if self._route_index >= len(self._plan.routes):
            raise self._error("every provider failed")
        self.route = self._plan.routes[self._route_index]
        self._pool = pool_for(self._home, self.route, self._profile)
        self._key_index, self._waited = 0, False
        return _Attempt(self.route, self._pool.key(0))

    def __next__(self) -> _Attempt:
        failure, self._failure = self._failure, None
        if self.route is None:
            return self._next_route()
        if self._again:
            self._again = False
            assert self._pool is not None
            return _Attempt(self.route, self._pool.key(self._key_index))
        if failure is None or self.answer is not None:
            raise StopIteration
        assert self._pool is not None
        self.history.append(f"{self.route.label}: {failure.reason}")
        if failure.status in (401, 429) and self._key_index + 1 < len(self._pool):
            self._key_index += 1
            return _Attempt(self.route, self._pool.key(self._key_index))
        if failure.status == 401:
            raise self._error(f"{self.route.provider} rejected its credentials; check {self.route.key_env} "
                              f"and {self._home / 'auth.json'}", failure.status)
        if not failure.retryable:
            raise self._error(f"{self.route.label} refused the request", failure.status)
        if failure.retry_after is not None and failure.retry_after <= self._plan.retry_after_cap and not self._waited:
            self._waited = True
            return _Attempt(self.route, self._pool.key(self._key_index), failure.retry_after)
        return self._next_route()

    def _error(self, what: str, status: int | None = None) -> LlmProviderError:
        route = self.route or self._plan.routes[-1]
        return LlmProviderError(
            f"{what} ({'; '.join(self.history)})", provider=route.provider, model=route.model,
            status_code=status, attempts=tuple(self.history),
        )


class LlmHost:
    """Runs `Call`s for every plugin of one manager. Holds a way to read the config and the
    audit log, and nothing secret."""

    __slots__ = ("_audit", "_budgets", "_plans", "_read_config", "_spend", "_writer", "home",
                 "__weakref__")

    def __init__(self, home: Path, read_config: Callable[[], Config]) -> None:
        self.home = home
        self._read_config = read_config
        self._budgets = Budgets()
        self._audit = AuditLog(home)
        self._plans = Plans()
        self._spend: Ledger | None = None
        self._writer: LedgerThread | None = None

    def __repr__(self) -> str:
        return f"<LlmHost home={str(self.home)!r}>"

    def _plan(self, call: Call) -> tuple[Plan, Config]:
        """The plan of `call`, and the config it was made under (read once: the admission's too)."""
        if call.task == "agent":  # the agent's own conversation: long answers; `model.timeout` (120 s)
            config = self._read_config()
            try:
                timeout = call.timeout or config.read(keys.MODEL_TIMEOUT)
            except ConfigError as exc:
                raise LlmConfigError(str(exc)) from None
            images = has_images(call.messages)
            plan = self._plans.get(config, ("agent", images, timeout), lambda: plan_call(
                config, provider=None, model=None, agent_id=None, images=images, timeout=timeout))
            return plan, config
        if call.task is not None:
            config = self._read_config()
            return plan_auxiliary(config, call.task, call.timeout), config
        if call.provider or call.model or call.agent_id or call.profile:
            overrides = {"provider": call.provider, "model": call.model, "agent_id": call.agent_id,
                         "profile": call.profile}
            check_overrides(call.plugin_id, self._read_config, overrides)
        config = self._read_config()
        images = has_images(call.messages)
        key = (call.provider, call.model, call.agent_id, images, call.timeout)
        plan = self._plans.get(config, key, lambda: plan_call(config, provider=call.provider, model=call.model,
                                                              agent_id=call.agent_id, images=images,
                                                              timeout=call.timeout))
        return plan, config

    def _done(self, call: Call, started: float, attempts: _Attempts | None, outcome: str, span: Any = None) -> None:
        provider: str | None = None
        model: str | None = None
        usage = _NO_USAGE
        answer = attempts.answer if attempts is not None else None
        if answer is not None:
            provider, model, usage = answer.provider, answer.model, answer.usage
        elif attempts is not None and attempts.route is not None:
            provider, model = attempts.route.provider, attempts.route.model
        self._audit.write(
            call.plugin_id, call.kind, provider, model, call.purpose, usage.input_tokens, usage.output_tokens,
            usage.cost_usd, (time.perf_counter() - started) * 1000,
            len(attempts.history) + (answer is not None) if attempts is not None else 0, outcome,
            attempts.mode if attempts is not None else None,
        )
        if span is not None:
            span.end(provider, model, usage if answer is not None else None,
                     answer.finish_reason if answer is not None else None, outcome,
                     answer.text if answer is not None else None)

    @contextlib.contextmanager
    def _attempts(self, call: Call) -> Iterator[_Attempts]:
        """The attempts of one call, audited once whichever way the call ends. The caller first
        drives `admission` when there is one (the call's budget: its hook, its reservation, waiting
        for room), then the attempts, and settles the reservation (`settle.settlement`) either way."""
        started, attempts = time.perf_counter(), None
        who = host_holder() if call.task is not None else call.plugin_id  # a host side task is the host's own
        telemetry = _telemetry.ACTIVE
        span = None if telemetry is None else telemetry.chat(
            None if call.task is not None else call.plugin_id, who, call.task, call.messages, call.model)
        try:
            plan, config = self._plan(call)
            attempts = _Attempts(self.home, plan, call)
            attempts.admission = admission(self._ledger, self._budgets, config, who,
                                           (call.messages, call.tools, call.max_tokens), plan, hooks_of(self))
            yield attempts
        except BaseException as exc:
            self._done(call, started, attempts, _outcome(exc), span)
            raise
        self._done(call, started, attempts, "ok", span)

    def _ledger(self) -> Ledger:
        if self._spend is None:
            from .._store import state_url

            try:
                url = state_url(self.home)
            except ConfigError as exc:
                raise LlmConfigError(str(exc)) from None
            self._spend = Ledger(self.home, url=url)
            try:
                hot = redis_url(self.home)
            except ConfigError as exc:
                raise LlmConfigError(str(exc)) from None
            if hot is not None:
                self._spend.counters = Counters(hot, self._spend)
        return self._spend

    def _ledger_thread(self) -> LedgerThread:
        """The ledger's writer for async calls (off the event loop, batched)."""
        if self._writer is None:
            self._writer = LedgerThread(self._ledger())
        return self._writer

    def run(self, call: Call, finish: Callable[[LlmAnswer], R]) -> R:
        """Make the call (synchronously) and hand the answer to `finish`; audited either way."""
        with self._attempts(call) as attempts:
            if attempts.admission is not None:
                attempts.reservation = admitted(attempts.admission(), self._ledger())
            failure: BaseException | None = None
            try:
                return self._run(call, attempts, finish)
            except BaseException as exc:
                failure = exc
                raise
            finally:
                if attempts.reservation is not None:
                    settle(self._ledger(), attempts.reservation,
                           *settlement(attempts.reservation, attempts.answer, attempts.sent, failure))

    def _run(self, call: Call, attempts: _Attempts, finish: Callable[[LlmAnswer], R]) -> R:
        for attempt in attempts:
            if attempt.delay:
                pause(attempt.delay)
            cancel_check()  # a turn stopped by its caller makes no more attempts
            route = attempt.route
            own = own_client(route.provider, route.base_url, attempt.key, attempts.timeout)
            client = own if own is not None else sync_client(route.base_url, attempt.key)
            try:
                request = attempts.send(attempt)
                if own is not None:
                    body = post_own(own, request, attempts.timeout)
                elif call.stream is not None and call.streams(attempt.route):
                    body = fold(post_stream(client, request, attempts.timeout), attempt.route, call.stream,
                                lambda exc: _broke_off(exc, attempts.timeout))
                else:
                    body = post(client, request, attempts.timeout)
            except Exception as exc:  # noqa: BLE001 - classified; raised later without it
                cancel_check()  # broken off because the turn was stopped: not a failure to retry
                attempts.failed(exc)
            else:
                attempts.answered(body)
        assert attempts.answer is not None
        return finish(attempts.answer)

    async def arun(self, call: Call, finish: Callable[[LlmAnswer], R]) -> R:
        """`run` for async callers: the same attempts on the running loop's client."""
        with self._attempts(call) as attempts:
            if attempts.admission is not None:
                attempts.reservation = await admitted_async(attempts.admission(), self._ledger_thread())
            failure: BaseException | None = None
            try:
                return await self._arun(call, attempts, finish)
            except BaseException as exc:
                failure = exc
                raise
            finally:
                if attempts.reservation is not None:
                    await asettle(self._ledger(), self._ledger_thread(), attempts.reservation,
                                  *settlement(attempts.reservation, attempts.answer, attempts.sent, failure))

    async def _arun(self, call: Call, attempts: _Attempts, finish: Callable[[LlmAnswer], R]) -> R:
        for attempt in attempts:
            if attempt.delay:
                await asyncio.sleep(attempt.delay)
            route = attempt.route
            own = own_client(route.provider, route.base_url, attempt.key, attempts.timeout)
            try:
                if own is not None:  # a profile's own client is synchronous, as Hermes calls it
                    body = await asyncio.to_thread(post_own, own, attempts.send(attempt), attempts.timeout)
                else:
                    client = await async_client(route.base_url, attempt.key)
                    body = await apost(client, attempts.send(attempt), attempts.timeout)
            except Exception as exc:  # noqa: BLE001 - classified; raised later without it
                attempts.failed(exc)
            else:
                attempts.answered(body)
        assert attempts.answer is not None
        return finish(attempts.answer)


def _broke_off(exc: BaseException, timeout: float) -> str:
    """Why a stream ended early, in a few words (no request, no key)."""
    if isinstance(exc, Exception):
        return classify(exc, timeout).reason
    return "interrupted" if isinstance(exc, KeyboardInterrupt) else type(exc).__name__


def _outcome(exc: BaseException) -> str:
    if isinstance(exc, PluginLlmTrustError):
        return "denied"
    if isinstance(exc, PluginLlmBudgetError):
        return f"refused:{exc.budget}"
    if isinstance(exc, (asyncio.CancelledError, KeyboardInterrupt)):
        return "cancelled"
    return f"error:{type(exc).__name__}"
