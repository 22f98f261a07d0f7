"""One call's way past its budgets: the `on_budget_check` hook, then one reservation in the ledger
on every holder the call has (its plugin or the host or an API key, its caller, the fleet), waiting
for room under a rate limit when `on_limit` is `wait`. A refusal is counted on the holder that
refused; a ledger out of reach refuses the call or lets it through, per `budgets.on_store_error`.

`admit` is written once for both kinds of caller: it yields what must happen before it can go
on (a pause of some seconds, a hook call to run, a ledger write) and the caller does it the way
it can (the sync client sleeps, runs the hook and writes in a transaction of its own; the async
one awaits all three, its writes batched on the ledger's thread), then resumes it. Its return
value is the reservation to settle. `admission` says first whether a call has anything to do
here at all: most have not, and pay nothing.
"""

from __future__ import annotations

import asyncio
import functools
import random
import time
import weakref
from collections.abc import Awaitable, Callable, Generator
from typing import TYPE_CHECKING, Any, Protocol

import attrs

from .. import config_keys as keys
from .._errors import ConfigError, LlmConfigError, MemoryStoreError, PluginLlmBudgetError
from .budget import (CALLER_HOLDER, FLEET, HOST, KEY_HOLDER, Budget, Budgets, holders_of, prompt_part,
                     worst_case)
from .holds import Unanswered, now
from .ledger import Ledger, Reservation
from .writer import LedgerThread

if TYPE_CHECKING:
    from .._config.config import Config
    from .routes import Plan

__all__ = ["HOOK", "Admission", "BudgetHooks", "Direct", "Policy", "Write", "admission", "admit", "admitted", "admitted_async",
           "attach_hooks", "hooks_of", "store_refusal"]

HOOK = "on_budget_check"
_FIRST_POLL, _LAST_POLL = 0.01, 0.25  # how often a call waiting under max_concurrent looks for room


class HookRun(Protocol):
    """One call of the hook, to run from sync code or await from async code."""

    def run(self) -> dict[str, Any] | None: ...

    async def arun(self) -> dict[str, Any] | None: ...


class BudgetHooks(Protocol):
    """What the gate needs of the host's lifecycle hooks (`LifecycleHooks` is one)."""

    def has(self, hook: str) -> bool: ...

    def implementers(self, hook: str) -> frozenset[str]: ...

    def on_budget_check(self, *, plugin_id: str, budget: dict[str, Any], used: dict[str, float],
                        requested: dict[str, float]) -> HookRun: ...


@attrs.frozen
class Write:
    """A ledger operation for the driver to run: in a transaction of its own (sync callers), or on
    the ledger's thread (async ones). Its error is thrown back into the admission, unless `quiet`
    (a refusal's count, which must not turn one refusal into another error)."""

    op: Callable[[Any], Any]
    quiet: bool = False


@attrs.frozen
class Direct:
    """A call for the driver to make as it is (sync callers), or `acall` to await (async ones), on
    the ledger's threads when there is none: a reservation in Redis's counters. Its error is thrown
    back into the admission."""

    call: Callable[[], Any]
    acall: Callable[[], Awaitable[Any]] | None = None


@attrs.frozen
class Policy:
    """The `budgets.*` settings one admission follows."""

    on_store_error: str = "closed"
    unpriced_cost: float = 0.05
    reservation_ttl: float = 60.0

    @classmethod
    def of(cls, config: Config) -> Policy:
        return cls(config.read(keys.BUDGETS_ON_STORE_ERROR), config.read(keys.BUDGETS_UNPRICED_COST),
                   config.read(keys.BUDGETS_RESERVATION_TTL))


Admission = Generator["float | HookRun | Write | Direct", Any, "Reservation | None"]

# The hooks each LLM host asks, out of reach of the host's attributes (a plugin walks from ctx.llm
# to its host, and must not reach the hook runner from there); weak both ways.
_hooks_of: weakref.WeakKeyDictionary[Any, weakref.ref[BudgetHooks]] = weakref.WeakKeyDictionary()


def attach_hooks(host: Any, hooks: BudgetHooks) -> None:
    """`host`'s calls are submitted to `hooks`' `on_budget_check`."""
    _hooks_of[host] = weakref.ref(hooks)


def hooks_of(host: Any) -> BudgetHooks | None:
    ref = _hooks_of.get(host)
    return ref() if ref is not None else None


def _asks_hook(hooks: BudgetHooks | None, who: str) -> bool:
    """Whether `who`'s call goes to `on_budget_check`: a plugin's call, when some plugin implements
    the hook and `who` is not one of them (a policy that calls ctx.llm from its check cannot loop)."""
    if who == HOST or who.startswith(KEY_HOLDER) or hooks is None or not hooks.has(HOOK):
        return False
    return who not in hooks.implementers(HOOK)


def admission(ledger: Callable[[], Ledger], budgets: Budgets, config: Config, who: str,
              request: tuple[Any, Any, int | None], plan: Plan,
              hooks: BudgetHooks | None) -> Callable[[], Admission] | None:
    """The way past its budgets of the call of `who` (a plugin id, `HOST` or `key:<name>`) with
    `request` (its messages, tools and max_tokens), to drive with `admitted` or `admitted_async`;
    None when no holder of it has a budget and no hook asks about it (nothing to do)."""
    try:
        holders = holders_of(config, budgets, who)
        asks = _asks_hook(hooks, who)
        if not holders and not asks:
            return None
        policy = Policy.of(config)
    except ConfigError as exc:
        raise LlmConfigError(str(exc)) from None
    if not holders or holders[0].who != who:  # no limits but a hook asks: recorded, for the hook to see what was used
        holders.insert(0, Budget(who, ""))
    return functools.partial(admit, ledger(), tuple(holders), request, plan, hooks if asks else None, policy)


def store_refusal(ledger: Ledger, who: str, error: BaseException) -> PluginLlmBudgetError:
    """The refusal of a call whose budgets cannot be checked (`budgets.on_store_error: closed`)."""
    return PluginLlmBudgetError(
        f"the {ledger.what} ({ledger.location}) cannot be reached, so the LLM call of {_whom(who)} is refused "
        f"(budgets.on_store_error is closed: set it to open to let calls through, counted once the ledger is "
        f"back): {error}", plugin_id=who, budget="on_store_error", used=0, limit=0, resets="")


def redis_refusal(who: str, error: BaseException) -> PluginLlmBudgetError:
    """The refusal of a call that Redis's counters did not answer within its time limit."""
    return PluginLlmBudgetError(
        f"the LLM call of {_whom(who)} is refused: {error}, and the ledger alone does not see what the calls "
        "Redis holds have reserved (budgets.on_store_error is closed: set it to open to let calls through on the "
        "ledger alone)", plugin_id=who, budget="on_store_error", used=0, limit=0, resets="")


def _whom(who: str) -> str:
    if who == HOST:
        return "the host"
    if who == FLEET:
        return "the fleet"
    if who.startswith(KEY_HOLDER):
        return f"API key {who[len(KEY_HOLDER):]!r}"
    if who.startswith(CALLER_HOLDER):
        return f"caller {who[len(CALLER_HOLDER):]!r}"
    return f"plugin {who!r}"


def admit(ledger: Ledger, budgets: tuple[Budget, ...], request: tuple[Any, Any, int | None], plan: Plan,
          hooks: BudgetHooks | None, policy: Policy = Policy()) -> Admission:
    """Let a call past each of `budgets` (its own holder's first), asking `hooks` first when given:
    its reservation on all of them; `PluginLlmBudgetError` naming the holder when refused."""
    budget = budgets[0]
    who = budget.who
    tokens, priced = worst_case(*request, plan.pricing, plan.routes[0].model)
    prompt = prompt_part(request[0], request[1], plan.pricing, plan.routes[0].model)
    # a cost the model's missing price leaves unknown still reserves something of a cost budget
    cost = priced if priced is not None else policy.unpriced_cost if any(
        b.cost_per_day is not None or b.cost_per_month is not None for b in budgets) else 0.0
    if hooks is not None:
        try:
            used = ledger.used(budget)
        except MemoryStoreError as exc:
            if policy.on_store_error != "open":
                raise store_refusal(ledger, who, exc) from None
            used = {}
        decision = yield hooks.on_budget_check(plugin_id=who, budget=budget.as_dict(), used=used,
                                               requested={"tokens": tokens, "cost": cost})
        if decision is not None:
            text = decision.get("message") or decision.get("reason") or "no reason given"
            yield Write(ledger.refusing(budget), quiet=True)
            raise PluginLlmBudgetError(f"plugin {who!r}'s LLM call was refused by a budget policy "
                                       f"(on_budget_check): {text}", plugin_id=who, budget=HOOK, used=0, limit=0,
                                       resets="")
    started, poll = time.monotonic(), _FIRST_POLL
    limit = plan.timeout * len(plan.routes)
    deadline, lease = started + limit, limit + policy.reservation_ttl  # a reservation's lease: the call's time and more
    again = False  # found no room a moment ago: look before reserving
    counters = ledger.counters
    while True:
        try:
            got = None
            if counters is not None and counters.up:  # None: Redis is out of reach, the ledger decides
                try:
                    got = yield Direct(functools.partial(counters.reserve, budgets, tokens, cost, lease),
                                       functools.partial(counters.areserve, budgets, tokens, cost, lease))
                except Unanswered as exc:  # Redis is slow, not gone: its calls hold what the ledger cannot see
                    if policy.on_store_error != "open":
                        if time.monotonic() + poll > deadline:
                            raise redis_refusal(who, exc) from None
                        yield poll * random.uniform(0.5, 1.5)
                        poll = min(poll * 2, _LAST_POLL)
                        continue
            if got is None:
                got = yield Write(ledger.reserving(budgets, tokens, cost, lease, look_first=again))
        except PluginLlmBudgetError as exc:
            yield Write(ledger.refusing(next((b for b in budgets if b.who == exc.plugin_id), budget)), quiet=True)
            raise
        except MemoryStoreError as exc:  # the ledger is out of reach (a StateUnavailableError, a locked file)
            if policy.on_store_error == "open":
                return Ledger.unrecorded(budgets)
            raise store_refusal(ledger, who, exc) from None
        if isinstance(got, Reservation):
            return attrs.evolve(got, prompt=prompt, expires=now() + lease)
        # calls that wait for each other's reservations look again at moments of their own
        wait = got.retry_in if got.retry_in is not None else poll * random.uniform(0.5, 1.5)
        if got.budget.on_limit == "refuse" and not got.reserved:  # other calls' reservations are always waited for
            yield Write(ledger.refusing(got.budget), quiet=True)
            raise got.error()
        if time.monotonic() + wait > deadline:
            yield Write(ledger.refusing(got.budget), quiet=True)
            raise got.error(time.monotonic() - started)
        yield wait
        poll, again = min(poll * 2, _LAST_POLL), True


def admitted(admission: Admission, ledger: Ledger) -> Reservation | None:
    """Drive `admission` from sync code."""
    given: Any = None
    error: BaseException | None = None
    while True:
        try:
            step = admission.send(given) if error is None else admission.throw(error)
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]
        given, error = None, None
        if isinstance(step, Write):
            try:
                given = ledger.write(step.op)
            except Exception as exc:  # noqa: BLE001 - the admission's to handle (a refusal, the store down)
                error = None if step.quiet else exc
        elif isinstance(step, Direct):
            try:
                given = step.call()
            except Exception as exc:  # noqa: BLE001 - the admission's to handle
                error = exc
        elif isinstance(step, float):
            time.sleep(step)
        else:
            given = step.run()


async def admitted_async(admission: Admission, writer: LedgerThread) -> Reservation | None:
    """Drive `admission` from async code, never blocking the loop while it waits or writes."""
    given: Any = None
    error: BaseException | None = None
    while True:
        try:
            step = admission.send(given) if error is None else admission.throw(error)
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]
        given, error = None, None
        if isinstance(step, Write):
            try:
                given = await writer.write(step.op)
            except Exception as exc:  # noqa: BLE001 - the admission's to handle (a refusal, the store down)
                error = None if step.quiet else exc
        elif isinstance(step, Direct):
            try:
                given = await (step.acall() if step.acall is not None else writer.run(step.call))
            except Exception as exc:  # noqa: BLE001 - the admission's to handle
                error = exc
        elif isinstance(step, float):
            await asyncio.sleep(step)
        else:
            given = await step.arun()
