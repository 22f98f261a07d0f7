"""`hermes plugins hook-calls`: the slow and failing hook calls this home kept (the same list as the
dashboard's hook calls page): when, hook, plugin, callback, how long, how it ended and its error."""

from __future__ import annotations

import time

import click

from ._common import echo_json, echo_table


@click.command("hook-calls")
@click.option("--limit", type=click.IntRange(1, 1000), default=50, show_default=True, help="Show at most this many.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def hook_calls(limit: int, as_json: bool) -> None:
    """Slow and failing hook calls, the newest first (kept in $HERMES_HOME/logs/hook-calls.jsonl;
    slow: over HERMES_HOOK_SLOW_MS, 250 ms unless set)."""
    from .._hooks.kept import kept_hook_calls
    from .._paths import hermes_home

    rows = kept_hook_calls(hermes_home(), limit)
    if as_json:
        echo_json(rows)
        return
    if not rows:
        click.echo("no slow or failing hook calls kept")
        return
    echo_table(["when (UTC)", "hook", "plugin", "callback", "ms", "outcome", "error"],
               [[time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(float(r.get("at", 0)))), str(r.get("hook", "")),
                 str(r.get("plugin", "")), str(r.get("callback", "")), f"{float(r.get('ms', 0)):,.1f}",
                 str(r.get("outcome", "")), str(r.get("error", ""))[:120]] for r in rows])
