"""`hermes plugins usage`: what each plugin's `ctx.llm` spent in the period, against its LLM budget."""

from __future__ import annotations

from typing import Any

import click

from ._common import echo_json, echo_table

_LIMITS = {"day": ("tokens_per_day", "cost_per_day"), "month": ("cost_per_month",)}


def _shown(name: str, value: float) -> str:
    return f"${value:.4f}" if name.startswith("cost") else f"{value:,.0f} tokens"


@click.command()
@click.argument("plugin_id", required=False)
@click.option("--period", type=click.Choice(["day", "month"]), default="day", show_default=True,
              help="Today or this month, in each plugin's budget time zone (UTC when it has none).")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list.")
def usage(plugin_id: str | None, period: str, as_json: bool) -> None:
    """What each plugin's ctx.llm used (tokens, cost, requests), against its LLM budget."""
    from .. import config_keys as keys
    from .._config.file import load_config
    from .._llm.budget import Ledger, budget_for
    from .._paths import hermes_home

    config = load_config()
    ledger = Ledger(hermes_home())
    if plugin_id:
        ids = [plugin_id]
    else:
        entries = config.read(keys.PLUGIN_ENTRIES)
        budgeted = [str(pid) for pid in entries if budget_for(config, str(pid)) is not None]
        ids = sorted({*ledger.plugins(), *budgeted})
    rows: list[dict[str, Any]] = []
    for pid in ids:
        budget = budget_for(config, pid)
        spent = ledger.spent(pid, budget.timezone if budget else "UTC", period)
        limits = {}
        for name, limit in budget.limits() if budget else []:
            if name in _LIMITS[period]:
                used = spent["tokens"] if name.startswith("tokens") else spent["cost"]
                limits[name] = {"limit": limit, "used": round(used, 6), "left": round(max(limit - used, 0), 6)}
        rows.append({"plugin": pid, "period": period, "tokens": spent["tokens"], "cost_usd": round(spent["cost"], 6),
                     "requests": spent["requests"], "budgets": limits})
    if as_json:
        echo_json(rows)
    elif not rows:
        click.echo("no plugin has called ctx.llm yet, and none has an LLM budget (plugins.entries.<id>.llm_budget)")
    else:
        echo_table(["plugin", "tokens", "cost", "requests", "budget"],
                   [[r["plugin"], f"{r['tokens']:,}", f"${r['cost_usd']:.4f}", str(r["requests"]),
                     "; ".join(f"{name} {_shown(name, b['used'])} of {_shown(name, b['limit'])} "
                               f"({b['used'] / b['limit'] * 100 if b['limit'] else 100:.0f}%)"
                               for name, b in r["budgets"].items()) or "-"] for r in rows])
