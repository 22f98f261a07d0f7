"""`hermes plugins doctor`'s warning about budgets nearly spent."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from .._config.config import Config
from .budget import AMOUNTS, HOST, budget_for, shown
from .holds import _periods, now
from .ledger import Ledger

__all__ = ["NEARLY_SPENT", "nearly_spent"]

NEARLY_SPENT = 0.8  # the share of an amount past which `hermes plugins doctor` warns


def nearly_spent(config: Config, home: Path, who: Iterable[str]) -> list[str]:
    """A warning for each budget amount of `who` (plugin ids, and `host`) past 80 % in its period;
    nothing is read when none of them has a budget or no call was ever recorded."""
    from .._store import state_url

    budgets = [budget for name in who if (budget := budget_for(config, name)) is not None]
    if not budgets:
        return []
    ledger = Ledger(home, url=state_url(home))
    if not ledger.exists():
        return []
    warnings = []
    try:
        for budget in budgets:
            used = ledger.used(budget)
            day_end, month_end = _periods(now(), budget.timezone)[2:]
            for name, limit in budget.limits():
                if name in AMOUNTS and limit > 0 and used[name] >= NEARLY_SPENT * limit:
                    whose = "the host's own calls have" if budget.who == HOST else f"plugin {budget.who!r} has"
                    warnings.append(
                        f"{whose} used {used[name] / limit:.0%} of the LLM budget {budget.where}.{name} "
                        f"({shown(name, used[name])} of {shown(name, limit)}; it resets at "
                        f"{month_end if name == 'cost_per_month' else day_end})")
    finally:
        ledger.close()
    return warnings
