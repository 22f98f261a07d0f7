"""What each page shows, as data (the JSON twin of every page), read through the APIs the CLI's
commands read: discovery and `doctor()` (`hermes plugins list|doctor`), the session store
(`hermes sessions`), the cron jobs (`hermes cron list`), the LLM ledger (`hermes plugins usage`),
`mcp.status()` (`hermes mcp list`), the skill library (`hermes skills list`) and config.yaml's
`api_server.keys`. No secret is ever in what these return: a key's secret is "set" or "not set".
"""

from __future__ import annotations

import datetime as dt
import os
import threading
import time
from pathlib import Path
from typing import Any

from hermes_core import PluginManager, __version__, discover, load_config, redact_secrets
from hermes_core import config_keys as keys

from .usage import UsageReports

__all__ = ["Reader"]

_COUNTED = 10_000  # a search's matches counted at most ("10,000+")


class Reader:
    """The pages' data over the dashboard's loaded manager (its plugins, config and home)."""

    def __init__(self, manager: PluginManager) -> None:
        self.manager = manager
        self.home: Path = manager.home
        self._store: Any = None
        self._report: Any = None
        self._lock = threading.Lock()
        self._usage = UsageReports()

    @property
    def store(self) -> Any:
        with self._lock:
            if self._store is None:
                from hermes_core.agent import SessionStore
                from hermes_core.hosting import state_url

                self._store = SessionStore(self.home, url=state_url(self.home))
            return self._store

    def close(self) -> None:
        if self._store is not None:
            self._store.close()

    def doctor(self) -> Any:
        with self._lock:
            if self._report is None:
                self._report = self.manager.doctor()
            return self._report

    # -- pages -----------------------------------------------------------------------------------

    def status(self) -> dict[str, Any]:
        from hermes_core.hosting import Hosts, state_url

        report = self.doctor()
        try:
            hosts = Hosts(self.home, url=state_url(self.home))
            try:
                running = [h for h in hosts.listing(within=120) if h["alive"]][:50]
            finally:
                hosts.close()
        except Exception as exc:  # noqa: BLE001 - the status page shows what it cannot read
            running, report.problems = [], [*report.problems, f"hosts: {exc}"]
        counts: dict[str, int] = {}
        attention = []
        for row in report.plugins:
            counts[row["status"]] = counts.get(row["status"], 0) + 1
            if row["status"] in ("failed", "incompatible"):
                attention.append(f"plugin {row['id']} {row['status']}: {row['error']}")
        try:
            jobs = self.cron()
        except Exception as exc:  # noqa: BLE001 - the status page shows what it cannot read
            jobs, attention = [], [*attention, f"cron jobs: {exc}"]
        attention += [f"cron job {j['id']} ({j['name']}): its last run failed: {j['last_error'] or j['last_status']}"
                      for j in jobs if j["last_status"] not in (None, "ok")]
        attention += [f"cron job {j['id']} ({j['name']}) is skipped: {j['problem']}" for j in jobs if j["problem"]]
        return {"version": __version__, "home": str(self.home), "hosts": running, "plugins": counts,
                "attention": [redact_secrets(line) for line in attention],
                "problems": [redact_secrets(p) for p in report.problems],
                "warnings": [redact_secrets(w) for w in report.warnings]}

    def plugins(self) -> list[dict[str, Any]]:
        found = discover(home=self.home)
        config = load_config(self.home)  # as it is now: enabled since this dashboard started shows so
        loaded = {row["id"]: row for row in self.doctor().plugins}
        rows = []
        for spec in found.plugins:
            enabled, reason = spec.enablement(config)
            row = loaded.get(spec.id, {})
            registered = row.get("registered", {})
            rows.append({"id": spec.id, "kind": spec.kind, "version": spec.version, "source": spec.source,
                         "description": spec.description, "enabled": enabled, "reason": reason,
                         "status": row.get("status") or ("loads at the next start" if enabled else "disabled"),
                         "error": redact_secrets(row.get("error") or spec.error or "") or None,
                         "tools": list(registered.get("tools", ())), "hooks": list(registered.get("hooks", ())),
                         "registered": {k: list(v) for k, v in registered.items()}})
        return rows

    def sessions(self, query: str = "", limit: int = 50, offset: int = 0) -> dict[str, Any]:
        if query:
            total = self.store.count(query, at_most=_COUNTED + 1)
            return {"query": query, "hits": self.store.search(query, limit), "total": min(total, _COUNTED),
                    "more": total > _COUNTED}
        return {"query": "", "sessions": self.store.sessions(limit, offset=offset), "total": self.store.count(),
                "offset": offset, "limit": limit}

    def session(self, session_id: str) -> dict[str, Any] | None:
        found: dict[str, Any] | None = self.store.show(session_id)
        return found

    def cron(self) -> list[dict[str, Any]]:
        from hermes_core.cron import now, open_jobs
        from hermes_core.cron.checks import job_problem, one_line

        moment = now()
        rows = []
        for job in open_jobs(self.home).read():
            rows.append({"id": str(job.get("id", "")), "name": str(job.get("name", "")),
                         "schedule": str(job.get("schedule_display", "")), "state": str(job.get("state", "scheduled")),
                         "enabled": job.get("enabled", True), "next_run_at": job.get("next_run_at"),
                         "last_run_at": job.get("last_run_at"), "last_status": job.get("last_status"),
                         "last_error": redact_secrets(one_line(job.get("last_error")) or "") or None,
                         "problem": job_problem(job, moment)})
        return rows

    def usage(self, days: int = 7, plugin: str = "") -> dict[str, Any]:
        """The period's ledger totals per day (everyone's, or `plugin`'s), per plugin, API key and
        caller (the biggest), each shown holder's budget, and the agent's tokens per day by model."""
        from hermes_core._llm.ledger import Ledger
        from hermes_core.hosting import state_url

        ledger = Ledger(self.home, url=state_url(self.home))  # the fleet's, when the state is shared
        try:
            return self._usage.report(ledger, self.store, lambda whos: self._budgets(ledger, whos), days, plugin)
        finally:
            ledger.close()

    def warm(self) -> None:
        """Read the usage page's settled days of each period now (at start, on a thread of its own),
        so that the first view does not wait for them."""
        import logging

        from .usage import USAGE_DAYS

        for days in USAGE_DAYS:
            try:
                self.usage(days)
            except Exception as exc:  # noqa: BLE001 - the view reads them itself, and says what fails
                logging.getLogger("hermes.dashboard").debug("reading %d days of usage ahead failed: %s", days, exc)
                return

    def _budgets(self, ledger: Any, holders: list[str]) -> list[dict[str, Any]]:
        """Each of `holders`' budget that is set: each cap, and how much of it is used now (as `hermes
        plugins usage` counts it), read for all of them at once."""
        from hermes_core._llm import reports
        from hermes_core._llm.budget import budget_for

        found = [budget for budget in (budget_for(self.manager.config, who) for who in holders) if budget is not None]
        used = reports.used_now(ledger, [(budget.who, budget.timezone) for budget in found])
        rows = []
        for budget in found:
            limits: dict[str, Any] = {}
            for name, limit in budget.limits():
                if name.startswith(("tokens", "cost")):
                    spent = used[budget.who]["month" if name.endswith("month") else "day"]
                    amount = spent[0] if name.startswith("tokens") else round(spent[1], 6)
                    limits[name] = {"limit": limit, "used": amount,
                                    "percent": round(amount / limit * 100, 1) if limit else 100.0}
                else:
                    limits[name] = {"limit": limit}
            rows.append({"plugin": budget.who, "holder": budget.who, "limits": limits})
        return rows

    def keys(self) -> list[dict[str, Any]]:
        config = self.manager.config
        rows = [{"name": "API_SERVER_KEY", "scopes": ["every endpoint"], "secret": "set" if
                 os.environ.get("API_SERVER_KEY") else "not set", "last_used": self._last_used("API_SERVER_KEY")}]
        for name in config.read(keys.API_SERVER_KEYS):
            name = str(name)
            variable = config.read(keys.API_KEY_ENV, name) or ""
            endpoints: list[str] = config.read(keys.API_KEY_ENDPOINTS, name)
            tools: list[str] = config.read(keys.API_KEY_TOOLS, name)
            plugins: list[str] = config.read(keys.API_KEY_PLUGINS, name)
            rows.append({"name": name, "scopes": list(endpoints), "tools": list(tools), "plugins": list(plugins),
                         "key_env": variable,
                         "secret": "set" if variable and os.environ.get(variable) else "not set",
                         "last_used": self._last_used(f"key:{name}")})
        return rows

    def _last_used(self, holder: str) -> str | None:
        """The last day the ledger counted a model request of `holder` (a key with a budget)."""
        from hermes_core._llm import reports
        from hermes_core._llm.ledger import Ledger
        from hermes_core.hosting import state_url

        ledger = Ledger(self.home, url=state_url(self.home))
        try:
            return reports.last_day(ledger, holder)
        finally:
            ledger.close()

    def mcp(self) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = self.manager.mcp.status()
        return [{**row, "detail": redact_secrets(str(row.get("detail", ""))),
                 "reason": redact_secrets(str(row.get("reason") or "")), "needs_login": row["state"] == "needs login"}
                for row in rows]

    def hook_calls(self) -> list[dict[str, Any]]:
        """The slow and failing hook calls the home kept (`hermes plugins hook-calls`)."""
        from hermes_core._hooks.kept import kept_hook_calls

        return kept_hook_calls(self.home, 200)

    def skills(self) -> list[dict[str, Any]]:
        entries: list[dict[str, Any]] = self.manager.skill_library("").entries()
        return entries


def when(value: Any) -> str:
    """A stored time (seconds, or ISO 8601) as `YYYY-MM-DD HH:MM` UTC; `-` for none."""
    if value in (None, ""):
        return "-"
    if isinstance(value, (int, float)):
        return time.strftime("%Y-%m-%d %H:%M", time.gmtime(value))
    try:
        moment = dt.datetime.fromisoformat(str(value))
    except ValueError:
        return str(value)
    if moment.tzinfo is not None:
        moment = moment.astimezone(dt.timezone.utc)
    return moment.strftime("%Y-%m-%d %H:%M")
