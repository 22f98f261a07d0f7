"""The pages as HTML: the data `Reader` returns, in `templates/base.html` (string.Template: no
template engine to install), every value escaped and every text passed through `redact_secrets`."""

from __future__ import annotations

import json
from functools import lru_cache
from html import escape
from importlib.resources import files
from string import Template
from typing import Any
from urllib.parse import quote

from hermes_core import message_text, redact_secrets

from .data import when

__all__ = ["NAV", "page", "login_page", "status", "plugins", "sessions", "session", "cron", "usage", "keys", "mcp",
           "skills", "hook_calls", "plugin_page"]

NAV = (("/", "Status"), ("/plugins", "Plugins"), ("/sessions", "Sessions"), ("/cron", "Cron"), ("/usage", "Usage"),
       ("/keys", "API keys"), ("/mcp", "MCP"), ("/skills", "Skills"), ("/hooks", "Hook calls"))


@lru_cache(maxsize=None)
def _template(name: str) -> Template:
    return Template(files("hermes_core.dashboard").joinpath("templates").joinpath(name).read_text(encoding="utf-8"))


def _e(value: Any) -> str:
    return escape(redact_secrets(str(value)) if value is not None else "")


def page(title: str, body: str, *, here: str, csrf: str, who: str, logout: bool,
         extra_nav: tuple[tuple[str, str], ...] = (), head: str = "", scripts: str = "") -> str:
    nav = "".join(f'<a href="{escape(href)}"{" class=here" if href == here else ""}>{escape(label)}</a>'
                  for href, label in (*NAV, *extra_nav))
    out = ('<form class="inline" data-action="/auth/logout"><button type="submit">Log out</button></form>'
           if logout else "")
    return _template("base.html").substitute(title=escape(title), body=body, nav=nav, csrf=escape(csrf),
                                             who=escape(who), logout=out, head=head, scripts=scripts)


def login_page(providers: list[Any], next_path: str, message: str = "") -> str:
    parts = [f'<p class="bad">{escape(message)}</p>' if message else ""]
    if not providers:
        parts.append("<p>No auth provider is registered: a plugin adds one with "
                     "<code>ctx.register_dashboard_auth_provider(provider)</code>.</p>")
    for provider in providers:
        name = escape(provider.name)
        if provider.supports_password:
            parts.append(
                f'<form data-login data-next="{escape(next_path)}"><h2>{escape(provider.display_name)}</h2>'
                f'<input type="hidden" name="provider" value="{name}">'
                f'<label for="u-{name}">User</label><input id="u-{name}" name="username" autocomplete="username">'
                f'<label for="p-{name}">Password</label><input id="p-{name}" name="password" type="password" '
                f'autocomplete="current-password"><button type="submit">Log in</button></form>')
        elif provider.supports_session:
            parts.append(f'<p><a href="/auth/login?provider={quote(provider.name)}&amp;next={quote(next_path)}">'
                         f"Log in with {escape(provider.display_name)}</a></p>")
    return _template("login.html").substitute(body="\n".join(parts))


def _table(headers: list[str], rows: list[list[str]], empty: str) -> str:
    if not rows:
        return f'<p class="muted">{escape(empty)}</p>'
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{cell}</td>" for cell in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _button(action: str, field: str, value: str, label: str) -> str:
    return (f'<form class="inline" data-action="{escape(action)}"><input type="hidden" name="{escape(field)}" '
            f'value="{escape(value)}"><button type="submit">{escape(label)}</button></form>')


def status(data: dict[str, Any]) -> str:
    hosts = _table(["kind", "id", "machine", "pid", "since", "last beat"],
                   [[_e(h["kind"]), _e(h["id"]), _e(h["machine"]), _e(h["pid"]), _e(when(h["started"])),
                     _e(when(h["beat"]))] for h in data["hosts"]],
                   "no gateway, serve or cron host is running on this home")
    counts = ", ".join(f"{n} {s}" for s, n in sorted(data["plugins"].items())) or "none enabled"
    problems = "".join(f'<li class="bad">{_e(p)}</li>' for p in [*data["attention"], *data["problems"]])
    problems += "".join(f"<li>{_e(w)}</li>" for w in data["warnings"])
    return (f"<table><tbody><tr><th>version</th><td>{_e(data['version'])}</td></tr>"
            f"<tr><th>home</th><td>{_e(data['home'])}</td></tr>"
            f"<tr><th>plugins</th><td>{_e(counts)}</td></tr></tbody></table>"
            f"<h2>Hosts running</h2>{hosts}<h2>Needs attention</h2>"
            + (f"<ul>{problems}</ul>" if problems else '<p class="muted">none</p>'))


def plugins(rows: list[dict[str, Any]]) -> str:
    cells = []
    for r in rows:
        state = f'<span class="{"bad" if r["status"] in ("failed", "incompatible") else "ok" if r["status"] == "ok" else "muted"}">' \
                f'{_e(r["status"])}</span>'
        why = _e(r["error"]) if r["error"] else ""
        toggle = _button("/actions/plugins/disable" if r["enabled"] else "/actions/plugins/enable", "plugin", r["id"],
                         "Disable" if r["enabled"] else "Enable")
        cells.append([f'<span data-plugin="{escape(r["id"])}">{_e(r["id"])}</span>', _e(r["kind"]),
                      "yes" if r["enabled"] else "no", state + (f"<br><small>{why}</small>" if why else ""),
                      _e(", ".join(r["tools"])), _e(", ".join(r["hooks"])), toggle])
    return (_table(["plugin", "kind", "enabled", "status", "tools", "hooks", ""], cells, "no plugins were found")
            + '<p class="muted">Enabling or disabling changes config.yaml (as <code>hermes plugins enable|disable'
              "</code> does); each host loads the change at its next start.</p>")


def sessions(data: dict[str, Any]) -> str:
    query = data["query"]
    search = (f'<form method="get" action="/sessions"><input name="q" value="{escape(query)}" '
              'placeholder="search messages" aria-label="search"> <button type="submit">Search</button></form>')
    if query:
        rows = [[f'<a href="/sessions/{quote(h["session_id"], safe="")}">{_e(h["session_id"])}</a>', _e(h["seq"]),
                 _e(h["role"]), _e(" ".join(str(h["snippet"]).split()))] for h in data["hits"]]
        total = f"{data['total']:,}{'+' if data.get('more') else ''}"  # "10,000+": counted no further
        return search + f"<p>{total} match(es)</p>" + _table(["session", "seq", "role", "snippet"], rows,
                                                              f"nothing found for {query!r}")
    rows = [[f'<a href="/sessions/{quote(s["id"], safe="")}">{_e(s["id"])}</a>', _e(when(s["updated"])),
             _e(s["messages"]), _e(s["input_tokens"] + s["output_tokens"]), _e(s["model"]), _e(s["title"])]
            for s in data["sessions"]]
    offset, limit, total = data["offset"], data["limit"], data["total"]
    more = (f'<p><a href="/sessions?offset={offset + limit}">older</a></p>' if offset + limit < total else "")
    return (search + f"<p>{total} session(s)</p>"
            + _table(["id", "updated", "messages", "tokens", "model", "title"], rows,
                     "no sessions yet (start one: hermes run \"...\" or hermes chat)") + more)


def session(found: dict[str, Any]) -> str:
    head = (f"<p>{_e(found['model'])} · {len(found['messages'])} messages · started {_e(when(found['created']))}"
            f"{' · ' + _e(found['platform']) if found['platform'] else ''}</p>")
    messages = "".join(f'<div class="message"><span class="role">{_e(m.get("role"))}</span>'
                       f"<pre>{_e(message_text(m))}</pre></div>" for m in found["messages"])
    calls = _table(["tool", "arguments", "result"],
                   [[_e(c["name"]), f"<pre>{_e(c['arguments'])[:2000]}</pre>", f"<pre>{_e(c['result'])[:2000]}</pre>"]
                    for c in found["tool_calls"]], "no tool calls")
    return head + "<h2>Messages</h2>" + messages + "<h2>Tool calls</h2>" + calls


def cron(rows: list[dict[str, Any]]) -> str:
    cells = []
    for j in rows:
        paused = j["state"] == "paused"
        actions = (_button("/actions/cron/resume" if paused else "/actions/cron/pause", "job", j["id"],
                           "Resume" if paused else "Pause") + " " + _button("/actions/cron/run", "job", j["id"], "Run now"))
        last = f"{when(j['last_run_at'])} {j['last_status'] or ''}".strip()
        problem = f'<br><small class="bad">{_e(j["problem"])}</small>' if j["problem"] else ""
        error = f'<br><small class="bad">{_e(j["last_error"])}</small>' if j["last_error"] else ""
        cells.append([f'<span data-job="{escape(j["id"])}">{_e(j["id"])}</span>', _e(j["name"]), _e(j["schedule"]),
                      f'<span data-state>{_e(j["state"])}</span>{problem}', _e(when(j["next_run_at"])),
                      _e(last) + error, actions])
    return _table(["id", "name", "schedule", "state", "next run", "last run", ""], cells,
                  'no cron jobs (add one: hermes cron add "every monday 9am" "summarise the week")')


def _chart(days: list[str], totals: dict[str, int], label: str) -> str:
    width, height, pad = 640, 160, 24
    peak = max(totals.values(), default=0)
    top = peak or 1
    step = (width - 2 * pad) / max(len(days), 1)
    bars = []
    for index, day in enumerate(days):
        value = totals.get(day, 0)
        h = (height - 2 * pad) * value / top
        x, y = pad + index * step, height - pad - h
        bars.append(f'<rect x="{x:.1f}" y="{y:.1f}" width="{max(step - 2, 1):.1f}" height="{h:.1f}" '
                    f'data-day="{day}" data-value="{value}"><title>{day}: {value:,} {escape(label)}</title></rect>')
        if len(days) <= 31 or index % 7 == 0:
            bars.append(f'<text x="{x:.1f}" y="{height - 8}">{day[5:]}</text>')
    return (f'<svg class="chart" role="img" aria-label="{escape(label)} per day" viewBox="0 0 {width} {height}" '
            f'width="{width}" height="{height}"><text x="{pad}" y="14">max {peak:,} {escape(label)}</text>'
            + "".join(bars) + "</svg>")


def usage(data: dict[str, Any]) -> str:
    days, plugin = data["all_days"], data["plugin"]
    tokens = {row["day"]: row["tokens"] for row in data["by_day"]}
    model_tokens: dict[str, int] = {}
    for row in data["by_model"]:
        model_tokens[row["day"]] = model_tokens.get(row["day"], 0) + row["input_tokens"] + row["output_tokens"]
    keep = f"&amp;plugin={quote(plugin)}" if plugin else ""
    picker = " ".join(f'<a href="/usage?days={n}{keep}">{n} days</a>' for n in (7, 30, 90))
    whose = f"{escape(plugin)}'s" if plugin else "Plugins'"
    day_rows = [[_e(r["day"]), f"{r['tokens']:,}", f"${r['cost_usd']:.4f}", _e(r["requests"])]
                for r in reversed(data["by_day"])]
    plugin_rows = [[f'<a href="/usage?days={data["days"]}&amp;plugin={quote(r["plugin"])}">{_e(r["plugin"])}</a>',
                    f"{r['tokens']:,}", f"${r['cost_usd']:.4f}", _e(r["requests"])] for r in data["by_plugin"]]
    model_rows = [[_e(r["day"]), _e(r["model"]), f"{r['input_tokens']:,}", f"{r['output_tokens']:,}",
                   "-" if r["cost"] is None else f"${r['cost']:.4f}"] for r in data["by_model"]]
    callers = [[_e(r["holder"]), f"{r['tokens']:,}", f"${r['cost_usd']:.4f}", _e(r["requests"])]
               for r in (*data["by_key"], *data["by_caller"])]
    budgets = _table(["holder", "limit", "used now", "of the cap"],
                     [[_e(b["plugin"]), _e(f"{name} {v['limit']:g}"), _e(f"{v['used']:g}" if "used" in v else "-"),
                       (f'<span class="{"bad" if v["percent"] >= 90 else "ok"}">{v["percent"]:g}%</span>'
                        if "percent" in v else "-")]
                      for b in data["budgets"] for name, v in b["limits"].items()],
                     "no LLM budgets are set (plugins.entries.<id>.llm_budget)")
    shown = (f"the {len(data['by_plugin'])} biggest of {data['plugins']}" if data["plugins"] > len(data["by_plugin"])
             else f"{data['plugins']}")
    return (f"<p>{picker} · {data['from']} to {data['to']} (UTC)"
            + (' · <a href="/usage?days=' + str(data["days"]) + '">every plugin</a>' if plugin else "") + "</p>"
            + f"<h2>{whose} ctx.llm tokens per day</h2>"
            '<p class="muted">From the LLM ledger, which counts the calls of plugins with an LLM budget '
            "(<code>plugins.llm_budget</code> sets one for every plugin).</p>"
            + _chart(days, tokens, "tokens")
            + _table(["day", "tokens", "cost", "requests"], day_rows, "no ctx.llm calls in this period")
            + f"<h2>By plugin ({shown})</h2>"
            + _table(["plugin", "tokens", "cost", "requests"], plugin_rows, "no ctx.llm calls in this period")
            + f"<h2>By API key and caller ({data['callers']} caller(s))</h2>"
            '<p class="muted">The host\'s calls on a named API key count under <code>key:&lt;name&gt;</code>; '
            "every call of a caller (an API caller's <code>X-Hermes-User</code>, a gateway's sender) under "
            "<code>caller:&lt;platform&gt;:&lt;user&gt;</code> too, when callers have a budget "
            "(<code>budgets.caller</code>).</p>"
            + _table(["holder", "tokens", "cost", "requests"], callers, "no calls on an API key or of a caller")
            + "<h2>Budgets</h2>" + budgets
            + "<h2>Agent tokens per day by model (sessions)</h2>" + _chart(days, model_tokens, "tokens")
            + _table(["day", "model", "input", "output", "cost"], model_rows, "no agent turns in this period"))


def keys(rows: list[dict[str, Any]]) -> str:
    return (_table(["name", "scopes", "secret", "last use"],
                   [[_e(r["name"]), _e(", ".join(r["scopes"]) or "none"), _e(r["secret"]), _e(r["last_used"] or "-")]
                    for r in rows], "no keys")
            + '<p class="muted">Secrets are never shown; a named key keeps its secret in the environment variable '
              "its <code>key_env</code> names. Last use: the last day the ledger counted a model request of the key "
              "(keys with a budget).</p>")


def mcp(rows: list[dict[str, Any]]) -> str:
    return _table(["name", "transport", "state", "tools"],
                  [[_e(r["name"]), _e(r["transport"]),
                    (f'<span class="bad">needs login</span>: <code>hermes mcp login {_e(r["name"])}</code>'
                     if r["needs_login"] else _e(r["detail"])), _e(", ".join(r["tools"]) or "-")] for r in rows],
                  "no MCP servers are configured (mcp_servers: in config.yaml)")


def hook_calls(rows: list[dict[str, Any]]) -> str:
    return (_table(["when", "hook", "plugin", "callback", "ms", "outcome", "error"],
                   [[_e(when(r.get("at"))), _e(r.get("hook")), _e(r.get("plugin")), _e(r.get("callback")),
                     _e(f"{float(r.get('ms') or 0):,.1f}"),
                     f'<span class="{"ok" if r.get("outcome") == "slow" else "bad"}">{_e(r.get("outcome"))}</span>',
                     _e(r.get("error"))] for r in rows],
                   "no slow or failing hook calls kept")
            + '<p class="muted">A hook callback that raised, timed out or ran longer than '
              "<code>HERMES_HOOK_SLOW_MS</code> (250 ms unless set), the newest first, from "
              "<code>$HERMES_HOME/logs/hook-calls.jsonl</code>; <code>hermes plugins hook-calls</code> shows the "
              "same.</p>")


def skills(rows: list[dict[str, Any]]) -> str:
    return _table(["name", "category", "source", "status", "description"],
                  [[_e(r["name"]), _e(r["category"] or "-"), _e(r["plugin"] or r["source"]),
                    "enabled" if r["enabled"] else "disabled", _e(r["description"])] for r in rows],
                  "no skills (a skill is a folder with a SKILL.md under $HERMES_HOME/skills/<category>/<name>/)")


def plugin_page(name: str, entry: str | None, css: str | None) -> tuple[str, str, str]:
    """The body, head and scripts of a plugin's page: its root element, its CSS and its script."""
    head = f'<link rel="stylesheet" href="/dashboard-plugins/{quote(name)}/{quote(css)}">' if css else ""
    scripts = f'<script src="/dashboard-plugins/{quote(name)}/{quote(entry)}"></script>' if entry else ""
    return f'<div data-plugin-root="{escape(name)}"></div>', head, scripts


def as_json(data: Any) -> str:
    return json.dumps(data, default=str)
