"""What the ledger counted over a period, for the dashboard's usage pages: each day's settled
totals, each holder's, and the last day a holder made a request. Read along the totals table's
primary key (who, period): one statement however many days and holders the ledger keeps.

A call is counted under its own holder (a plugin, `host`, or `key:<name>` for the host's calls
on an API key) and, when they have budgets, also under its caller (`caller:<platform>:<user>`)
and `fleet`: everyone's totals add up the first kind only, each call once."""

from __future__ import annotations

from .budget import CALLER_HOLDER, FLEET
from .ledger import Ledger

__all__ = ["counted_once", "day_rows", "days", "holders", "last_day", "used_now"]


def days(ledger: Ledger, since: str, who: str | None = None, until: str = "9999-12-31"
         ) -> list[tuple[str, int, float, int]]:
    """The settled totals of each day from `since` to `until` (`YYYY-MM-DD`, in each budget's time
    zone), of everyone together (each call once) or of `who`: (day, tokens, cost, requests), by day."""
    return _period_totals(ledger, since, until, who, "t.period")


def holders(ledger: Ledger, since: str, until: str = "9999-12-31") -> list[tuple[str, int, float, int]]:
    """Each holder's settled totals over the days from `since` to `until`: (who, tokens, cost,
    requests), by who; callers and `fleet` too."""
    return _period_totals(ledger, since, until, None, "t.who", every=True)


def _period_totals(ledger: Ledger, since: str, until: str, who: str | None, by: str, every: bool = False
                   ) -> list[tuple[str, int, float, int]]:
    # Each holder's days are one range of the primary key (who, period), and the holders are walked
    # along it too (a recursive walk from one holder to the next).
    totals = ledger.totals
    once = "" if every else f" AND substr(w, 1, {len(CALLER_HOLDER)}) <> '{CALLER_HOLDER}' AND w <> '{FLEET}'"
    walk = ("SELECT ? AS w" if who is not None else
            f"WITH RECURSIVE holders(w) AS (SELECT min(who) FROM {totals} UNION ALL "
            f"SELECT (SELECT min(who) FROM {totals} WHERE who > w) FROM holders WHERE w IS NOT NULL) "
            f"SELECT w FROM holders WHERE w IS NOT NULL{once}")
    with ledger._reading() as db:
        if db is None:
            return []
        rows = db.execute(
            f"SELECT {by}, sum(t.tokens), sum(t.cost), sum(t.requests) FROM ({walk}) AS h "
            f"JOIN {totals} AS t ON t.who = h.w AND t.period >= ? AND t.period <= ? AND length(t.period) = 10 "
            f"GROUP BY {by} ORDER BY {by}", (*((who,) if who is not None else ()), since, until)).fetchall()
    return [(str(r[0]), int(r[1]), float(r[2]), int(r[3])) for r in rows]


def last_day(ledger: Ledger, who: str) -> str | None:
    """The last day `who` made a request the ledger counted (None: none)."""
    with ledger._reading() as db:
        row = None if db is None else db.execute(
            f"SELECT max(period) FROM {ledger.totals} WHERE who = ? AND length(period) = 10 AND requests > 0",
            (who,)).fetchone()
    return str(row[0]) if row and row[0] is not None else None


def day_rows(ledger: Ledger, since: str) -> list[tuple[str, str, int, float, int]]:
    """Every holder's settled totals of each day from `since` on: (who, day, tokens, cost, requests),
    for the last few days, which `days` and `holders` would each read again."""
    totals = ledger.totals
    with ledger._reading() as db:
        rows = [] if db is None else db.execute(
            f"WITH RECURSIVE holders(w) AS (SELECT min(who) FROM {totals} UNION ALL "
            f"SELECT (SELECT min(who) FROM {totals} WHERE who > w) FROM holders WHERE w IS NOT NULL) "
            f"SELECT t.who, t.period, t.tokens, t.cost, t.requests FROM holders AS h JOIN {totals} AS t "
            "ON t.who = h.w AND t.period >= ? AND length(t.period) = 10 ORDER BY t.who, t.period", (since,)).fetchall()
    return [(str(r[0]), str(r[1]), int(r[2]), float(r[3]), int(r[4])) for r in rows]


def counted_once(who: str) -> bool:
    """Whether `who`'s calls are in everyone's totals (not a caller's or the fleet's, counted twice)."""
    return not who.startswith(CALLER_HOLDER) and who != FLEET


def used_now(ledger: Ledger, holders: list[tuple[str, str]]) -> dict[str, dict[str, tuple[int, float]]]:
    """What each of `holders` ((who, time zone)) has used of its current day and month: {who: {"day":
    (tokens, cost), "month": (tokens, cost)}}, running calls' reservations counted, as `Ledger.spent`
    counts them, in two statements for all of them."""
    from .holds import _periods, now

    moment = now()
    periods = {who: _periods(moment, zone)[:2] for who, zone in holders}
    used = {who: {"day": (0, 0.0), "month": (0, 0.0)} for who in periods}
    if not periods:
        return used
    pairs = [(who, period) for who, both in periods.items() for period in both]
    values = ", ".join(["(?, ?)"] * len(pairs))
    names = ", ".join(["?"] * len(periods))
    with ledger._reading() as db:
        if db is None:
            return used
        settled = db.execute(f"SELECT t.who, t.period, t.tokens, t.cost FROM (VALUES {values}) AS v "
                             f"JOIN {ledger.totals} AS t ON t.who = v.column1 AND t.period = v.column2",
                             [item for pair in pairs for item in pair]).fetchall()
        running = db.execute(f"SELECT who, day, month, tokens, cost FROM {ledger.calls} "
                             f"WHERE who IN ({names}) AND expires > ?", (*periods, moment)).fetchall()
    for who, period, tokens, cost in settled:
        kind = "day" if period == periods[who][0] else "month"
        used[who][kind] = (used[who][kind][0] + int(tokens), used[who][kind][1] + float(cost))
    for who, day, month, tokens, cost in running:
        for kind, period in (("day", day), ("month", month)):
            if period == periods[who][0 if kind == "day" else 1]:
                used[who][kind] = (used[who][kind][0] + int(tokens), used[who][kind][1] + float(cost))
    return used
