"""What the ledger counted over a period, for the dashboard's usage pages: each day's settled
totals, each holder's, and the last day a holder made a request. Read along the totals table's
primary key (who, period): one statement however many days and holders the ledger keeps."""

from __future__ import annotations

from .ledger import Ledger

__all__ = ["days", "holders", "last_day"]


def days(ledger: Ledger, since: str, who: str | None = None) -> list[tuple[str, int, float, int]]:
    """The settled totals of each day from `since` (`YYYY-MM-DD`, in each budget's time zone) on, of
    everyone together or of `who`: (day, tokens, cost, requests), by day."""
    return _period_totals(ledger, since, who, "t.period")


def holders(ledger: Ledger, since: str) -> list[tuple[str, int, float, int]]:
    """Each holder's settled totals over the days from `since` on: (who, tokens, cost, requests), by who."""
    return _period_totals(ledger, since, None, "t.who")


def _period_totals(ledger: Ledger, since: str, who: str | None, by: str) -> list[tuple[str, int, float, int]]:
    # Each holder's days are one range of the primary key (who, period), and the holders are walked
    # along it too (a recursive walk from one holder to the next).
    totals = ledger.totals
    walk = ("SELECT ? AS w" if who is not None else
            f"WITH RECURSIVE holders(w) AS (SELECT min(who) FROM {totals} UNION ALL "
            f"SELECT (SELECT min(who) FROM {totals} WHERE who > w) FROM holders WHERE w IS NOT NULL) "
            "SELECT w FROM holders WHERE w IS NOT NULL")
    with ledger._reading() as db:
        if db is None:
            return []
        rows = db.execute(
            f"SELECT {by}, sum(t.tokens), sum(t.cost), sum(t.requests) FROM ({walk}) AS h "
            f"JOIN {totals} AS t ON t.who = h.w AND t.period >= ? AND length(t.period) = 10 "
            f"GROUP BY {by} ORDER BY {by}", (*((who,) if who is not None else ()), since)).fetchall()
    return [(str(r[0]), int(r[1]), float(r[2]), int(r[3])) for r in rows]


def last_day(ledger: Ledger, who: str) -> str | None:
    """The last day `who` made a request the ledger counted (None: none)."""
    with ledger._reading() as db:
        row = None if db is None else db.execute(
            f"SELECT max(period) FROM {ledger.totals} WHERE who = ? AND length(period) = 10 AND requests > 0",
            (who,)).fetchone()
    return str(row[0]) if row and row[0] is not None else None
