"""The usage page's figures: the LLM ledger's totals per day, per plugin and per caller (an API
key; a caller of the API server or a gateway's sender), each shown holder's budget, and the
agent's tokens per day by model from the session store.

Days that are over do not change any more (a settlement comes at most a day late, and a budget's
time zone moves its day by less than one): the figures of the days before the last
`_SETTLED` are read once and kept (the `_KEPT` latest views), and each view reads only the last
few days again. A view of 90 days over a million ledger rows costs its first view alone, and the
dashboard reads the three periods' settled days in the background when it starts (`Reader.warm`).
"""

from __future__ import annotations

import datetime as dt
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

__all__ = ["USAGE_DAYS", "UsageReports"]

USAGE_DAYS = (7, 30, 90)
_TOP = 50  # holders shown of each kind, the biggest spenders first
_SETTLED = 3  # the days before today whose totals can still change (today's are read at each view): fewer
# than the shortest period of USAGE_DAYS, so that every period has days that no longer change
_KEPT = 64
_KEY, _CALLER, _FLEET = "key:", "caller:", "fleet"

T = TypeVar("T")
Row = tuple[str, int, float, int]


class UsageReports:
    """The usage page's data over one home's ledger and session store, settled days kept."""

    def __init__(self) -> None:
        self._kept: OrderedDict[Hashable, Any] = OrderedDict()
        self._lock = threading.Lock()
        self._reading = threading.Lock()

    def _once(self, key: Hashable, read: Callable[[], T]) -> T:
        with self._lock:
            if key in self._kept:
                self._kept.move_to_end(key)
                return self._kept[key]  # type: ignore[no-any-return]
        with self._reading:  # one at a time: a view waits for the same figures the warm-up is reading
            with self._lock:
                if key in self._kept:
                    return self._kept[key]  # type: ignore[no-any-return]
            value = read()
            with self._lock:
                self._kept[key] = value
                while len(self._kept) > _KEPT:
                    self._kept.popitem(last=False)
        return value

    def report(self, ledger: Any, store: Any, budgets: Callable[[list[str]], list[dict[str, Any]]], days: int = 7,
               plugin: str = "") -> dict[str, Any]:
        """`days` (7, 30 or 90) of usage to today (UTC), of everyone or of `plugin` alone (by day);
        `budgets(holders)` are the budgets of those that have one, with what each used."""
        from hermes_core._llm import reports

        days = days if days in USAGE_DAYS else 7
        today = dt.datetime.now(dt.timezone.utc).date()
        first = today - dt.timedelta(days=days - 1)
        settled = today - dt.timedelta(days=_SETTLED)  # the last day kept (every period has settled days)
        start = settled + dt.timedelta(days=1)  # the first day read at each view
        span, live = (first.isoformat(), settled.isoformat()), start.isoformat()
        per_day = self._once(("days", *span, plugin), lambda: reports.days(ledger, span[0], plugin or None,
                                                                            until=span[1]))
        recent = reports.day_rows(ledger, live)  # the days read at each view, in one statement
        per_day = per_day + _added([(day, tokens, cost, requests) for who, day, tokens, cost, requests in recent
                                    if (who == plugin if plugin else reports.counted_once(who))], [])
        holders = _added(self._once(("holders", *span), lambda: reports.holders(ledger, span[0], until=span[1])),
                         [(who, tokens, cost, requests) for who, _, tokens, cost, requests in recent])
        since, split = _midnight(first), _midnight(start)
        by_model = self._once(("models", since, split), lambda: store.usage_by_day(since, split))
        by_model = by_model + store.usage_by_day(split)
        plugins = [row for row in holders if not row[0].startswith((_KEY, _CALLER)) and row[0] != _FLEET]
        top = _biggest(plugins)
        shown = [row[0] for row in top] + ([plugin] if plugin and plugin not in {row[0] for row in top} else [])
        keys = _biggest([row for row in holders if row[0].startswith(_KEY)])
        callers = _biggest([row for row in holders if row[0].startswith(_CALLER)])
        return {"days": days, "from": first.isoformat(), "to": today.isoformat(), "plugin": plugin or None,
                "all_days": [(first + dt.timedelta(days=n)).isoformat() for n in range(days)],
                "by_day": [{"day": day, "tokens": tokens, "cost_usd": round(cost, 6), "requests": requests}
                           for day, tokens, cost, requests in per_day],
                "by_plugin": [_row("plugin", row) for row in top], "plugins": len(plugins),
                "by_key": [_row("key", row, len(_KEY)) for row in keys],
                "by_caller": [_row("caller", row, len(_CALLER)) for row in callers],
                "callers": sum(1 for row in holders if row[0].startswith(_CALLER)),
                "budgets": budgets([*shown, *(row[0] for row in keys + callers)]), "by_model": by_model}


def _midnight(day: dt.date) -> float:
    return dt.datetime.combine(day, dt.time(), dt.timezone.utc).timestamp()


def _added(first: list[Row], second: list[Row]) -> list[Row]:
    """Two lists of totals (by holder, or by day) as one, summed by their first column."""
    sums: dict[str, list[Any]] = {}
    for who, tokens, cost, requests in [*first, *second]:
        total = sums.setdefault(who, [0, 0.0, 0])
        total[0], total[1], total[2] = total[0] + tokens, total[1] + cost, total[2] + requests
    return [(who, int(t[0]), float(t[1]), int(t[2])) for who, t in sorted(sums.items())]


def _biggest(rows: list[Row]) -> list[Row]:
    return sorted(rows, key=lambda row: (-row[1], row[0]))[:_TOP]


def _row(kind: str, row: Row, cut: int = 0) -> dict[str, Any]:
    who, tokens, cost, requests = row
    holder = {"holder": who} if cut else {}
    return {kind: who[cut:], **holder, "tokens": tokens, "cost_usd": round(cost, 6), "requests": requests}
