"""For the dashboard's tests: `hermes dashboard` as a subprocess, HTTP requests with cookies kept
by hand (no client-side magic), and the fixture auth provider plugin `team_login`."""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
from http.cookies import SimpleCookie
from pathlib import Path
from typing import Any

from tests.helpers import make_folder_plugin
from tests.helpers.chat import HermesProcess

PASSWORD = "correct horse battery"

TEAM_LOGIN = '''
import secrets
import time

import hmac

from hermes_cli.dashboard_auth import (DashboardAuthProvider, InvalidCodeError, InvalidCredentialsError, LoginStart,
                                       RefreshExpiredError, Session, TokenPrincipal)

SERVICE_TOKENS = {"svc-ingest-token": ("ingest",), "svc-read-token": ("read",)}

USERS = {"ann": "correct horse battery"}
SESSIONS = {}
REFRESH = {}


class Team(DashboardAuthProvider):
    """A password provider; a redirect login whose "identity provider" answers at once; and a
    proxy login at its own public callback (`/api/plugins/team_login/callback`)."""

    name = "team"
    display_name = "Team login"
    supports_password = True
    supports_token = True
    public_paths = ("/api/plugins/team_login/callback",)

    def mint(self, user):
        session = Session(user_id=user, email=user + "@example.test", display_name=user.title(), org_id="",
                          provider=self.name, expires_at=int(time.time()) + 900,
                          access_token=secrets.token_urlsafe(16), refresh_token=secrets.token_urlsafe(16))
        SESSIONS[session.access_token] = session
        REFRESH[session.refresh_token] = user
        return session

    def start_login(self, *, redirect_uri):
        return LoginStart(redirect_url=redirect_uri + "?code=good&state=s1",
                          cookie_payload={"hermes_session_pkce": "verifier-1"})

    def complete_login(self, *, code, state, code_verifier, redirect_uri):
        if code != "good" or code_verifier != "verifier-1" or not redirect_uri.endswith("/auth/callback"):
            raise InvalidCodeError("bad code")
        return self.mint("bob")

    def verify_session(self, *, access_token):
        return SESSIONS.get(access_token)

    def refresh_session(self, *, refresh_token):
        user = REFRESH.pop(refresh_token, None)
        if user is None:
            raise RefreshExpiredError("not ours")
        return self.mint(user)

    def revoke_session(self, *, refresh_token):
        REFRESH.pop(refresh_token, None)

    def verify_token(self, *, token):
        if token.startswith("boom-"):  # a provider whose error repeats what it was handed
            raise RuntimeError(f"the directory refused {token} at https://svc:hunter2@directory.example/")
        for known, scopes in SERVICE_TOKENS.items():
            if hmac.compare_digest(token, known):
                return TokenPrincipal(principal="svc-" + scopes[0], provider=self.name, scopes=scopes)
        return None

    def complete_password_login(self, *, username, password):
        if USERS.get(username) != password:
            raise InvalidCredentialsError("no")
        return self.mint(username)


def register(ctx):
    ctx.register_dashboard_auth_provider(Team())
    ctx.register_dashboard_auth_provider(object())  # not a provider: a warning, ignored
'''

PLUGIN_API = '''
from starlette.responses import JSONResponse, RedirectResponse
from starlette.routing import Route

from hermes_cli.dashboard_auth import list_providers
from hermes_cli.dashboard_auth.cookies import detect_https, set_session_cookies
from hermes_cli.dashboard_auth.token_auth import register_token_route

register_token_route("/api/plugins/team_login/ingest", methods=["POST"], required_scope="ingest")


async def hello(request):
    return JSONResponse({"message": "hello from team_login"})


async def callback(request):
    user = request.headers.get("x-proxy-user")
    if not user:
        return JSONResponse({"error": "no proxy identity"}, status_code=401)
    provider = next(p for p in list_providers() if p.name == "team")
    session = provider.mint(user)
    response = RedirectResponse(request.query_params.get("next", "/"), status_code=303)
    set_session_cookies(response, access_token=session.access_token, refresh_token=session.refresh_token,
                        access_token_expires_in=900, use_https=detect_https(request))
    return response


async def echo(request):
    return JSONResponse({"got": (await request.json())})


async def ingest(request):
    principal = request.state.token_principal
    return JSONResponse({"principal": principal.principal, "scopes": list(principal.scopes),
                         "got": (await request.json())})


router = [Route("/hello", hello), Route("/callback", callback), Route("/echo", echo, methods=["POST"]),
          Route("/ingest", ingest, methods=["POST"])]
'''

INDEX_JS = '''
window.__HERMES_PLUGINS__.register("team_login", function (root, sdk) {
  sdk.fetchJSON("/api/plugins/team_login/hello").then(function (data) {
    root.textContent = data.message;
  });
});
'''


def team_login_plugin(home: Path) -> Path:
    """The fixture auth provider plugin, with a dashboard page and backend router."""
    folder = make_folder_plugin(home / "plugins", "team_login", TEAM_LOGIN, "name: team_login\n")
    (folder / "dashboard").mkdir()
    (folder / "dashboard" / "manifest.json").write_text(json.dumps(
        {"name": "team_login", "label": "Team", "entry": "index.js", "tab": {"path": "/team"}}), encoding="utf-8")
    (folder / "dashboard" / "plugin_api.py").write_text(PLUGIN_API, encoding="utf-8")
    (folder / "dashboard" / "index.js").write_text(INDEX_JS, encoding="utf-8")
    return folder


class DashboardProcess(HermesProcess):
    """`hermes dashboard --port 0 --no-open ARGS`: `url` (with `?token=` on loopback), `root`, `token`."""

    command = ("dashboard",)

    def __init__(self, *args: str, env: dict[str, str] | None = None) -> None:
        super().__init__("--port", "0", "--no-open", *args, env=env)
        first = self.wait_for(r"^http://|^hermes:.*error")
        match = re.match(r"(http://[^/ ]+)/(\?token=(\S+))? ", first)
        assert match, self.lines
        self.root, self.token = match.group(1), match.group(3)


class Browser:
    """Cookies kept as a browser keeps them (by name), sent with every request; answers as
    (status, headers as a list, body text)."""

    def __init__(self, root: str) -> None:
        self.root = root
        self.cookies: dict[str, str] = {}
        self.set_cookies: list[str] = []

    def request(self, path: str, *, method: str = "GET", body: Any = None, headers: dict[str, str] | None = None,
                html: bool = False) -> tuple[int, list[tuple[str, str]], str]:
        data = json.dumps(body).encode() if body is not None else None
        sent = {**({"Content-Type": "application/json"} if data is not None else {}),
                **({"Accept": "text/html"} if html else {}), **(headers or {})}
        if self.cookies:
            sent["Cookie"] = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        request = urllib.request.Request(self.root + path, data=data, method=method, headers=sent)
        opener = urllib.request.build_opener(_NoRedirect)
        try:
            with opener.open(request, timeout=60) as response:
                status, answer, text = response.status, list(response.headers.items()), response.read().decode()
        except urllib.error.HTTPError as error:
            with error:
                status, answer, text = error.code, list(error.headers.items()), error.read().decode()
        for name, value in answer:
            if name.lower() == "set-cookie":
                self.set_cookies.append(value)
                parsed = SimpleCookie()
                parsed.load(value)
                for key, morsel in parsed.items():
                    if morsel["max-age"] == "0":
                        self.cookies.pop(key, None)
                    else:
                        self.cookies[key] = morsel.value
        return status, answer, text

    def json(self, path: str, **kwargs: Any) -> tuple[int, Any]:
        status, _, text = self.request(path, **kwargs)
        return status, json.loads(text) if text else None

    def csrf(self, path: str = "/") -> str:
        status, _, text = self.request(path, html=True)
        assert status == 200, (status, text[:300])
        match = re.search(r'<meta name="csrf-token" content="([0-9a-f]+)">', text)
        assert match, text[:500]
        return match.group(1)


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


def header(headers: list[tuple[str, str]], name: str) -> str:
    return next((value for key, value in headers if key.lower() == name), "")
