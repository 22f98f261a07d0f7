"""One call's way past its budget: the `on_budget_check` hook, then a reservation in the ledger,
waiting for room under a rate limit when `on_limit` is `wait`.

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
import sqlite3
import time
import weakref
from collections.abc import Callable, Generator
from typing import TYPE_CHECKING, Any, Protocol

import attrs

from .._errors import ConfigError, LlmConfigError, PluginLlmBudgetError
from .budget import HOST, KEY_HOLDER, Budget, Budgets, worst_case
from .ledger import Ledger, LedgerThread, Reservation

if TYPE_CHECKING:
    from .._config.config import Config
    from .routes import Plan

__all__ = ["HOOK", "Admission", "BudgetHooks", "Write", "admission", "admit", "admitted", "admitted_async",
           "attach_hooks", "hooks_of"]

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
    the ledger's thread (async ones)."""

    op: Callable[[sqlite3.Connection], Any]


Admission = Generator["float | HookRun | Write", Any, "Reservation | None"]

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
    """The way past its budget of the call of `who` (a plugin id, or `HOST`) with `request` (its
    messages, tools and max_tokens), to drive with `admitted` or `admitted_async`; None when it has
    no budget and no hook asks about it (nothing to do)."""
    try:
        budget = budgets.get(config, who)
    except ConfigError as exc:
        raise LlmConfigError(str(exc)) from None
    asks = _asks_hook(hooks, who)
    if budget is None and not asks:
        return None
    # no limits but a hook asks: the calls are recorded, for the hook to see what was used
    return functools.partial(admit, ledger(), budget or Budget(who, ""), request, plan, hooks if asks else None)


def admit(ledger: Ledger, budget: Budget, request: tuple[Any, Any, int | None], plan: Plan,
          hooks: BudgetHooks | None) -> Admission:
    """Let a call past `budget`, asking `hooks` first when given: its reservation;
    `PluginLlmBudgetError` when refused."""
    who = budget.who
    tokens, cost = worst_case(*request, plan.pricing, plan.routes[0].model)
    if hooks is not None:
        decision = yield hooks.on_budget_check(plugin_id=who, budget=budget.as_dict(), used=ledger.used(budget),
                                               requested={"tokens": tokens, "cost": cost})
        if decision is not None:
            text = decision.get("message") or decision.get("reason") or "no reason given"
            raise PluginLlmBudgetError(f"plugin {who!r}'s LLM call was refused by a budget policy "
                                       f"(on_budget_check): {text}", plugin_id=who, budget=HOOK, used=0, limit=0,
                                       resets="")
    started, poll = time.monotonic(), _FIRST_POLL
    deadline = started + plan.timeout * len(plan.routes)
    while True:
        got = yield Write(ledger.reserving(budget, tokens, cost, plan.timeout * len(plan.routes)))
        if isinstance(got, Reservation):
            return got
        wait = got.retry_in if got.retry_in is not None else poll
        if budget.on_limit == "refuse" and not got.reserved:  # other calls' reservations are always waited for
            raise got.error(budget)
        if time.monotonic() + wait > deadline:
            raise got.error(budget, time.monotonic() - started)
        yield wait
        poll = min(poll * 2, _LAST_POLL)


def admitted(admission: Admission, ledger: Ledger) -> Reservation | None:
    """Drive `admission` from sync code."""
    given: Any = None
    while True:
        try:
            step = admission.send(given)
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]
        if isinstance(step, Write):
            given = ledger.write(step.op)
        elif isinstance(step, float):
            time.sleep(step)
            given = None
        else:
            given = step.run()


async def admitted_async(admission: Admission, writer: LedgerThread) -> Reservation | None:
    """Drive `admission` from async code, never blocking the loop while it waits or writes."""
    given: Any = None
    while True:
        try:
            step = admission.send(given)
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]
        if isinstance(step, Write):
            given = await writer.write(step.op)
        elif isinstance(step, float):
            await asyncio.sleep(step)
            given = None
        else:
            given = await step.arun()
