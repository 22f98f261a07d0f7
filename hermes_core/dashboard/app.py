"""`Dashboard`: the operator's pages over a loaded `PluginManager`, as a Starlette app behind
the gate (`gate`), served on `hermes_core.hosting.serve_asgi` like the API server.

Every page has a JSON twin (`/plugins` and `/plugins.json`); every action is a POST with a JSON
body under `/actions/` and is also a CLI command (`actions`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from html import escape
from importlib.resources import files
from typing import Any
from urllib.parse import quote, unquote, urlencode

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from hermes_core import HermesError, PluginManager
from hermes_core._redact import redact_tree
from hermes_core.hosting import loads_sent

from . import actions, consent, pages
from .data import Reader
from .gate import LOGIN_PROVIDER_COOKIE, PKCE_COOKIE, Gate, Who
from .plugin_pages import PluginPage, plugin_pages
from .provider import InvalidCodeError, InvalidCredentialsError, ProviderError
from .registry import AuthProviders
from .security import Audit, RateLimit, cookie, expired_cookie
from .token_routes import check_token, token_route

__all__ = ["Dashboard", "DEFAULT_PORT"]

DEFAULT_PORT = 9119
NEXT_COOKIE = "hermes_login_next"
CHANGING = frozenset({"POST", "PUT", "PATCH", "DELETE"})
log = logging.getLogger("hermes.dashboard")

# page path → (title, the Reader's method, the renderer)
PAGES: dict[str, tuple[str, str, Callable[[Any], str]]] = {
    "/": ("Status", "status", pages.status), "/plugins": ("Plugins", "plugins", pages.plugins),
    "/cron": ("Cron", "cron", pages.cron), "/keys": ("API keys", "keys", pages.keys), "/mcp": ("MCP servers", "mcp", pages.mcp),
    "/skills": ("Skills", "skills", pages.skills),
    "/hooks": ("Hook calls", "hook_calls", pages.hook_calls),
}
ACTIONS: dict[str, tuple[str, Callable[..., str]]] = {
    "/actions/plugins/enable": ("plugin", actions.enable_plugin),
    "/actions/plugins/grant": ("plugin", actions.grant_and_enable),  # the consent page's "Grant and enable"
    "/actions/plugins/disable": ("plugin", actions.disable_plugin),
    "/actions/cron/pause": ("job", actions.pause_job), "/actions/cron/resume": ("job", actions.resume_job),
    "/actions/cron/run": ("job", actions.run_job),
}
ANSWERS = {"/actions/plugins/grant": "hash"}  # an action's second field: the capability set the page showed


class Dashboard:
    """The dashboard of `manager`'s home; `providers` decide who logs in unless `token` (loopback) is given."""

    def __init__(self, manager: PluginManager, providers: AuthProviders, *, token: str | None, secure: bool) -> None:
        self.manager = manager
        self.providers = providers
        self.gate = Gate(providers, token=token, secure=secure)
        self.reader = Reader(manager)
        self.audit = Audit(manager.home)
        self.logins = RateLimit(10, 60.0)
        self.pages, self.warnings = plugin_pages(manager)

    # -- the app ---------------------------------------------------------------------------------

    def app(self) -> Any:
        routes: list[Any] = [
            Route("/login", self._login_page, methods=["GET"]),
            Route("/auth/login", self._start_login, methods=["GET"]),
            Route("/auth/callback", self._callback, methods=["GET"]),
            Route("/auth/password-login", self._password_login, methods=["POST"]),
            Route("/auth/logout", self._logout, methods=["POST"]),
            Route("/api/auth/providers", self._providers, methods=["GET"]),
            Route("/api/auth/me", self._me, methods=["GET"]),
            Route("/api/status", self._api_status, methods=["GET"]),
            Route("/sessions", self._sessions, methods=["GET"]),
            Route("/sessions.json", self._sessions, methods=["GET"]),
            Route("/sessions/{session_id:path}", self._session, methods=["GET"]),
            Route("/usage", self._usage, methods=["GET"]),
            Route("/usage.json", self._usage, methods=["GET"]),
            *(Route(path, self._action, methods=["POST"]) for path in ACTIONS),
            *(Route(path, self._consent, methods=["GET"]) for path in ("/plugins/consent", "/plugins/consent.json")),
            Mount("/static", app=StaticFiles(directory=str(files("hermes_core.dashboard").joinpath("static")))),
        ]
        for path in PAGES:
            routes.append(Route(path, self._page, methods=["GET"]))
            routes.append(Route("/status.json" if path == "/" else f"{path}.json", self._page, methods=["GET"]))
        for plugin in self.pages:
            routes.append(Route(f"/p/{plugin.plugin_id}", self._plugin_page(plugin), methods=["GET"]))
            routes.append(Route(f"/dashboard-plugins/{plugin.plugin_id}/{{path:path}}", self._plugin_file(plugin),
                                methods=["GET"]))
            if plugin.router is not None:
                routes.append(Mount(f"/api/plugins/{plugin.plugin_id}", app=plugin.router))

        @contextlib.asynccontextmanager
        async def lifespan(app: Starlette) -> AsyncIterator[None]:
            import threading

            threading.Thread(target=self.reader.warm, name="hermes-dashboard-warm", daemon=True).start()
            try:
                yield
            finally:
                self.reader.close()

        return Gatekeeper(Starlette(routes=routes, lifespan=lifespan), self)

    # -- rendering -------------------------------------------------------------------------------

    def _html(self, request: Request, title: str, body: str, *, head: str = "", scripts: str = "",
              status: int = 200) -> HTMLResponse:
        who: Who = request.state.who
        extra = tuple((f"/p/{p.plugin_id}", p.label) for p in self.pages if p.label)
        text = pages.page(title, body, here=request.url.path, csrf=self.gate.csrf(who), who=who.name,
                          logout=self.gate.login_required, extra_nav=extra, head=head, scripts=scripts)
        return HTMLResponse(text, status_code=status, headers=_NO_STORE)

    async def _page(self, request: Request) -> Response:
        path = request.url.path
        wants_json = path.endswith(".json")
        key = "/" if path == "/status.json" else path.removesuffix(".json")
        title, method, render = PAGES[key]
        data = await asyncio.to_thread(getattr(self.reader, method))
        if wants_json:
            return _json(redact_tree(data))
        return self._html(request, title, render(data))

    async def _sessions(self, request: Request) -> Response:
        query = request.query_params.get("q", "").strip()
        offset = _int(request.query_params.get("offset"), 0)
        limit = min(max(_int(request.query_params.get("limit"), 50), 1), 500)
        data = await asyncio.to_thread(self.reader.sessions, query, limit, offset)
        if request.url.path.endswith(".json"):
            return _json(redact_tree(data))
        return self._html(request, "Sessions", pages.sessions(data))

    async def _session(self, request: Request) -> Response:
        ident = request.path_params["session_id"]
        wants_json = ident.endswith(".json")
        ident = ident.removesuffix(".json") if wants_json else ident
        found = await asyncio.to_thread(self.reader.session, ident)
        if found is None:
            message = f"no session {ident!r}; see `hermes sessions list`"
            if wants_json:
                return _json({"error": message}, 404)
            return self._html(request, "Session not found", f"<p>{escape(message)}</p>", status=404)
        if wants_json:
            return _json(redact_tree(found))
        return self._html(request, f"Session {ident}", pages.session(found))

    async def _usage(self, request: Request) -> Response:
        data = await asyncio.to_thread(self.reader.usage, _int(request.query_params.get("days"), 7),
                                       request.query_params.get("plugin", "").strip())
        if request.url.path.endswith(".json"):
            return _json(redact_tree(data))
        return self._html(request, "Usage", pages.usage(data))

    def _plugin_page(self, plugin: PluginPage) -> Callable[[Request], Awaitable[Response]]:
        async def show(request: Request) -> Response:
            body, head, scripts = pages.plugin_page(plugin.plugin_id, plugin.entry, plugin.css)
            return self._html(request, plugin.label or plugin.plugin_id, body, head=head, scripts=scripts)

        return show

    def _plugin_file(self, plugin: PluginPage) -> Callable[[Request], Awaitable[Response]]:
        """A plugin's page assets (scripts, styles, images, fonts): never its code or anything else."""
        async def serve(request: Request) -> Response:
            wanted = (plugin.folder / request.path_params["path"]).resolve()
            if plugin.folder.resolve() not in wanted.parents or wanted.suffix.lower() not in _ASSETS \
                    or not wanted.is_file():
                return _json({"error": "no such file"}, 404)
            return FileResponse(wanted)

        return serve

    # -- actions ---------------------------------------------------------------------------------

    async def _action(self, request: Request) -> Response:
        field, act = ACTIONS[request.url.path]
        who: Who = request.state.who
        body = await _body(request)
        target = body.get(field)
        name = request.url.path.removeprefix("/actions/").replace("/", ".")
        if not isinstance(target, str) or not target:
            return _json({"error": f"send {{\"{field}\": \"...\"}} as the JSON body"}, 400)
        answer = [str(body.get(ANSWERS[request.url.path], ""))] if request.url.path in ANSWERS else []
        try:
            message = await asyncio.to_thread(act, self.manager, target, *answer)
        except HermesError as exc:  # consent.ConsentNeeded: its page first, what the plugin will be able to do
            url = exc.url if isinstance(exc, consent.ConsentNeeded) else ""
            self.audit(f"action {name}", who=who.identity, client=_client(request), target=target,
                       result="needs-consent" if url else "refused")
            return _json({"error": str(exc)} | ({"consent": url} if url else {}), 409 if url else 400)
        self.audit(f"action {name}", who=who.identity, client=_client(request), target=target, result="ok")
        return _json({"message": message} | ({"location": "/plugins"} if answer else {}))

    async def _consent(self, request: Request) -> Response:
        """What a plugin will be able to do, before "Grant and enable" (its dry run: a process of its own)."""
        data = await asyncio.to_thread(consent.what_it_asks, self.manager, request.query_params.get("plugin", ""))
        if request.url.path.endswith(".json") or "error" in data:
            return _json(redact_tree(data), 404 if "error" in data else 200)
        return self._html(request, f"Enable {data['plugin']}", consent.render(data))

    # -- logging in and out ----------------------------------------------------------------------

    async def _login_page(self, request: Request) -> Response:
        if not self.gate.login_required:
            return HTMLResponse(pages.login_page([], "/", "This dashboard is on loopback: open the URL "
                                                 "`hermes dashboard` printed (it carries the session token)."),
                                status_code=401)
        shown = [p for p in self.providers.providers() if p.supports_session or p.supports_password]
        return HTMLResponse(pages.login_page(shown, _next(request.query_params.get("next"))), headers=_NO_STORE)

    async def _start_login(self, request: Request) -> Response:
        provider = self.providers.get(request.query_params.get("provider", ""))
        if provider is None or not self.gate.login_required:
            return _json({"error": "no such auth provider; see /api/auth/providers"}, 404)
        try:
            start = await asyncio.to_thread(provider.start_login, redirect_uri=_callback_url(request))
        except ProviderError as exc:
            return _json({"error": f"auth provider {provider.name!r} is unreachable: {exc}"}, 503)
        response = RedirectResponse(start.redirect_url, status_code=302)
        for value in self.gate.login_start_cookies(provider.name, dict(start.cookie_payload)):
            response.headers.append("set-cookie", value)
        response.headers.append("set-cookie", cookie(NEXT_COOKIE, quote(_next(request.query_params.get("next")),
                                                                         safe=""), secure=self.gate.secure, max_age=600))
        return response

    async def _callback(self, request: Request) -> Response:
        provider = self.providers.get(request.cookies.get(LOGIN_PROVIDER_COOKIE, ""))
        if provider is None or not self.gate.login_required:
            return _json({"error": "no login is under way; start again at /login"}, 400)
        params = request.query_params
        try:
            session = await asyncio.to_thread(
                provider.complete_login, code=params.get("code", ""), state=params.get("state", ""),
                code_verifier=unquote(request.cookies.get(PKCE_COOKIE, "")), redirect_uri=_callback_url(request))
        except InvalidCodeError:
            self.audit("login refused", client=_client(request), provider=provider.name)
            return _json({"error": "the login's code or state is not valid; start again at /login"}, 400)
        except ProviderError as exc:
            return _json({"error": f"auth provider {provider.name!r} is unreachable: {exc}"}, 503)
        self.audit("login ok", who=f"{session.provider}:{session.user_id}", client=_client(request),
                   provider=provider.name)
        response = RedirectResponse(_next(unquote(request.cookies.get(NEXT_COOKIE, ""))), status_code=303)
        for value in [*self.gate.session_cookies(session), expired_cookie(NEXT_COOKIE, secure=self.gate.secure)]:
            response.headers.append("set-cookie", value)
        return response

    async def _password_login(self, request: Request) -> Response:
        client = _client(request)
        if not self.logins.allow(client):
            self.audit("login throttled", client=client)
            return _json({"error": "too many login attempts; wait a minute"}, 429, {"Retry-After": "60"})
        body = await _body(request)
        provider = self.providers.get(str(body.get("provider", "")))
        if provider is None:
            provider = next((p for p in self.providers.providers() if p.supports_password), None)
        if provider is None or not provider.supports_password or not self.gate.login_required:
            return _json({"error": "no auth provider here takes a password"}, 404)
        user = str(body.get("username", ""))
        try:
            session = await asyncio.to_thread(provider.complete_password_login, username=user,
                                              password=str(body.get("password", "")))
        except InvalidCredentialsError:
            self.audit("login refused", who=user, client=client, provider=provider.name)
            return _json({"error": "wrong user name or password"}, 401)
        except ProviderError as exc:
            return _json({"error": f"auth provider {provider.name!r} is unreachable: {exc}"}, 503)
        self.audit("login ok", who=f"{session.provider}:{session.user_id}", client=client, provider=provider.name)
        response = _json({"user": session.display_name or session.user_id, "provider": session.provider})
        for value in self.gate.session_cookies(session):
            response.headers.append("set-cookie", value)
        return response

    async def _logout(self, request: Request) -> Response:
        who: Who = request.state.who
        refresh = unquote(request.cookies.get("hermes_session_rt", ""))
        provider = self.providers.get(who.provider)
        if refresh and provider is not None:
            with contextlib.suppress(Exception):  # best-effort, as the protocol says
                await asyncio.to_thread(provider.revoke_session, refresh_token=refresh)
        self.audit("logout", who=who.identity, client=_client(request))
        response = _json({"message": "logged out"})
        for value in self.gate.logout_cookies():
            response.headers.append("set-cookie", value)
        return response

    async def _providers(self, request: Request) -> Response:
        listed = [{"name": p.name, "display_name": p.display_name, "supports_password": p.supports_password,
                   "supports_session": p.supports_session} for p in self.providers.providers()]
        if self.gate.login_required and not listed:
            return _json({"error": "no dashboard auth provider is registered", "providers": []}, 503)
        return _json({"providers": listed})

    async def _me(self, request: Request) -> Response:
        who: Who = request.state.who
        return _json({"user": who.name, "identity": who.identity, "provider": who.provider})

    async def _api_status(self, request: Request) -> Response:
        return _json({"auth_required": self.gate.login_required,
                      "auth_providers": [p.name for p in self.providers.providers()]})


class Gatekeeper:
    """ASGI middleware: the gate (`gate.Gate`) in front of the app; sets `request.state.who`."""

    def __init__(self, app: Any, dashboard: Dashboard) -> None:
        self.app, self.dashboard, self.gate = app, dashboard, dashboard.gate

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        path, method = scope["path"], scope.get("method", "GET")
        if self.gate.public(path):
            await self.app(scope, receive, send)
            return
        route = token_route(path, method)
        if route is not None:
            checked = await asyncio.to_thread(check_token, route, request, self.dashboard.providers.providers())
            if checked.status is not None:
                self.dashboard.audit("token refused", who="-", client=_client(request), path=path,
                                     status=checked.status)
                await _json({"error": checked.message}, checked.status)(scope, receive, send)
                return
            if checked.principal is not None:
                principal: Any = checked.principal
                state = scope.setdefault("state", {})
                state["token_principal"] = principal
                state["who"] = Who(f"token:{principal.provider}:{principal.principal}", str(principal.principal),
                                   str(principal.provider))
                await self.app(scope, receive, send)
                return
        if self.gate.token is not None and method == "GET" and "token" in request.query_params:
            await self._token_visit(request, scope, receive, send)
            return
        try:
            who, cookies = await asyncio.to_thread(self.gate.identify, request.headers, dict(request.cookies))
        except ProviderError as exc:
            await _json({"error": f"an auth provider is unreachable: {exc}; try again"}, 503)(scope, receive, send)
            return
        if who is None:
            if scope["type"] == "websocket":
                await send({"type": "websocket.close", "code": 4401})
                return
            if method == "GET" and "text/html" in request.headers.get("accept", "") and not path.startswith("/api/"):
                target = "/login?" + urlencode({"next": path + (f"?{scope['query_string'].decode()}"
                                                                 if scope.get("query_string") else "")})
                await RedirectResponse(target, status_code=303)(scope, receive, send)
            else:
                await _json({"error": "log in first" if self.gate.login_required else
                             "send the session token (X-Hermes-Session-Token) that `hermes dashboard` printed"},
                            401)(scope, receive, send)
            return
        if method in CHANGING and not self.gate.csrf_ok(who, request.headers.get("x-csrf-token"), request.headers):
            self.dashboard.audit("csrf refused", who=who.identity, client=_client(request), path=path)
            await _json({"error": "the CSRF token is missing or wrong; reload the page and try again"},
                        403)(scope, receive, send)
            return
        scope.setdefault("state", {})["who"] = who
        if not cookies:
            await self.app(scope, receive, send)
            return

        async def with_cookies(message: Any) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []),
                                                  *((b"set-cookie", value.encode("latin-1")) for value in cookies)]}
            await send(message)

        await self.app(scope, receive, with_cookies)

    async def _token_visit(self, request: Request, scope: Any, receive: Any, send: Any) -> None:
        """`?token=` (the URL `hermes dashboard` printed): the cookie, and the same page without it."""
        from hermes_core.hosting import secret_matches

        if not secret_matches(request.query_params.get("token", ""), self.gate.token or ""):
            await _json({"error": "that session token is not this dashboard's; use the URL `hermes dashboard` "
                                  "printed"}, 401)(scope, receive, send)
            return
        rest = urlencode([(k, v) for k, v in request.query_params.multi_items() if k != "token"])
        response = RedirectResponse(request.url.path + (f"?{rest}" if rest else ""), status_code=303)
        response.headers.append("set-cookie", self.gate.token_cookie())
        self.dashboard.audit("login ok", who="operator", client=_client(request), provider="session-token")
        await response(scope, receive, send)


_ASSETS = frozenset({".js", ".mjs", ".css", ".map", ".png", ".svg", ".jpg", ".jpeg", ".gif", ".webp", ".ico",
                     ".woff", ".woff2", ".ttf", ".json"})
_NO_STORE = {"cache-control": "no-store", "x-frame-options": "DENY", "x-content-type-options": "nosniff",
             "referrer-policy": "same-origin"}


def _json(data: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(json.dumps(data, default=str), status_code=status, media_type="application/json",
                    headers={**_NO_STORE, **(headers or {})})




async def _body(request: Request) -> dict[str, Any]:
    """The request's JSON object ({} when it sent none), a lone surrogate in it read as U+FFFD
    (`hosting.loads_sent`: a user name with one is written to the audit log as any other)."""
    try:
        value = loads_sent(await request.body() or b"{}")
    except (ValueError, RecursionError):
        return {}
    return value if isinstance(value, dict) else {}


def _int(value: str | None, default: int) -> int:
    try:
        return int(value) if value is not None else default
    except ValueError:
        return default


def _client(request: Request) -> str:
    return request.client.host if request.client else "-"


def _next(value: str | None) -> str:
    """A same-origin path to go to after the login (anything else: `/`)."""
    if not value or not value.startswith("/") or value.startswith("//") or "\\" in value:
        return "/"
    return value


def _callback_url(request: Request) -> str:
    return str(request.url.replace(path="/auth/callback", query=""))
