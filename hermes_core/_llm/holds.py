"""What a budgeted call holds of its holders' budgets (`Hold`, `Reservation`), what it settles to
(`Settling`), what a full rate answers (`Busy`), and the clock and calendar periods the ledger
counts in."""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Callable
from typing import Any

import attrs

from .budget import Budget, refused

__all__ = ["NOW_VARIABLE", "Busy", "Hold", "Reservation", "Settling", "Unanswered", "now"]

NOW_VARIABLE = "HERMES_LLM_BUDGET_NOW"  # a fixed clock (UNIX seconds) for tests of period boundaries


def now() -> float:
    fixed = os.environ.get(NOW_VARIABLE)
    if fixed:
        return float(fixed)
    import time

    return time.time()


def _periods(moment: float, zone: str) -> tuple[str, str, str, str]:
    """The day and month of `moment` in `zone`, and when each ends (ISO 8601)."""
    from zoneinfo import ZoneInfo

    local = dt.datetime.fromtimestamp(moment, ZoneInfo(zone))
    day_end = dt.datetime.combine(local.date() + dt.timedelta(days=1), dt.time(), local.tzinfo)
    month_end = dt.datetime(local.year + local.month // 12, local.month % 12 + 1, 1, tzinfo=local.tzinfo)
    return local.strftime("%Y-%m-%d"), local.strftime("%Y-%m"), day_end.isoformat(), month_end.isoformat()


def _iso(moment: float, zone: str) -> str:
    from zoneinfo import ZoneInfo

    return dt.datetime.fromtimestamp(moment, ZoneInfo(zone)).isoformat(timespec="seconds")


class Unanswered(Exception):
    """Redis's counters did not answer a reservation for a while (a machine under load, a Redis
    stopped): not out of reach, so the ledger alone, which does not see what Redis holds, must not
    decide; the call waits and asks again."""


@attrs.frozen
class Hold:
    """What one call holds of one holder's budget: its row (0: none was written, the ledger was out
    of reach), and the day and month it counts in."""

    id: int
    who: str
    day: str
    month: str
    started: float


@attrs.frozen
class Reservation:
    """What one call holds until it settles: a `Hold` on each of its holders."""

    holds: tuple[Hold, ...]
    prompt: tuple[int, float] = (0, 0.0)  # its prompt's tokens and their cost: what a call cut off keeps
    counted: bool = False  # reserved in Redis's counters (`counters.Counters`), not in the ledger's rows
    expires: float = 0.0  # when it is released if it is never settled (its lease; 0: unknown)

    @property
    def who(self) -> str:
        return self.holds[0].who


@attrs.frozen
class Settling:
    """A call's settlement, as an operation on the ledger (`op`, called with a transaction): its
    `reservation` becomes `tokens` and `cost`. Kept for later when the ledger is out of reach."""

    reservation: Reservation
    tokens: int
    cost: float
    op: Callable[[Any], None]

    def __call__(self, db: Any) -> None:
        self.op(db)


@attrs.frozen
class Busy:
    """A limit of `budget` has no room for the call now: `retry_in` seconds until it may have (None:
    when a running call ends, unknown), and the refusal should the call not wait. `reserved`: an
    amount that the calls running now have reserved stands in the way (what was spent leaves room),
    so the call waits for them to settle whatever `on_limit` says (it governs rates)."""

    budget: Budget
    name: str
    used: float
    limit: float
    retry_in: float | None
    resets: str
    reserved: bool = False
    asked: float = 1  # what the call asks of the limit

    def error(self, waited: float | None = None) -> Exception:
        return refused(self.budget, self.name, self.used, self.asked, self.limit, self.resets, waited)
