"""The dashboard in a real browser: the distribution's Chromium, headless, driven by Playwright,
against `hermes dashboard --login` on loopback with the fixture auth provider plugin. Each page's
screenshot is kept in `.artifacts/dashboard/`."""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hermes_core.testing import Reply, ScriptedServer
from tests.helpers import hermes, llm_config, make_folder_plugin, plugin_ctx
from tests.helpers.dashboard import PASSWORD, DashboardProcess, team_login_plugin
from tests.helpers.servers import unavailable

AUDIT = """
import json


def write(tool_name):
    raise RuntimeError("the audit store is read-only")


def register(ctx):
    ctx.register_tool("echo", "t", {"name": "echo", "parameters": {"type": "object"}}, lambda args, **kw: json.dumps(args))
    ctx.register_hook("post_tool_call", write)
"""
ARTIFACTS = Path(__file__).resolve().parents[2] / ".artifacts" / "dashboard"
CHROMIUM = "/usr/bin/chromium"
DOCS_IMAGES = Path(__file__).resolve().parents[2] / "docs" / "images"
DOCS_SHOWS = {"plugins", "usage", "session", "cron", "hooks", "login"}


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    sync_api = pytest.importorskip("playwright.sync_api", reason="the test extra's playwright is not installed")
    executable = shutil.which("chromium") or (CHROMIUM if Path(CHROMIUM).exists() else None)
    if executable is None:
        unavailable("Chromium is not installed", "apt-get install chromium")
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, headless=True)
        yield browser
        browser.close()


@pytest.fixture
def dashboard(home: Path, llm_server: ScriptedServer) -> Iterator[DashboardProcess]:
    """A home with the fixture provider, a disabled plugin, a session, a cron job and a day of usage."""
    from hermes_core.agent import SessionStore

    team_login_plugin(home)
    make_folder_plugin(home / "plugins", "dice", "def register(ctx):\n    pass\n", "name: dice\n")
    make_folder_plugin(home / "plugins", "audit", AUDIT, "name: audit\n")
    llm_config(home, llm_server.url, "plugins:\n  enabled: [team_login, audit]\n  llm_budget: {tokens_per_day: 10000}\n")
    hermes("tools", "call", "echo", "{}")  # its post_tool_call fails: a hook call the hook calls page shows
    llm_server.push(Reply("ok", usage={"prompt_tokens": 300, "completion_tokens": 300, "total_tokens": 600}))
    assert plugin_ctx(home).llm.complete([{"role": "user", "content": "hi"}], max_tokens=65).text == "ok"
    store = SessionStore(home)
    store.start("s-tides", "scripted-model")
    store.append("s-tides", {"role": "user", "content": "what is the tidal range at Saint-Malo"})
    store.append("s-tides", {"role": "assistant", "content": "about thirteen metres at spring tides"})
    store.close()
    assert hermes("cron", "add", "every 2h", "summarise the news", "--name", "news").returncode == 0
    with DashboardProcess("--login") as process:
        yield process


def shot(page: Any, name: str) -> None:
    """The page's screenshot in `.artifacts/dashboard/`; with HERMES_DOCS_SCREENSHOTS=1 those docs/dashboard.md
    shows are written to docs/images/ too."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)
    if os.environ.get("HERMES_DOCS_SCREENSHOTS") == "1" and name in DOCS_SHOWS:
        shutil.copyfile(ARTIFACTS / f"{name}.png", DOCS_IMAGES / f"dashboard-{name}.png")


def test_an_operator_logs_in_and_uses_every_page(chromium: Any, dashboard: DashboardProcess, home: Path) -> None:
    context = chromium.new_context(viewport={"width": 1200, "height": 800})
    page = context.new_page()
    page.goto(dashboard.root + "/cron")
    assert page.url.startswith(dashboard.root + "/login?next=")
    shot(page, "login")
    page.fill('input[name="username"]', "ann")
    page.fill('input[name="password"]', PASSWORD)
    page.click("text=Log in")
    page.wait_for_url(dashboard.root + "/cron")
    assert "Ann" in page.inner_text("header")
    cookies = {c["name"]: c for c in context.cookies()}
    assert cookies["hermes_session_at"]["httpOnly"] and cookies["hermes_session_at"]["sameSite"] == "Lax"

    # pause a cron job: the page reloads with the job paused, as `hermes cron list` says too
    row = page.locator("tr", has=page.locator('[data-job]', has_text="")).filter(has_text="news")
    row.get_by_role("button", name="Pause").click()
    page.wait_for_selector("#flash:not([hidden])")
    assert "paused" in page.inner_text("#flash")
    assert page.locator("tr", has_text="news").locator("[data-state]").inner_text() == "paused"
    assert json.loads(hermes("cron", "list", "--json").stdout)[0]["state"] == "paused"
    shot(page, "cron")

    # enable a plugin
    page.goto(dashboard.root + "/plugins")
    page.locator("tr", has=page.locator('[data-plugin="dice"]')).get_by_role("button", name="Enable").click()
    page.wait_for_url("**/plugins/consent?plugin=dice")  # a third-party plugin: what it will be able to do first
    assert "registers nothing" in page.inner_text('[data-consent="dice"]')
    shot(page, "consent")
    page.get_by_role("button", name="Grant and enable").click()
    page.wait_for_url("**/plugins")
    page.wait_for_selector("#flash:not([hidden])")
    assert "enabled dice" in page.inner_text("#flash")
    assert page.locator("tr", has=page.locator('[data-plugin="dice"]')).get_by_role("button", name="Disable").count() == 1
    listed = {row["id"]: row for row in json.loads(hermes("plugins", "list", "--json").stdout)}
    assert listed["dice"]["enabled"] is True
    shot(page, "plugins")

    # open a session from a search
    page.goto(dashboard.root + "/sessions")
    page.fill('input[name="q"]', "tidal")
    page.click("text=Search")
    page.click("text=s-tides")
    page.wait_for_url(dashboard.root + "/sessions/s-tides")
    assert "thirteen metres" in page.inner_text("main")
    shot(page, "session")

    # read the usage chart's figures
    page.goto(dashboard.root + "/usage")
    today = dt.datetime.now(dt.timezone.utc).date().isoformat()
    bar = page.locator(f'svg.chart rect[data-day="{today}"]').first
    assert bar.get_attribute("data-value") == "600" and float(bar.get_attribute("height") or 0) > 0
    shot(page, "usage")

    # the plugin's own page, drawn by its script from its backend router
    page.goto(dashboard.root + "/p/team_login")
    page.wait_for_function("document.querySelector('[data-plugin-root]').textContent.length > 0")
    assert page.inner_text("[data-plugin-root]") == "hello from team_login"

    for path, name in (("/", "status"), ("/sessions", "sessions"), ("/keys", "keys"), ("/mcp", "mcp"),
                       ("/skills", "skills"), ("/hooks", "hooks")):
        page.goto(dashboard.root + path)
        assert page.locator("h1").count() == 1
        shot(page, name)
    assert "the audit store is read-only" in page.inner_text("main")  # the hook calls page

    # a request with a wrong CSRF token is refused, with the session
    refused = page.evaluate("""() => fetch('/actions/plugins/disable', {method: 'POST',
        headers: {'Content-Type': 'application/json', 'X-CSRF-Token': 'forged'},
        body: JSON.stringify({plugin: 'dice'})}).then(r => r.status)""")
    assert refused == 403
    assert json.loads(hermes("plugins", "list", "--json").stdout)[-1] is not None
    assert {row["id"]: row for row in json.loads(hermes("plugins", "list", "--json").stdout)}["dice"]["enabled"]

    # and without a session nothing is shown
    stranger = chromium.new_context()
    other = stranger.new_page()
    other.goto(dashboard.root + "/plugins")
    assert other.url.startswith(dashboard.root + "/login")
    assert other.evaluate("() => fetch('/plugins.json').then(r => r.status)") == 401
    stranger.close()

    # log out
    page.goto(dashboard.root + "/")
    page.click("text=Log out")
    page.wait_for_timeout(500)
    page.goto(dashboard.root + "/")
    assert page.url.startswith(dashboard.root + "/login")
    context.close()
    audit = (home / "logs" / "dashboard.log").read_text(encoding="utf-8")
    assert "action cron.pause user=team:ann" in audit and "action plugins.enable user=team:ann" in audit
