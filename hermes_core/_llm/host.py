"""The host side of `ctx.llm`: per call, read the config, check trust, route, authenticate,
fall back, account for usage and cost, and audit. Plugins never hold this object's secrets:
it has none (see `credentials`)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

import attrs

from .._config import Config
from .._errors import LlmProviderError
from .audit import AuditLog
from .credentials import Pool, pool_for
from .results import PluginLlmUsage
from .routes import Plan, Route, plan_call
from .structured import has_images
from .transport import Failure, async_client, classify, sync_client
from .trust import check_overrides

__all__ = ["Call", "Answer", "LlmHost"]

R = TypeVar("R")


@attrs.frozen
class Call:
    """One request as a plugin made it, checked and shaped, before routing."""

    plugin_id: str
    kind: str
    messages: list[dict[str, Any]]
    temperature: float | None = None
    max_tokens: int | None = None
    timeout: float | None = None
    provider: str | None = None
    model: str | None = None
    agent_id: str | None = None
    profile: str | None = None
    purpose: str | None = None
    response_format: dict[str, Any] | None = None

    def request(self, route: Route) -> dict[str, Any]:
        body: dict[str, Any] = {"model": route.model, "messages": self.messages}
        if self.temperature is not None:
            body["temperature"] = self.temperature
        if self.max_tokens is not None:
            body["max_tokens"] = self.max_tokens
        if self.response_format is not None:
            body["response_format"] = self.response_format
        return body


@attrs.frozen
class Answer:
    """What came back, as plain data: the reply text and who gave it."""

    text: str
    provider: str
    model: str
    agent_id: str
    usage: PluginLlmUsage


@attrs.frozen
class _Attempt:
    route: Route
    key: str | None
    delay: float = 0.0


class _Attempts:
    """The order of attempts for one call: each route of the plan in turn; on 401/429 the
    next key of the route's pool; one wait for a `Retry-After` within the cap; on 429, 5xx,
    connection errors and timeouts the next route; on anything else, stop.

    Exhaustion raises from `__next__`, outside the caller's `except` block, so the error
    carries no SDK exception (whose request holds the key) in its context.
    """

    def __init__(self, home: Path, plan: Plan, profile: str | None) -> None:
        self._home, self._plan, self._profile = home, plan, profile
        self._route_index = -1
        self._pool: Pool | None = None
        self._key_index = 0
        self._waited = False
        self._failure: Failure | None = None
        self.history: list[str] = []
        self.route: Route | None = None

    def __iter__(self) -> _Attempts:
        return self

    def failed(self, failure: Failure) -> None:
        self._failure = failure

    def succeeded(self) -> None:
        assert self._pool is not None
        self._pool.worked(self._key_index)

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
        if failure is None:
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


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def _price(pricing: Mapping[str, Any], *models: str) -> Mapping[str, Any] | None:
    wanted = {m.casefold() for m in models}
    for name, entry in pricing.items():
        if str(name).casefold() in wanted and isinstance(entry, Mapping):
            return entry
    return None


def usage_of(usage: Any, pricing: Mapping[str, Any], *models: str) -> PluginLlmUsage:
    """Token counts and cost from an SDK `usage` object: the provider's own `cost` when it
    reports one, else the price table (USD per million tokens), else None."""
    if usage is None:
        return PluginLlmUsage()
    details = getattr(usage, "prompt_tokens_details", None)
    input_tokens = int(getattr(usage, "prompt_tokens", 0) or 0)
    output_tokens = int(getattr(usage, "completion_tokens", 0) or 0)
    total = int(getattr(usage, "total_tokens", 0) or (input_tokens + output_tokens))
    cache_read = int(getattr(details, "cached_tokens", 0) or getattr(usage, "cache_read_input_tokens", 0) or 0)
    cache_write = int(getattr(details, "cache_write_tokens", 0) or getattr(usage, "cache_creation_input_tokens", 0) or 0)
    cost = _number(getattr(usage, "cost", None))
    if cost is None:
        price = _price(pricing, *models)
        rates = {k: _number(price.get(k)) for k in ("input", "output", "cache_read", "cache_write")} if price else {}
        if rates.get("input") is not None and rates.get("output") is not None:
            fresh = max(0, input_tokens - cache_read - cache_write)
            cost = (fresh * rates["input"] + output_tokens * rates["output"]  # type: ignore[operator]
                    + cache_read * (rates["cache_read"] if rates["cache_read"] is not None else rates["input"])
                    + cache_write * (rates["cache_write"] if rates["cache_write"] is not None else rates["input"])
                    ) / 1_000_000
    return PluginLlmUsage(input_tokens, output_tokens, total, cache_read, cache_write, cost)


class LlmHost:
    """Runs `Call`s for every plugin of one manager. Holds a way to read the config and the
    audit log, and nothing secret."""

    __slots__ = ("home", "_read_config", "_audit")

    def __init__(self, home: Path, read_config: Callable[[], Config]) -> None:
        self.home = home
        self._read_config = read_config
        self._audit = AuditLog(home)

    def __repr__(self) -> str:
        return f"<LlmHost home={str(self.home)!r}>"

    def _plan(self, call: Call) -> Plan:
        overrides = {"provider": call.provider, "model": call.model, "agent_id": call.agent_id, "profile": call.profile}
        check_overrides(call.plugin_id, self._read_config, overrides)
        return plan_call(self._read_config(), provider=call.provider, model=call.model, agent_id=call.agent_id,
                         images=has_images(call.messages), timeout=call.timeout)

    def _answer(self, plan: Plan, route: Route, response: Any) -> Answer:
        choice = response.choices[0] if response.choices else None
        text = (choice.message.content if choice is not None else None) or ""
        model = getattr(response, "model", None) or route.model
        return Answer(text, route.provider, model, plan.agent_id, usage_of(response.usage, plan.pricing, model, route.model))

    def _done(self, call: Call, started: float, attempts: _Attempts | None, answer: Answer | None,
              outcome: str) -> None:
        route = attempts.route if attempts is not None else None
        usage = answer.usage if answer is not None else PluginLlmUsage()
        self._audit.write(
            plugin=call.plugin_id, call=call.kind,
            provider=answer.provider if answer else (route.provider if route else None),
            model=answer.model if answer else (route.model if route else None),
            purpose=call.purpose, tokens_in=usage.input_tokens, tokens_out=usage.output_tokens,
            cost_usd=None if usage.cost_usd is None else f"{usage.cost_usd:.6f}",
            latency_ms=f"{(time.perf_counter() - started) * 1000:.1f}",
            attempts=len(attempts.history) + (answer is not None) if attempts is not None else 0,
            outcome=outcome,
        )

    def run(self, call: Call, finish: Callable[[Answer], R]) -> R:
        """Make the call (synchronously) and hand the answer to `finish`; audited either way."""
        started, attempts, answer = time.perf_counter(), None, None
        try:
            plan = self._plan(call)
            attempts = _Attempts(self.home, plan, call.profile)
            for attempt in attempts:
                if attempt.delay:
                    time.sleep(attempt.delay)
                client = sync_client(attempt.route.base_url, attempt.key)
                try:
                    response = client.chat.completions.create(**call.request(attempt.route), timeout=plan.timeout)
                    answer = self._answer(plan, attempt.route, response)
                except Exception as exc:  # noqa: BLE001 - classified; raised later without it
                    attempts.failed(classify(exc, plan.timeout))
                else:
                    attempts.succeeded()
            assert answer is not None
            result = finish(answer)
        except BaseException as exc:
            self._done(call, started, attempts, answer, _outcome(exc))
            raise
        self._done(call, started, attempts, answer, "ok")
        return result

    async def arun(self, call: Call, finish: Callable[[Answer], R]) -> R:
        """`run` for async callers: the same attempts on the running loop's client."""
        started, attempts, answer = time.perf_counter(), None, None
        try:
            plan = self._plan(call)
            attempts = _Attempts(self.home, plan, call.profile)
            for attempt in attempts:
                if attempt.delay:
                    await asyncio.sleep(attempt.delay)
                client = await async_client(attempt.route.base_url, attempt.key)
                try:
                    response = await client.chat.completions.create(**call.request(attempt.route), timeout=plan.timeout)
                    answer = self._answer(plan, attempt.route, response)
                except Exception as exc:  # noqa: BLE001 - classified; raised later without it
                    attempts.failed(classify(exc, plan.timeout))
                else:
                    attempts.succeeded()
            assert answer is not None
            result = finish(answer)
        except BaseException as exc:
            self._done(call, started, attempts, answer, _outcome(exc))
            raise
        self._done(call, started, attempts, answer, "ok")
        return result


def _outcome(exc: BaseException) -> str:
    from .._errors import PluginLlmTrustError

    if isinstance(exc, PluginLlmTrustError):
        return "denied"
    if isinstance(exc, (asyncio.CancelledError, KeyboardInterrupt)):
        return "cancelled"
    return f"error:{type(exc).__name__}"
