"""Several profiles behind one `hermes serve` (`api_server.profiles: [names]`), as Hermes' gateway
answers `/p/<profile>/v1/...`: each listed profile gets an `ApiServer` of its own (its home's
plugins, sessions, stored responses, runs, cron jobs and budgets) mounted at `/p/<profile>`, and
only its own keys get in: the `API_SERVER_KEY` of that profile's `.env` (and the named keys its
config.yaml gives, their secrets from that `.env` too). The serving profile's key, or another
profile's, is refused (401); a listed profile with no key is closed (every request 401, saying
why); a profile not listed is 404. The serving profile keeps its own routes at `/v1/...`."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import AbstractContextManager
from typing import Any

import attrs
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from hermes_core import PluginManager

from .app import ApiServer
from .http import ApiError, error_response
from .keys import Keys
from .settings import settings

__all__ = ["ProfileServer", "profile_server", "profiles_app"]

_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]


@attrs.frozen
class ProfileServer:
    """One listed profile: its API server, or None when its `.env` gives it no key (`why`)."""

    name: str
    server: ApiServer | None
    why: str = ""
    around: Callable[[], AbstractContextManager[Any]] | None = None  # held around each of its requests


def _around(app: ASGIApp, around: Callable[[], AbstractContextManager[Any]] | None) -> ASGIApp:
    """`app` with `around()` held for each request (and so for the turns and threads it starts,
    which run in a copy of its context), as the host asks: Hermes' own home override, say."""
    if around is None:
        return app

    async def scoped(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        with around():
            await app(scope, receive, send)

    return scoped


def profile_server(name: str, manager: PluginManager, env: Mapping[str, str], env_path: str, *,
                   around: Callable[[], AbstractContextManager[Any]] | None = None) -> ProfileServer:
    """The API server of profile `name` over its `manager`, with the keys of its `.env` (`env`,
    read from `env_path`): never the serving process's environment. `around()` is held for each
    of its requests."""
    config = manager.load().config
    chosen = settings(config, env)
    keys = Keys.from_config(config, environ=env, main_key=chosen.key or None)
    if not keys.any:
        return ProfileServer(name, None, f"profile {name!r} has no API_SERVER_KEY in {env_path}, so its API is "
                                         "closed; set one there and restart hermes serve")
    return ProfileServer(name, ApiServer(manager, keys_=keys, model_name=chosen.model_name), around=around)


def _closed(why: str) -> Starlette:
    async def refuse(request: Request) -> Response:
        return error_response(ApiError(401, why, type="authentication_error", code="profile_has_no_key",
                                       headers={"WWW-Authenticate": "Bearer"}))

    return Starlette(routes=[Route("/{rest:path}", refuse, methods=_METHODS)])


def profiles_app(main: ApiServer, profiles: Mapping[str, ProfileServer]) -> Starlette:
    """The serving profile's app with each listed profile's mounted at `/p/<name>`; the
    lifespans of all of them run with the app's."""
    apps: list[Starlette] = [main.app()]
    routes: list[BaseRoute] = []
    for name, mounted in profiles.items():
        app = mounted.server.app() if mounted.server is not None else _closed(mounted.why)
        apps.append(app)
        routes.append(Mount(f"/p/{name}", app=_around(app, mounted.around)))
    served = ", ".join(profiles) or "none"

    async def unknown(request: Request) -> Response:
        name = request.path_params["name"]
        return error_response(ApiError(404, f"profile {name!r} is not served here (served: {served}; "
                                            "api_server.profiles lists them)", code="profile_not_found"))

    routes += [Route("/p/{name}", unknown, methods=_METHODS), Route("/p/{name}/{rest:path}", unknown, methods=_METHODS),
               Mount("", app=apps[0])]

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with contextlib.AsyncExitStack() as stack:
            for each in apps:
                await stack.enter_async_context(each.router.lifespan_context(each))
            yield

    return Starlette(routes=routes, lifespan=lifespan)
