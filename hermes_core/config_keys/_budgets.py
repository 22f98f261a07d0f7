"""The keys of the LLM budgets: each holder's section (a plugin's, every plugin's, the host's, an
API key's, each caller's, the fleet's) and the ledger's own settings (`budgets.*`)."""

from __future__ import annotations

from typing import Any

from ._values import COUNT, MAPPING, POSITIVE, SECONDS, _EMPTY, Key, _count, _mapping, _one_of, _positive, _seconds

__all__ = ["BUDGET_NAMES", "BUDGETS_ON_STORE_ERROR", "BUDGETS_RESERVATION_TTL", "BUDGETS_UNPRICED_COST",
           "CALLER_BUDGET", "FLEET_BUDGET", "MODEL_BUDGET", "PLUGIN_LLM_BUDGET", "PLUGINS_LLM_BUDGET", "USD", "ZONE"]

def _money(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise ValueError
    return float(value)


def _zone(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError
    from zoneinfo import ZoneInfo

    try:
        ZoneInfo(value.strip())
    except (KeyError, ValueError):
        raise ValueError from None
    return value.strip()


USD, ZONE = "a number of US dollars, 0 or more", "an IANA time zone such as UTC or Europe/Paris"
ON_LIMIT = ("wait", "refuse")


def _budget(prefix: str, whose: str) -> tuple[Key[Any], ...]:
    """The keys of one budget section."""
    return (
        Key(prefix, MAPPING, _mapping, _EMPTY, f"{whose} LLM budget: tokens and cost per day and month, rate, "
                                               "concurrency"),
        Key(f"{prefix}.tokens_per_day", COUNT, _count, None, f"{whose}: tokens (prompt and answer) per calendar day"),
        Key(f"{prefix}.cost_per_day", USD, _money, None, f"{whose}: USD per calendar day (from model.pricing)"),
        Key(f"{prefix}.cost_per_month", USD, _money, None, f"{whose}: USD per calendar month"),
        Key(f"{prefix}.timezone", ZONE, _zone, None, f"{whose}: the time zone of its days and months (UTC)"),
        Key(f"{prefix}.requests_per_minute", COUNT, _count, None, f"{whose}: requests started in any 60 seconds"),
        Key(f"{prefix}.max_concurrent", POSITIVE, _positive, None, f"{whose}: requests running at once"),
        Key(f"{prefix}.on_limit", "wait or refuse", _one_of(*ON_LIMIT), None,
            f"{whose}: past requests_per_minute or max_concurrent, wait for room (within the call's time limit) "
            "or refuse at once (wait)"),
    )


BUDGET_NAMES = ("tokens_per_day", "cost_per_day", "cost_per_month", "timezone", "requests_per_minute",
                "max_concurrent", "on_limit")  # the keys of a budget section after its first, in order
PLUGIN_LLM_BUDGET = _budget("plugins.entries.*.llm_budget", "the plugin's")
PLUGINS_LLM_BUDGET = _budget("plugins.llm_budget", "every plugin's, unless its own says otherwise")
MODEL_BUDGET = _budget("model.budget", "the host's own calls (the agent, its side tasks)")
CALLER_BUDGET = _budget("budgets.caller", "each caller's (an API caller's X-Hermes-User, a gateway sender), every call "
                                          "made on their behalf")
FLEET_BUDGET = _budget("budgets.fleet", "every call's together (every plugin, the host, every key and caller)")
BUDGETS_RESERVATION_TTL = Key("budgets.reservation_ttl", SECONDS, _seconds, 60.0,
                              "seconds a call's reservation outlives its time limit: a host killed mid-call "
                              "holds its reservations no longer")
BUDGETS_ON_STORE_ERROR = Key("budgets.on_store_error", "closed or open", _one_of("closed", "open"), "closed",
                             "when the budgets ledger cannot be reached: closed refuses the call, open lets it "
                             "through and counts it once the ledger is back")
BUDGETS_UNPRICED_COST = Key("budgets.unpriced_cost", USD, _money, 0.05,
                            "USD a call reserves of a cost budget while it runs when its model has no price "
                            "(model.pricing): never nothing")

