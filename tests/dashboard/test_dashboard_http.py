"""`hermes dashboard` over HTTP on 127.0.0.1: the session token on loopback, the login through a
plugin's auth provider, CSRF on every action, the rate limit, the audit log, and every page."""

from __future__ import annotations

import datetime as dt
import json
import os
from typing import Any
import subprocess
from pathlib import Path

import pytest

from hermes_core import load_config, spending_as
from hermes_core.testing import Reply, ScriptedServer
from tests.fleet.conftest import pg_cluster, pg_url  # noqa: F401 - the usage pages on PostgreSQL too
from tests.helpers import HERMES, hermes, llm_config, make_folder_plugin, plugin_ctx, write_config
from tests.helpers.dashboard import PASSWORD, Browser, DashboardProcess, header, team_login_plugin

PAGES = ["/", "/plugins", "/sessions", "/cron", "/usage", "/keys", "/mcp", "/skills", "/hooks"]


@pytest.fixture
def gated(home: Path) -> Browser:
    """A dashboard on loopback with `--login`, the fixture provider plugin enabled."""
    team_login_plugin(home)
    write_config(home, "plugins:\n  enabled: [team_login]\n")
    process = DashboardProcess("--login")
    browser = Browser(process.root)
    browser.process = process  # type: ignore[attr-defined]
    yield browser  # type: ignore[misc]
    process.kill()


def log_in(browser: Browser) -> None:
    status, answer = browser.json("/auth/password-login", method="POST",
                                  body={"provider": "team", "username": "ann", "password": PASSWORD})
    assert status == 200, answer


def test_on_loopback_the_printed_url_carries_the_token_that_every_page_needs(home: Path) -> None:
    with DashboardProcess() as process:
        assert process.token and process.lines[0].startswith(f"{process.root}/?token={process.token} ")
        browser = Browser(process.root)
        assert browser.request("/plugins")[0] == 401
        assert browser.request("/plugins", html=True)[0] == 303  # a browser is sent to the login page
        assert browser.request("/?token=wrong")[0] == 401
        status, headers, _ = browser.request(f"/plugins?token={process.token}")
        assert status == 303 and header(headers, "location") == "/plugins"
        set_cookie = header(headers, "set-cookie")
        assert "HttpOnly" in set_cookie and "SameSite=Lax" in set_cookie and "Secure" not in set_cookie
        for path in PAGES:
            status, _, text = browser.request(path, html=True)
            assert status == 200 and "<h1>" in text, path
            twin = "/status.json" if path == "/" else f"{path}.json"
            assert browser.json(twin)[0] == 200, twin
        # Hermes' header works without the cookie
        plain = Browser(process.root)
        status, data = plain.json("/status.json", headers={"X-Hermes-Session-Token": process.token})
        assert status == 200 and data["plugins"] and "version" in data and data["attention"] == []
        assert process.token not in browser.request("/", html=True)[2]  # never rendered


def test_another_address_without_an_auth_provider_refuses_to_start_saying_how(home: Path) -> None:
    for args in (["--host", "0.0.0.0"], ["--login"]):
        done = subprocess.run([str(HERMES), "dashboard", "--port", "0", "--no-open", *args], capture_output=True,
                              text=True, timeout=60)
        assert done.returncode == 1, done
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and "register_dashboard_auth_provider" in lines[0], lines


def test_a_password_login_through_a_plugins_provider_opens_every_page(gated: Browser, home: Path) -> None:
    status, headers, _ = gated.request("/cron", html=True)
    assert status == 303 and header(headers, "location") == "/login?next=%2Fcron"
    status, _, text = gated.request("/login?next=/cron", html=True)
    assert status == 200 and "Team login" in text and 'type="password"' in text
    assert gated.json("/api/auth/providers") == (200, {"providers": [
        {"name": "team", "display_name": "Team login", "supports_password": True, "supports_session": True}]})
    status, answer = gated.json("/auth/password-login", method="POST",
                                body={"provider": "team", "username": "ann", "password": "wrong"})
    assert status == 401 and answer == {"error": "wrong user name or password"}
    log_in(gated)
    cookies = [c for c in gated.set_cookies if c.startswith("hermes_session_at=")]
    assert cookies and "HttpOnly" in cookies[-1] and "SameSite=Lax" in cookies[-1]
    for path in PAGES:
        status, _, text = gated.request(path, html=True)
        assert status == 200 and "Ann" in text, path
    assert gated.json("/api/auth/me")[1]["identity"] == "team:ann"
    csrf = gated.csrf()
    assert gated.json("/auth/logout", method="POST", body={}, headers={"X-CSRF-Token": csrf})[0] == 200
    assert gated.request("/plugins")[0] == 401
    audit = (home / "logs" / "dashboard.log").read_text(encoding="utf-8")
    assert "login refused user=ann" in audit and "login ok user=team:ann" in audit and "logout user=team:ann" in audit
    assert PASSWORD not in audit and "wrong" not in audit


def test_a_provider_that_is_not_one_is_a_warning_and_the_others_still_log_in(gated: Browser) -> None:
    process: DashboardProcess = gated.process  # type: ignore[attr-defined]
    assert any("is not a DashboardAuthProvider" in line for line in process.lines)
    log_in(gated)


def test_a_redirect_login_and_a_refresh_of_an_expired_access_cookie(gated: Browser) -> None:
    status, headers, _ = gated.request("/auth/login?provider=team&next=/cron")
    assert status == 302
    location = header(headers, "location")
    assert location.startswith(gated.root + "/auth/callback?code=good")
    assert gated.cookies["hermes_session_pkce"] == "verifier-1"
    status, headers, _ = gated.request(location.removeprefix(gated.root))
    assert status == 303 and header(headers, "location") == "/cron"
    assert "hermes_session_pkce" not in gated.cookies
    assert gated.json("/api/auth/me")[1]["identity"] == "team:bob"
    gated.cookies["hermes_session_at"] = "expired"  # the provider knows it no more: the refresh cookie renews it
    status, data = gated.json("/api/auth/me")
    assert status == 200 and data["identity"] == "team:bob" and gated.cookies["hermes_session_at"] != "expired"
    gated.cookies.pop("hermes_session_at")
    gated.cookies["hermes_session_rt"] = "not-a-refresh-token"
    assert gated.request("/api/auth/me")[0] == 401
    assert gated.request("/auth/callback?code=bad&state=s1")[0] == 400  # no login under way


def test_a_providers_declared_callback_is_public_and_every_other_plugin_path_is_not(gated: Browser) -> None:
    assert gated.request("/api/plugins/team_login/hello")[0] == 401
    assert gated.request("/api/plugins/team_login/callback")[0] == 401  # the plugin's own answer: no identity
    status, headers, _ = gated.request("/api/plugins/team_login/callback?next=/skills",
                                       headers={"X-Proxy-User": "carol"})
    assert status == 303 and header(headers, "location") == "/skills"
    assert gated.json("/api/auth/me")[1]["identity"] == "team:carol"
    assert gated.json("/api/plugins/team_login/hello") == (200, {"message": "hello from team_login"})
    status, _, text = gated.request("/p/team_login", html=True)
    assert status == 200 and 'data-plugin-root="team_login"' in text and "/dashboard-plugins/team_login/index.js" in text
    assert gated.request("/dashboard-plugins/team_login/index.js")[0] == 200
    for hidden in ("plugin_api.py", "../__init__.py", "%2e%2e/__init__.py"):  # its code is not an asset
        assert gated.request(f"/dashboard-plugins/team_login/{hidden}")[0] == 404, hidden
    assert gated.json("/api/plugins/team_login/echo", method="POST", body={"a": 1})[0] == 403  # no CSRF token
    csrf = gated.csrf()
    assert gated.json("/api/plugins/team_login/echo", method="POST", body={"a": 1},
                      headers={"X-CSRF-Token": csrf}) == (200, {"got": {"a": 1}})


def test_login_attempts_are_rate_limited(gated: Browser, home: Path) -> None:
    answers = [gated.json("/auth/password-login", method="POST", body={"username": "ann", "password": "no"})[0]
               for _ in range(11)]
    assert answers == [401] * 10 + [429]
    assert "login throttled" in (home / "logs" / "dashboard.log").read_text(encoding="utf-8")


def test_every_action_needs_the_session_and_its_csrf_token_and_does_what_the_cli_does(gated: Browser,
                                                                                      home: Path) -> None:
    make_folder_plugin(home / "plugins", "dice", "def register(ctx):\n    pass\n", "name: dice\n")
    assert gated.json("/actions/plugins/enable", method="POST", body={"plugin": "dice"})[0] == 401
    log_in(gated)
    assert gated.json("/actions/plugins/enable", method="POST", body={"plugin": "dice"})[0] == 403
    assert gated.json("/actions/plugins/enable", method="POST", body={"plugin": "dice"},
                      headers={"X-CSRF-Token": "0" * 64})[0] == 403
    csrf = gated.csrf("/plugins")
    # a third-party plugin without a consent: its consent page first, then "Grant and enable"
    status, answer = gated.json("/actions/plugins/enable", method="POST", body={"plugin": "dice"},
                                headers={"X-CSRF-Token": csrf})
    assert (status, answer["consent"]) == (409, "/plugins/consent?plugin=dice"), answer
    shown = gated.json("/plugins/consent.json?plugin=dice")[1]
    status, answer = gated.json("/actions/plugins/grant", method="POST", body={"plugin": "dice", "hash": shown["hash"]},
                                headers={"X-CSRF-Token": csrf})
    assert status == 200 and answer["message"].startswith("enabled dice"), answer
    hermes("plugins", "disable", "dice")
    status, answer = gated.json("/actions/plugins/enable", method="POST", body={"plugin": "dice"},
                                headers={"X-CSRF-Token": csrf})
    assert status == 200 and answer["message"].startswith("enabled dice"), answer  # consented: at once
    listed = {row["id"]: row for row in json.loads(hermes("plugins", "list", "--json").stdout)}
    assert listed["dice"]["enabled"] is True
    status, answer = gated.json("/actions/plugins/enable", method="POST", body={"plugin": "nope"},
                                headers={"X-CSRF-Token": csrf})
    assert status == 400 and "no plugin 'nope'" in answer["error"]
    status, answer = gated.json("/actions/plugins/disable", method="POST", body={"plugin": "dice"},
                                headers={"X-CSRF-Token": csrf})
    assert status == 200 and answer["message"].startswith("disabled dice")
    # a form post from a page (not JSON) is refused before the app sees it
    status, _, _ = gated.request("/actions/plugins/enable", method="POST",
                                 headers={"Content-Type": "application/x-www-form-urlencoded", "X-CSRF-Token": csrf})
    assert status == 415
    audit = (home / "logs" / "dashboard.log").read_text(encoding="utf-8")
    assert "csrf refused user=team:ann" in audit
    assert "action plugins.enable user=team:ann" in audit and "target=dice result=ok" in audit
    assert "target=nope result=refused" in audit


def test_a_managed_disabled_list_refuses_the_enable_button_only_for_the_plugins_it_lists(gated: Browser,
                                                                                         home: Path) -> None:
    make_folder_plugin(home / "plugins", "dice", "def register(ctx):\n    pass\n", "name: dice\n")
    make_folder_plugin(home / "plugins", "notes", "def register(ctx):\n    pass\n", "name: notes\n")
    managed_file = Path(os.environ["HERMES_MANAGED_DIR"]) / "config.yaml"
    managed_file.write_text("plugins:\n  disabled: [dice]\n", encoding="utf-8")
    log_in(gated)
    csrf = gated.csrf("/plugins")
    status, answer = gated.json("/actions/plugins/enable", method="POST", body={"plugin": "dice"},
                                headers={"X-CSRF-Token": csrf})
    assert status == 400 and "consent" not in answer, answer  # refused before its consent page
    assert "cannot enable dice: plugins.disabled" in answer["error"] and str(managed_file) in answer["error"]
    before = (home / "config.yaml").read_text()
    shown = gated.json("/plugins/consent.json?plugin=dice")[1]
    status, answer = gated.json("/actions/plugins/grant", method="POST", body={"plugin": "dice", "hash": shown["hash"]},
                                headers={"X-CSRF-Token": csrf})
    assert status == 400 and "cannot enable dice" in answer["error"], answer
    assert (home / "config.yaml").read_text() == before  # nothing granted to a plugin that stays disabled
    status, answer = gated.json("/actions/plugins/enable", method="POST", body={"plugin": "notes"},
                                headers={"X-CSRF-Token": csrf})
    assert (status, answer["consent"]) == (409, "/plugins/consent?plugin=notes"), answer  # as without a managed file
    assert load_config(home).string_list("plugins.enabled") == ["team_login"]


SWAP = '''
import os
from pathlib import Path

(Path(os.environ["HERMES_HOME"]) / "swap-imported-by").write_text(str(os.getpid()))


def register(ctx):
    ctx.register_hook("pre_tool_call", lambda **kw: None)
    ctx.register_tool("web_search", "web", {"name": "web_search", "parameters": {}}, lambda args, **kw: "[]")
'''


def test_enabling_a_plugin_shows_its_consent_page_first_and_grant_and_enable_records_it(gated: Browser,
                                                                                        home: Path) -> None:
    make_folder_plugin(home / "plugins", "swap", SWAP, "name: swap\ncapabilities: [tools.override]\n")
    log_in(gated)
    csrf = gated.csrf("/plugins")
    status, answer = gated.json("/actions/plugins/enable", method="POST", body={"plugin": "swap"},
                                headers={"X-CSRF-Token": csrf})
    assert status == 409 and answer["consent"] == "/plugins/consent?plugin=swap", answer
    assert "swap" not in load_config(home).get("plugins.enabled")
    # the page: the same lines the CLI shows, from a dry run in a process of its own (never the dashboard's)
    status, _, page = gated.request("/plugins/consent?plugin=swap", html=True)
    assert status == 200 and "Grant and enable" in page and 'data-action="/actions/plugins/grant"' in page
    assert "hooks: pre_tool_call (can block or change any tool call)" in page and "tools: web_search" in page
    assert "asks for tools.override: " in page and "(not granted)" in page
    assert int((home / "swap-imported-by").read_text()) != gated.process.process.pid  # type: ignore[attr-defined]
    shown = gated.json("/plugins/consent.json?plugin=swap")[1]
    assert shown["grants"] == ["tools.override"] and any("tools: web_search" in line for line in shown["lines"])
    # "Grant and enable" needs the CSRF token and the capability set the page showed
    grant = {"plugin": "swap", "hash": shown["hash"]}
    assert gated.json("/actions/plugins/grant", method="POST", body=grant)[0] == 403
    status, answer = gated.json("/actions/plugins/grant", method="POST", body={**grant, "hash": "0" * 64},
                                headers={"X-CSRF-Token": csrf})
    assert status == 400 and "reload it and answer again" in answer["error"]
    status, answer = gated.json("/actions/plugins/grant", method="POST", body=grant, headers={"X-CSRF-Token": csrf})
    assert status == 200 and answer == {"message": "granted tools.override to swap; enabled swap (each host loads it "
                                                   "at its next start)", "location": "/plugins"}
    entry = load_config(home).get("plugins.entries")["swap"]
    assert entry["granted_capabilities"] == ["tools.override"] and entry["capabilities_consent"]["hash"] == shown["hash"]
    # the consent is the CLI's too: enabled again at once, without a terminal
    hermes("plugins", "disable", "swap")
    assert hermes("plugins", "enable", "swap").stdout.strip() == "enabled swap"
    audit = (home / "logs" / "dashboard.log").read_text(encoding="utf-8")
    assert "target=swap result=needs-consent" in audit and "action plugins.grant user=team:ann" in audit


def test_grant_and_enable_grants_nothing_declined_before_for_the_same_capabilities(gated: Browser,
                                                                                   home: Path) -> None:
    make_folder_plugin(home / "plugins", "swap", SWAP, "name: swap\ncapabilities: [tools.override]\n")
    log_in(gated)
    declined = gated.json("/plugins/consent.json?plugin=swap")[1]
    from ruamel.yaml import YAML

    config = YAML(typ="safe").load((home / "config.yaml").read_text(encoding="utf-8"))
    config["plugins"].setdefault("entries", {})["swap"] = {  # asked at a terminal before, and said no
        "capabilities_consent": {"hash": declined["hash"], "granted_at": "earlier"}}
    with (home / "config.yaml").open("w", encoding="utf-8") as out:
        YAML(typ="safe").dump(config, out)
    shown = gated.json("/plugins/consent.json?plugin=swap")[1]
    assert shown["grants"] == []  # the page says only the consent is recorded
    status, answer = gated.json("/actions/plugins/grant", method="POST", body={"plugin": "swap", "hash": shown["hash"]},
                                headers={"X-CSRF-Token": gated.csrf("/plugins")})
    assert status == 200 and "granted" not in answer["message"], answer
    assert not load_config(home).get("plugins.entries")["swap"].get("granted_capabilities")


def test_sessions_list_search_and_open_with_no_secret_shown(home: Path) -> None:
    from hermes_core.agent import SessionStore

    store = SessionStore(home)
    secret = "sk-" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6"
    store.start("s-one", "model-a")
    store.append("s-one", {"role": "user", "content": "what is the tidal range at Saint-Malo"})
    store.append("s-one", {"role": "assistant", "content": f"about 13 metres; my key is {secret}"})
    store.usage("s-one", "custom", "model-a", 120, 30, 0.002)
    store.start("s-two", "model-b")
    store.append("s-two", {"role": "user", "content": "hello"})
    store.close()
    with DashboardProcess() as process:
        browser = Browser(process.root)
        browser.request(f"/?token={process.token}")
        status, data = browser.json("/sessions.json")
        assert status == 200 and data["total"] == 2 and {s["id"] for s in data["sessions"]} == {"s-one", "s-two"}
        status, data = browser.json("/sessions.json?q=tidal")
        assert [hit["session_id"] for hit in data["hits"]] == ["s-one"]
        status, _, text = browser.request("/sessions?q=tidal", html=True)
        assert 'href="/sessions/s-one"' in text
        status, _, text = browser.request("/sessions/s-one", html=True)
        assert status == 200 and "Saint-Malo" in text and "13 metres" in text and secret not in text
        status, _, text = browser.request("/sessions/s-one.json")
        assert status == 200 and "13 metres" in text and secret not in text
        assert browser.request("/sessions/nope", html=True)[0] == 404
        status, data = browser.json("/usage.json")
        today = dt.datetime.now(dt.timezone.utc).date().isoformat()
        assert {"day": today, "model": "model-a", "input_tokens": 120, "output_tokens": 30, "cost": 0.002} \
            in data["by_model"]


def test_cron_jobs_pause_resume_from_the_page_as_hermes_cron_does(home: Path) -> None:
    added = hermes("cron", "add", "every 2h", "summarise the news", "--name", "news")
    assert added.returncode == 0, added.stderr
    job = json.loads(hermes("cron", "list", "--json").stdout)[0]
    with DashboardProcess() as process:
        browser = Browser(process.root)
        browser.request(f"/?token={process.token}")
        status, _, text = browser.request("/cron", html=True)
        assert status == 200 and f'data-job="{job["id"]}"' in text and "news" in text
        csrf = browser.csrf("/cron")
        status, answer = browser.json("/actions/cron/pause", method="POST", body={"job": "news"},
                                      headers={"X-CSRF-Token": csrf})
        assert status == 200 and answer["message"].startswith("paused"), answer
        assert json.loads(hermes("cron", "list", "--json").stdout)[0]["state"] == "paused"
        assert [j["state"] for j in browser.json("/cron.json")[1]] == ["paused"]
        status, answer = browser.json("/actions/cron/resume", method="POST", body={"job": job["id"]},
                                      headers={"X-CSRF-Token": csrf})
        assert status == 200 and json.loads(hermes("cron", "list", "--json").stdout)[0]["state"] == "scheduled"
        status, answer = browser.json("/actions/cron/pause", method="POST", body={"job": "nope"},
                                      headers={"X-CSRF-Token": csrf})
        assert status == 400 and answer["error"]


def test_api_keys_show_names_and_scopes_never_a_secret(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_config(home, "api_server:\n  keys:\n    reporting:\n      key_env: REPORTING_KEY\n"
                       "      endpoints: [models, chat]\n")
    monkeypatch.setenv("REPORTING_KEY", "rk-secret-value-0123456789abcdef")
    monkeypatch.setenv("API_SERVER_KEY", "full-secret-value-0123456789abcdef")
    with DashboardProcess() as process:
        browser = Browser(process.root)
        browser.request(f"/?token={process.token}")
        status, rows = browser.json("/keys.json")
        assert status == 200
        assert [(r["name"], r["secret"]) for r in rows] == [("API_SERVER_KEY", "set"), ("reporting", "set")]
        assert rows[1]["scopes"] == ["models", "chat"]
        for path in ("/keys", "/keys.json", "/", "/status.json"):
            text = browser.request(path, html=True)[2]
            assert "secret-value" not in text, path


def test_usage_per_day_from_the_ledger_with_each_budget(home: Path, llm_server: ScriptedServer) -> None:
    llm_config(home, llm_server.url, "  pricing:\n    scripted-model: {input: 1000, output: 1000}\nplugins:\n"
                                     "  entries:\n    probe:\n      llm_budget: {tokens_per_day: 5000}\n")
    llm_server.push(Reply("ok", usage={"prompt_tokens": 200, "completion_tokens": 200, "total_tokens": 400}))
    llm_server.push(Reply("ok", usage={"prompt_tokens": 100, "completion_tokens": 100, "total_tokens": 200}))
    llm = plugin_ctx(home).llm
    hi = [{"role": "user", "content": "hi"}]
    assert llm.complete(hi, max_tokens=65).text == "ok" and llm.complete(hi, max_tokens=65).text == "ok"
    today = dt.datetime.now(dt.timezone.utc).date().isoformat()
    with DashboardProcess() as process:
        browser = Browser(process.root)
        browser.request(f"/?token={process.token}")
        status, data = browser.json("/usage.json?days=30")
        assert status == 200 and data["days"] == 30 and len(data["all_days"]) == 30
        assert data["by_day"] == [{"day": today, "tokens": 600, "cost_usd": 0.6, "requests": 2}]
        assert data["by_plugin"] == [{"plugin": "probe", "tokens": 600, "cost_usd": 0.6, "requests": 2}]
        assert browser.json("/usage.json?plugin=nobody")[1]["by_day"] == []
        assert data["budgets"] == [{"plugin": "probe", "holder": "probe", "limits": {
            "tokens_per_day": {"limit": 5000.0, "used": 600, "percent": 12.0}}}]
        status, _, text = browser.request("/usage", html=True)
        assert status == 200 and f'data-day="{today}" data-value="600"' in text and "tokens_per_day 5000" in text
        assert "12%" in text


@pytest.fixture(params=["sqlite", "postgresql"])
def state_url(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str | None:
    """None (the home's SQLite files) or a fresh PostgreSQL database's URL, as HERMES_STATE_URL."""
    if request.param == "sqlite":
        monkeypatch.delenv("HERMES_STATE_URL", raising=False)
        return None
    found = str(request.getfixturevalue("pg_url"))
    monkeypatch.setenv("HERMES_STATE_URL", found)
    return found


def test_usage_by_api_key_and_caller_counts_each_call_once_in_the_totals(home: Path, llm_server: ScriptedServer,
                                                                         monkeypatch: pytest.MonkeyPatch,
                                                                         state_url: str | None) -> None:
    llm_config(home, llm_server.url, "  pricing:\n    scripted-model: {input: 1000, output: 1000}\n"
                                     "plugins:\n  llm_budget: {tokens_per_day: 5000}\n"
                                     "budgets:\n  caller: {tokens_per_day: 4000}\n  fleet: {tokens_per_day: 9000}\n")
    for tokens in (50, 400, 200, 100):
        llm_server.push(Reply("ok", usage={"prompt_tokens": tokens // 2, "completion_tokens": tokens // 2,
                                           "total_tokens": tokens}))
    llm = plugin_ctx(home).llm
    hi = [{"role": "user", "content": "hi"}]
    long_ago = dt.datetime.now(dt.timezone.utc) - dt.timedelta(days=10)  # a day the dashboard reads once
    monkeypatch.setenv("HERMES_LLM_BUDGET_NOW", str(long_ago.timestamp()))
    with spending_as(caller="telegram:bob"):
        llm.complete(hi, max_tokens=65)
    monkeypatch.delenv("HERMES_LLM_BUDGET_NOW")
    with spending_as(caller="api_server:alice"):
        llm.complete(hi, max_tokens=65)
        llm.complete(hi, max_tokens=65)
    with spending_as(caller="telegram:bob"):
        llm.complete(hi, max_tokens=65)
    today = dt.datetime.now(dt.timezone.utc).date().isoformat()
    with DashboardProcess() as process:
        browser = Browser(process.root)
        browser.request(f"/?token={process.token}")
        status, data = browser.json("/usage.json")
        assert status == 200
        # each call once: not again under its caller and the fleet
        assert data["by_day"] == [{"day": today, "tokens": 700, "cost_usd": 0.7, "requests": 3}]
        assert [(r["plugin"], r["tokens"]) for r in data["by_plugin"]] == [("probe", 700)] and data["plugins"] == 1
        assert [(r["caller"], r["holder"], r["tokens"], r["requests"]) for r in data["by_caller"]] == [
            ("api_server:alice", "caller:api_server:alice", 600, 2), ("telegram:bob", "caller:telegram:bob", 100, 1)]
        assert data["callers"] == 2 and data["by_key"] == []
        assert {b["holder"] for b in data["budgets"]} == {"probe", "caller:api_server:alice", "caller:telegram:bob"}
        text = browser.request("/usage", html=True)[2]
        assert "By API key and caller (2 caller(s))" in text and "caller:api_server:alice" in text
        for _ in range(2):  # the settled days read once, then kept: the same figures
            month = browser.json("/usage.json?days=30")[1]
            assert month["by_day"] == [{"day": long_ago.date().isoformat(), "tokens": 50, "cost_usd": 0.05,
                                        "requests": 1}, data["by_day"][0]]
            assert [(r["caller"], r["tokens"]) for r in month["by_caller"]] == [("api_server:alice", 600),
                                                                                ("telegram:bob", 150)]


def test_a_failed_plugin_is_on_the_status_and_plugins_pages_with_why(home: Path) -> None:
    make_folder_plugin(home / "plugins", "broken", "def register(ctx):\n    raise RuntimeError('no database here')\n",
                       "name: broken\n")
    write_config(home, "plugins:\n  enabled: [broken]\n")
    with DashboardProcess() as process:
        browser = Browser(process.root)
        browser.request(f"/?token={process.token}")
        status, data = browser.json("/status.json")
        assert status == 200 and data["plugins"]["failed"] == 1
        assert any(line.startswith("plugin broken failed:") and "no database here" in line for line in data["attention"])
        row = next(r for r in browser.json("/plugins.json")[1] if r["id"] == "broken")
        assert row["status"] == "failed" and "no database here" in row["error"]
        text = browser.request("/", html=True)[2]
        assert "Needs attention" in text and "no database here" in text


def test_run_now_runs_a_job_as_hermes_cron_run_does(home: Path, llm_server: ScriptedServer) -> None:
    llm_config(home, llm_server.url, "timezone: UTC\n")
    llm_server.always("Headlines.")
    assert hermes("cron", "add", "every 2h", "summarise the news", "--name", "news").returncode == 0
    with DashboardProcess() as process:
        browser = Browser(process.root)
        browser.request(f"/?token={process.token}")
        csrf = browser.csrf("/cron")
        status, answer = browser.json("/actions/cron/run", method="POST", body={"job": "news"},
                                      headers={"X-CSRF-Token": csrf})
        assert status == 200 and answer["message"].endswith("Headlines."), answer
        job = browser.json("/cron.json")[1][0]
        assert job["last_status"] == "ok" and job["last_run_at"]
    assert "summarise the news" in llm_server.requests[0].messages[-1]["content"]


def test_off_loopback_the_login_is_required_and_its_cookies_are_secure(home: Path) -> None:
    team_login_plugin(home)
    write_config(home, "plugins:\n  enabled: [team_login]\n")
    with DashboardProcess("--host", "0.0.0.0") as process:
        assert process.token is None
        browser = Browser(process.root.replace("0.0.0.0", "127.0.0.1"))
        assert browser.json("/api/status") == (200, {"auth_required": True, "auth_providers": ["team"]})
        assert browser.request("/plugins.json")[0] == 401
        log_in(browser)
        cookies = [c for c in browser.set_cookies if c.startswith(("hermes_session_at=", "hermes_session_rt="))]
        assert len(cookies) == 2 and all("Secure" in c and "HttpOnly" in c for c in cookies)


def test_an_auth_provider_plugin_loads_in_hosts_without_a_dashboard(home: Path) -> None:
    team_login_plugin(home)
    write_config(home, "plugins:\n  enabled: [team_login]\n")
    report = json.loads(hermes("plugins", "doctor", "--json").stdout)
    assert next(p for p in report["plugins"] if p["id"] == "team_login")["status"] == "ok"


def test_the_hook_calls_page_shows_what_hermes_plugins_hook_calls_does(home: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    make_folder_plugin(home / "plugins", "guard", "import json\n\ndef explode(tool_name):\n"
                       "    raise RuntimeError('audit log unavailable')\n\ndef register(ctx):\n"
                       "    ctx.register_tool('echo', 't', {'name': 'echo', 'parameters': {'type': 'object'}}, "
                       "lambda args, **kw: json.dumps(args))\n    ctx.register_hook('pre_tool_call', explode)\n",
                       "name: guard\n")
    write_config(home, "plugins:\n  enabled: [guard]\n")
    hermes("tools", "call", "echo", "{}", check=1)  # a pre_tool_call that fails blocks the call
    listed = json.loads(hermes("plugins", "hook-calls", "--json").stdout)
    with DashboardProcess() as process:
        browser = Browser(process.root)
        browser.request(f"/?token={process.token}")
        status, rows = browser.json("/hooks.json")
        assert status == 200 and rows == listed
        assert [(r["hook"], r["plugin"], r["callback"], r["outcome"]) for r in rows] == [
            ("pre_tool_call", "guard", "explode", "raised RuntimeError")]
        text = browser.request("/hooks", html=True)[2]
        assert "audit log unavailable" in text and "raised RuntimeError" in text


def test_a_token_route_lets_a_service_in_by_bearer_token_with_its_scope(gated: Browser) -> None:
    path = "/api/plugins/team_login/ingest"

    def post(token: str | None) -> tuple[int, Any]:
        return gated.json(path, method="POST", body={"n": 1},
                          headers={"Authorization": f"Bearer {token}"} if token else {})

    assert post("svc-ingest-token") == (200, {"principal": "svc-ingest", "scopes": ["ingest"], "got": {"n": 1}})
    assert post(None)[0] == 401 and post("not-a-token")[0] == 401
    status, answer = post("boom-7f3a9c")  # the provider failed, its error naming the token and a password
    assert status == 503 and "refused" in answer["error"], answer
    assert "boom-7f3a9c" not in answer["error"] and "hunter2" not in answer["error"]
    status, answer = post("svc-read-token")  # a token of another scope
    assert status == 403 and "ingest" in answer["error"]
    assert gated.json(path, method="GET")[0] == 401  # not a token route for GET: the gate's login
    assert gated.json("/api/plugins/team_login/echo", method="POST", body={},
                      headers={"Authorization": "Bearer svc-ingest-token"})[0] == 401  # nor another path
    log_in(gated)
    assert post(None)[0] == 401  # a login is no token (no allow_session_fallback)
    audit = (Path(os.environ["HERMES_HOME"]) / "logs" / "dashboard.log").read_text(encoding="utf-8")
    assert "token refused" in audit and "svc-ingest-token" not in audit


def test_on_loopback_a_hermes_page_s_session_token_header_stands_for_the_csrf_token(home: Path) -> None:
    team_login_plugin(home)
    write_config(home, "plugins:\n  enabled: [team_login]\n")
    with DashboardProcess() as process:
        browser = Browser(process.root)
        echo = "/api/plugins/team_login/echo"
        assert browser.json(echo, method="POST", body={"a": 1}, headers={"X-Hermes-Session-Token": process.token}) \
            == (200, {"got": {"a": 1}})
        assert browser.json(echo, method="POST", body={"a": 1}, headers={"X-Hermes-Session-Token": "wrong"})[0] == 401
        browser.request(f"/?token={process.token}")  # the cookie
        # a Hermes page's script that had no token to send: the cookie lets it in, and a change needs the CSRF token
        assert browser.json("/api/plugins/team_login/hello", headers={"X-Hermes-Session-Token": "undefined"})[0] == 200
        assert browser.json(echo, method="POST", body={}, headers={"X-Hermes-Session-Token": "undefined"})[0] == 403


def test_a_login_with_a_lone_surrogate_or_nested_past_the_parser_is_refused_in_words(gated: Browser,
                                                                                      home: Path) -> None:
    status, headers, text = gated.request("/auth/password-login", method="POST",
                                          body={"provider": "team", "username": "ann\ud800", "password": "x"})
    assert status == 401 and "wrong user name or password" in text, (status, text)
    import urllib.error
    import urllib.request

    deep = urllib.request.Request(gated.root + "/auth/password-login", data=b"[" * 100000, method="POST",
                                  headers={"Content-Type": "application/json"})
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(deep, timeout=60)
    with refused.value as error:
        assert error.code in (400, 401), error.code
    process: DashboardProcess = gated.process  # type: ignore[attr-defined]
    log_in(gated)  # and it goes on serving
    audit = (home / "logs" / "dashboard.log").read_text(encoding="utf-8")
    assert "login refused user=ann\ufffd" in audit, audit
    assert not [line for line in process.lines if "Traceback" in line or "Logging error" in line], process.lines
