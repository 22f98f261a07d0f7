"""`hermes plugins usage`: what each budget holder (a plugin's `ctx.llm`, the host's own calls, an
API key, a caller, the fleet) spent in the period against its LLM budget, what its running calls
hold reserved, and how many calls it refused; fleet-wide when the ledger is in the shared database."""

from __future__ import annotations

from typing import Any

import click

from ._common import echo_json, echo_table

_LIMITS = {"day": ("tokens_per_day", "cost_per_day"), "month": ("cost_per_month",)}


def _shown(name: str, value: float) -> str:
    return f"${value:.4f}" if name.startswith("cost") else f"{value:,.0f} tokens"


def usage_rows(config: Any, home: Any, who: list[str] | None, period: str) -> list[dict[str, Any]]:
    """A row per holder (plugins, `host`, `key:<name>`, `caller:<id>`, `fleet`): the period's tokens,
    cost and requests against its budgets, with its rate limits, what is reserved now and the
    refusals. `who` None: everyone with a call in the ledger or a budget in config."""
    from .. import config_keys as keys
    from .._llm.budget import FLEET, HOST, budget_for
    from .._llm.ledger import Ledger
    from .._store import state_url

    ledger = Ledger(home, url=state_url(home))
    counters = _counters(home, ledger)
    if who is None:
        budgeted = [str(pid) for pid in config.read(keys.PLUGIN_ENTRIES) if budget_for(config, str(pid)) is not None]
        who = sorted({*ledger.who(), *budgeted, *(name for name in (HOST, FLEET) if budget_for(config, name))})
    rows: list[dict[str, Any]] = []
    for pid in who:
        budget = budget_for(config, pid)
        spent = ledger.spent(pid, budget.timezone if budget else "UTC", period)
        if counters is not None:  # the running calls' reservations are in Redis
            tokens, cost = counters.held(pid, budget.timezone if budget else "UTC", period)
            for name, value in (("tokens", tokens), ("cost", cost)):
                spent[name] += value
                spent[f"reserved_{name}"] += value
        limits: dict[str, Any] = {}
        rates: dict[str, Any] = {}
        now_used = ledger.used(budget) if budget is not None and any(
            getattr(budget, name) is not None for name in ("requests_per_minute", "max_concurrent")) else {}
        for name, limit in budget.limits() if budget else []:
            if name in _LIMITS[period]:
                used = spent["tokens"] if name.startswith("tokens") else spent["cost"]
                limits[name] = {"limit": limit, "used": round(used, 6), "left": round(max(limit - used, 0), 6)}
            elif name in ("requests_per_minute", "max_concurrent"):
                rates[name] = {"limit": int(limit), "used": int(now_used[name])}
        if budget is not None and rates:
            rates["on_limit"] = budget.on_limit
        rows.append({"plugin": pid, "period": period, "tokens": spent["tokens"], "cost_usd": round(spent["cost"], 6),
                     "requests": spent["requests"], "budgets": limits, "rates": rates,
                     "reserved": {"tokens": spent["reserved_tokens"], "cost_usd": round(spent["reserved_cost"], 6)},
                     "refusals": spent["refusals"], "store": ledger.dialect})
    return rows


def _counters(home: Any, ledger: Any) -> Any:
    """Redis's counters over `ledger`, when `state.redis_url` names them and redis-py is installed."""
    from .._errors import ConfigError
    from .._llm.counters import Counters, redis_url

    try:
        url = redis_url(home)
        return Counters(url, ledger) if url else None
    except ConfigError:
        return None


@click.command()
@click.argument("plugin_id", required=False)
@click.option("--period", type=click.Choice(["day", "month"]), default="day", show_default=True,
              help="Today or this month, in each budget's time zone (UTC when it has none).")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list.")
def usage(plugin_id: str | None, period: str, as_json: bool) -> None:
    """What each budget holder used (tokens, cost, requests) against its LLM budget, what its running
    calls hold reserved and how many calls it refused: plugins' ctx.llm, `host` (the agent's own
    calls, model.budget), `key:<name>`, `caller:<id>` (budgets.caller) and `fleet` (budgets.fleet).
    With state.url, the whole fleet's."""
    from .._config.file import load_config
    from .._paths import hermes_home

    rows = usage_rows(load_config(), hermes_home(), [plugin_id] if plugin_id else None, period)
    if as_json:
        echo_json(rows)
    elif not rows:
        click.echo("no plugin has called ctx.llm yet, and none has an LLM budget (plugins.entries.<id>.llm_budget)")
    else:
        echo_table(["holder", "tokens", "cost", "requests", "reserved", "refused", "budget"],
                   [[r["plugin"], f"{r['tokens']:,}", f"${r['cost_usd']:.4f}", str(r["requests"]),
                     f"{r['reserved']['tokens']:,} / ${r['reserved']['cost_usd']:.4f}", str(r["refusals"]),
                     "; ".join([*(f"{name} {_shown(name, b['used'])} of {_shown(name, b['limit'])} "
                                  f"({b['used'] / b['limit'] * 100 if b['limit'] else 100:.0f}%)"
                                  for name, b in r["budgets"].items()),
                                *(f"{name} {b['used']} of {b['limit']} now" for name, b in r["rates"].items()
                                  if name != "on_limit")])
                     or "-"] for r in rows])
