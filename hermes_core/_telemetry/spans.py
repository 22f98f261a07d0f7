"""The `Telemetry` object: the tracer and meters of hermes-core, one method per kind of span, with
the OpenTelemetry GenAI semantic conventions' names (`invoke_agent`, `chat`, `execute_tool`;
`gen_ai.*` attributes, the `gen_ai.client.*` histograms) and hermes-core's own under `hermes.*`.

Contents (messages, answers, tool arguments and results) are set only with
`observability.record_content: true`, with secrets masked (`_redact`) and each cut to 8,000
characters; keys and credentials are never set.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import propagate, trace
from opentelemetry.trace import SpanKind, Status, StatusCode

from .._redact import redact_secrets
from .._version import __version__
from .settings import Settings

__all__ = ["ChatSpan", "Handle", "Tally", "Telemetry", "ToolSpan", "TurnSpan"]

MAX_CONTENT = 8000
TOKEN_BUCKETS = [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864]
SECONDS_BUCKETS = [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92]
_NO_ARGUMENTS: dict[str, Any] = {}


def content(value: Any) -> str:
    """`value` as span content: JSON unless it is text, secrets masked, cut to `MAX_CONTENT`."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    text = redact_secrets(text)
    return text if len(text) <= MAX_CONTENT else text[: MAX_CONTENT - 1] + "…"


def _error(span: Any, kind: str, message: str = "") -> None:
    span.set_attribute("error.type", kind)
    span.set_status(Status(StatusCode.ERROR, message[:300] or kind))


class Tally:
    """Sums kept in this process by attribute values and read by the metric reader when it collects
    (observable counters): adding is a dict update under a lock, where a synchronous instrument
    costs microseconds per measurement (the tool calls and the hook callbacks are hot)."""

    __slots__ = ("_keys", "_lock", "_sums")

    def __init__(self, *keys: str) -> None:
        self._keys, self._lock = keys, threading.Lock()
        self._sums: dict[tuple[str, ...], list[float]] = {}  # values: [count, total]

    def add(self, values: tuple[str, ...], amount: float = 1.0) -> None:
        """One more of `values` (a tuple, in the order of the keys), adding `amount` to its total."""
        with self._lock:
            entry = self._sums.get(values)
            if entry is None:
                self._sums[values] = [1, amount]
            else:
                entry[0] += 1
                entry[1] += amount

    def drain(self) -> list[list[Any]]:
        """What was added since the last drain, as `[values, count, total]` (an isolated plugin's
        process hands its sums to the host this way), and the sums reset."""
        with self._lock:
            sums, self._sums = self._sums, {}
        return [[list(values), entry[0], entry[1]] for values, entry in sums.items()]

    def merge(self, values: tuple[str, ...], count: int, total: float) -> None:
        """Add `count` more of `values` with `total` (what another process's `drain` gave)."""
        with self._lock:
            entry = self._sums.setdefault(values, [0, 0.0])
            entry[0] += count
            entry[1] += total

    def _observe(self, index: int) -> list[Any]:
        from opentelemetry.metrics import Observation

        with self._lock:
            sums = [(values, entry[index]) for values, entry in self._sums.items()]
        return [Observation(total, dict(zip(self._keys, values))) for values, total in sums]

    def counts(self, options: Any) -> list[Any]:
        """The counts, for an observable counter's callback."""
        return self._observe(0)

    def totals(self, options: Any) -> list[Any]:
        """The totals of the amounts, for an observable counter's callback."""
        return self._observe(1)


class Handle:
    """A plugin's or a host's own span (`ctx.trace_span`): set attributes, add events."""

    __slots__ = ("_span",)

    def __init__(self, span: Any) -> None:
        self._span = span

    def set(self, key: str, value: Any) -> None:
        """Set attribute `key` (a value OpenTelemetry cannot take is set as its text)."""
        self._span.set_attribute(key, value if isinstance(value, (str, bool, int, float)) else str(value))

    def event(self, name: str, **attributes: Any) -> None:
        """Add event `name` with `attributes`."""
        self._span.add_event(name, {k: v if isinstance(v, (str, bool, int, float)) else str(v)
                                    for k, v in attributes.items()})


class TurnSpan(Handle):
    """The `invoke_agent` span of one turn; `finished` sets what the turn took."""

    __slots__ = ("_telemetry",)

    def __init__(self, span: Any, telemetry: Telemetry) -> None:
        super().__init__(span)
        self._telemetry = telemetry

    def finished(self, result: Any) -> None:
        """The turn answered: `result` is its `TurnResult` (text, tokens, calls, why it stopped)."""
        span = self._span
        span.set_attribute("gen_ai.usage.input_tokens", result.input_tokens)
        span.set_attribute("gen_ai.usage.output_tokens", result.output_tokens)
        span.set_attribute("hermes.turn.model_calls", result.model_calls)
        span.set_attribute("hermes.turn.tool_calls", result.tool_calls)
        if result.stopped:
            span.set_attribute("hermes.turn.stopped", result.stopped)
        if self._telemetry.settings.record_content:
            span.set_attribute("gen_ai.output.messages", content([{"role": "assistant", "parts": [
                {"type": "text", "content": result.text}]}]))


class ChatSpan:
    """The `chat` span of one model call (its attempts, fallbacks included), current while it runs."""

    __slots__ = ("_span", "_token", "_started", "_telemetry", "_request")

    def __init__(self, telemetry: Telemetry, span: Any, request: dict[str, Any]) -> None:
        self._telemetry, self._span, self._request = telemetry, span, request
        self._token = otel_context.attach(trace.set_span_in_context(span))
        self._started = time.perf_counter()

    def end(self, provider: str | None, model: str | None, usage: Any, finish_reason: str | None, outcome: str,
            text: str | None = None) -> None:
        """The call is over: who answered, what it used, how it ended (`ok`, `denied`,
        `refused:<budget>`, `cancelled`, `error:<type>`)."""
        telemetry, span = self._telemetry, self._span
        try:
            seconds = time.perf_counter() - self._started
            base = self._request
            if provider:
                span.set_attribute("gen_ai.provider.name", provider)
                base = {**base, "gen_ai.provider.name": provider}
            if model:
                span.update_name(f"chat {model}")
                span.set_attribute("gen_ai.request.model", model)
                span.set_attribute("gen_ai.response.model", model)
                base = {**base, "gen_ai.request.model": model, "gen_ai.response.model": model}
            if usage is not None and outcome == "ok":
                span.set_attribute("gen_ai.usage.input_tokens", usage.input_tokens)
                span.set_attribute("gen_ai.usage.output_tokens", usage.output_tokens)
                if usage.cost_usd is not None:
                    span.set_attribute("hermes.llm.cost_usd", usage.cost_usd)
                telemetry.token_usage.record(usage.input_tokens, {**base, "gen_ai.token.type": "input"})
                telemetry.token_usage.record(usage.output_tokens, {**base, "gen_ai.token.type": "output"})
            if finish_reason:
                span.set_attribute("gen_ai.response.finish_reasons", [finish_reason])
            if outcome != "ok":
                kind = outcome.partition(":")[2] if outcome.startswith("error:") else outcome.partition(":")[0]
                _error(span, kind, outcome)
                base = {**base, "error.type": kind}
                if outcome.startswith("refused:"):
                    telemetry.budget_refusals.add(1, {"hermes.llm.budget_holder": self._request.get(
                        "hermes.llm.budget_holder", ""), "hermes.llm.budget": outcome.partition(":")[2]})
            elif text is not None and telemetry.settings.record_content:
                span.set_attribute("gen_ai.output.messages", content([{"role": "assistant", "parts": [
                    {"type": "text", "content": text}], "finish_reason": finish_reason or "stop"}]))
            telemetry.duration.record(seconds, base)
        finally:
            otel_context.detach(self._token)
            span.end()


class ToolSpan:
    """The `execute_tool` span of one tool call (see `Telemetry.tool`)."""

    __slots__ = ("_telemetry", "_span", "_token", "_name", "_plugin_id")

    def __init__(self, telemetry: Telemetry, span: Any, name: str, plugin_id: str) -> None:
        self._telemetry, self._span, self._name, self._plugin_id = telemetry, span, name, plugin_id
        self._token: Any = None

    def __enter__(self) -> ToolSpan:
        self._token = otel_context.attach(trace.set_span_in_context(self._span))
        return self

    def __exit__(self, kind: Any, error: Any, traceback: Any) -> None:
        otel_context.detach(self._token)
        if error is not None:
            _error(self._span, type(error).__qualname__, str(error))
        self._span.end()

    def done(self, outcome: Any) -> Any:
        span, record = self._span, self._telemetry.settings.record_content
        status = outcome.status
        span.set_attribute("hermes.tool.outcome", status)
        if status == "blocked":
            span.add_event("hermes.tool.blocked", {"message": content(outcome.message)} if record else _NO_ARGUMENTS)
        elif status == "error":
            _error(span, "tool_error", content(outcome.message) if record else "")
        if record:
            span.set_attribute("gen_ai.tool.call.result", content(outcome.result))
        self._telemetry.tool_calls.add((self._name, self._plugin_id, status))
        return outcome


class Telemetry:
    """What the seams call while export is on (see the package)."""

    def __init__(self, tracer_provider: Any, meter_provider: Any, settings: Settings) -> None:
        self.settings = settings
        self.tracer_provider, self.meter_provider = tracer_provider, meter_provider
        self.tracer = tracer_provider.get_tracer("hermes_core", __version__)
        meter = meter_provider.get_meter("hermes_core", __version__)
        self.token_usage = meter.create_histogram(
            "gen_ai.client.token.usage", unit="{token}", description="Number of input and output tokens used",
            explicit_bucket_boundaries_advisory=TOKEN_BUCKETS)
        self.duration = meter.create_histogram(
            "gen_ai.client.operation.duration", unit="s", description="GenAI operation duration",
            explicit_bucket_boundaries_advisory=SECONDS_BUCKETS)
        self.tool_calls = Tally("gen_ai.tool.name", "hermes.plugin.id", "hermes.tool.outcome")
        meter.create_observable_counter("hermes.tool.calls", [self.tool_calls.counts], unit="{call}",
                                        description="Tool calls, by tool, owning plugin and outcome (ok, error, blocked)")
        self.hook_time = Tally("hermes.hook.name", "hermes.plugin.id")
        meter.create_observable_counter("hermes.hook.time", [self.hook_time.totals], unit="s",
                                        description="Time in lifecycle hook callbacks, by hook and plugin")
        meter.create_observable_counter("hermes.hook.calls", [self.hook_time.counts], unit="{call}",
                                        description="Lifecycle hook callback calls, by hook and plugin")
        self.budget_refusals = meter.create_counter(
            "hermes.llm.budget.refusals", unit="{call}", description="Model calls refused by a budget, by holder")

    # -- context across processes ---------------------------------------------------------------

    def headers(self) -> dict[str, str]:
        """The current context as W3C trace context headers (the configured propagators')."""
        carrier: dict[str, str] = {}
        propagate.inject(carrier)
        return carrier

    @contextlib.contextmanager
    def attached(self, carrier: Mapping[str, str]) -> Iterator[None]:
        """The context in `carrier` (W3C headers) current inside `with`: an isolated plugin's call,
        or its process's request to the host (`ctx.llm`) that goes on under its span."""
        token = otel_context.attach(propagate.extract({k.lower(): v for k, v in carrier.items()
                                                       if isinstance(v, str)}))
        try:
            yield
        finally:
            otel_context.detach(token)

    @contextlib.contextmanager
    def served(self, name: str, carrier: Mapping[str, str], attributes: Mapping[str, Any]) -> Iterator[Handle]:
        """A SERVER span for one request, continuing the caller's trace when `carrier` (its
        headers, or an MCP request's `_meta`) holds a `traceparent`."""
        parent = propagate.extract({k.lower(): v for k, v in carrier.items() if isinstance(v, str)})
        with self.tracer.start_as_current_span(name, parent, SpanKind.SERVER, dict(attributes)) as span:
            yield Handle(span)

    @contextlib.contextmanager
    def own_trace(self, name: str, attributes: Mapping[str, Any],
                  linked_to: Mapping[str, str] | None = None) -> Iterator[Handle]:
        """A span that starts a trace of its own (a cron run, a batch item), whatever is current,
        linked to the span whose context `linked_to` holds (W3C headers: the batch's)."""
        root = otel_context.Context()
        links = []
        if linked_to:
            other = trace.get_current_span(propagate.extract({k.lower(): v for k, v in linked_to.items()
                                                              if isinstance(v, str)})).get_span_context()
            if other.is_valid:
                links.append(trace.Link(other))
        with self.tracer.start_as_current_span(name, root, SpanKind.INTERNAL, dict(attributes), links) as span:
            yield Handle(span)

    def flush(self, seconds: float) -> None:
        """Export what is still queued, waiting up to `seconds` for each signal (a process about to be
        killed, where nothing runs at exit)."""
        for provider in (self.tracer_provider, self.meter_provider):
            flush = getattr(provider, "force_flush", None)
            if flush is not None:
                flush(int(seconds * 1000))

    # -- the agent's turn and its model calls -------------------------------------------------

    @contextlib.contextmanager
    def turn(self, agent: str, session_id: str, model: str, platform: str, text: str) -> Iterator[TurnSpan]:
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": agent, "gen_ai.conversation.id": session_id,
            "hermes.platform": platform}
        if model:
            attributes["gen_ai.request.model"] = model
        if self.settings.record_content:
            attributes["gen_ai.input.messages"] = content([{"role": "user", "parts": [{"type": "text",
                                                                                       "content": text}]}])
        with self.tracer.start_as_current_span(f"invoke_agent {agent}", None, SpanKind.INTERNAL, attributes) as span:
            yield TurnSpan(span, self)

    def chat(self, plugin_id: str | None, holder: str, task: str | None, messages: Any,
             request_model: str | None) -> ChatSpan:
        """Start the `chat` span of one model call: `plugin_id` for a plugin's `ctx.llm` call,
        `holder` the budget it is counted against, `task` the host's side task (`agent`, ...)."""
        attributes: dict[str, Any] = {"gen_ai.operation.name": "chat", "hermes.llm.budget_holder": holder}
        if request_model:
            attributes["gen_ai.request.model"] = request_model
        if plugin_id is not None:
            attributes["hermes.plugin.id"] = plugin_id
        if task is not None:
            attributes["hermes.llm.task"] = task
        if self.settings.record_content:
            attributes["gen_ai.input.messages"] = content(messages)
        span = self.tracer.start_span(f"chat {request_model}" if request_model else "chat", None, SpanKind.CLIENT,
                                      attributes)
        metric = {"gen_ai.operation.name": "chat", "hermes.llm.budget_holder": holder}
        return ChatSpan(self, span, metric)

    # -- tools, hooks, MCP ------------------------------------------------------------------------

    def tool(self, name: str, plugin_id: str | None, tool_type: str, call_id: str, arguments: Any) -> ToolSpan:
        """The `execute_tool` span of one call, current inside `with`; `done(outcome)` hands the
        call's `ToolOutcome` through (its status is the span's outcome)."""
        attributes: dict[str, Any] = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name,
                                      "gen_ai.tool.type": tool_type, "hermes.plugin.id": plugin_id or ""}
        if call_id:
            attributes["gen_ai.tool.call.id"] = call_id
        if self.settings.record_content:
            attributes["gen_ai.tool.call.arguments"] = content(arguments)
        return ToolSpan(self, self.tracer.start_span(f"execute_tool {name}", None, SpanKind.INTERNAL, attributes),
                        name, plugin_id or "")

    def event(self, name: str, attributes: Mapping[str, Any]) -> None:
        """An event on the current span (a tool call's approval)."""
        trace.get_current_span().add_event(name, dict(attributes))

    def hooks(self, hook: str) -> Callable[[str | None, str, float, float, str], None]:
        """How one hook call reports each callback: `report(plugin_id, callback, started, seconds,
        outcome)` (`started` a `time.perf_counter()`); a callback that fails, times out or runs past
        `observability.slow_hook` gets a span under the span current now."""
        parent = otel_context.get_current()
        slow = self.settings.slow_hook
        offset = time.time_ns() - time.perf_counter_ns()

        def report(plugin_id: str | None, callback: str, started: float, seconds: float, outcome: str) -> None:
            plugin = plugin_id or ""
            self.hook_time.add((hook, plugin), seconds)
            failed = outcome not in ("ok", "blocked")
            if not failed and seconds <= slow:
                return
            start = offset + int(started * 1e9)
            span = self.tracer.start_span(f"hook {hook}", parent, SpanKind.INTERNAL, {
                "hermes.hook.name": hook, "hermes.plugin.id": plugin, "hermes.hook.callback": callback,
                "hermes.hook.outcome": outcome}, start_time=start)
            if failed:
                _error(span, outcome.removeprefix("raised ").replace(" ", "_"), outcome)
            span.end(end_time=start + int(seconds * 1e9))

        return report

    @contextlib.contextmanager
    def own(self, name: str, plugin_id: str | None, attributes: Mapping[str, Any]) -> Iterator[Handle]:
        """A span of a plugin's own under the current one (`ctx.trace_span`)."""
        with self.tracer.start_as_current_span(name, None, SpanKind.INTERNAL) as span:
            handle = Handle(span)
            if plugin_id is not None:
                span.set_attribute("hermes.plugin.id", plugin_id)
            for key, value in attributes.items():
                handle.set(key, value)
            yield handle
