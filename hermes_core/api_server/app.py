"""The API server: Hermes' routes with OpenAI's shapes, over the reference agent.

`ApiServer(manager).app()` is a Starlette app; `serve(host, port)` runs it on uvicorn through
`hermes_core.hosting.serve_asgi`. Every route but `/health` needs a key when any is configured
(`API_SERVER_KEY`, `api_server.keys.<name>`); a key outside its endpoints gets 403.
`GET /openapi.json` describes every route (`openapi`), for any valid key.
`X-Hermes-User` names the caller: stored with the session, given to the plugins as the session's
user (`HERMES_SESSION_USER_ID`, `pre_llm_call`'s `sender_id`); the memory provider's `user_id` is
the caller under their key (`ApiKey.caller`), so that each caller has their own memories.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from hermes_core import PluginManager, MemoryStoreError, StateUnavailableError, __version__
from hermes_core import config_keys as keys
from hermes_core.hosting import BrowserPolicy, bearer_token, serve_asgi

from . import openapi
from .core import RETRY_AFTER, SESSION_KEY_HEADER, Core, Handler, finish_reason, flag, new_id, unavailable, usage
from .http import ApiError, Json, error_response, header_value, one_route_per_path, sse
from .inputs import chat_conversation
from .jobs import CronJobs
from .keys import OPEN, ApiKey, Keys
from .responses import Responses
from .runs import Runs
from .sessions import Sessions
from .settings import DEFAULT_MODEL_NAME, DEFAULT_PORT

__all__ = ["ApiServer", "DEFAULT_MODEL_NAME", "DEFAULT_PORT"]

log = logging.getLogger("hermes.api_server")


class ApiServer(Core):
    """The API server over a loaded `PluginManager` (see the module)."""

    def __init__(self, manager: PluginManager, *, keys_: Keys | None = None, model_name: str | None = None) -> None:
        super().__init__(manager, keys_=keys_, model_name=model_name)
        self.responses = Responses(self)
        self.runs = Runs(self)
        self.sessions = Sessions(self)
        self.cron_jobs = CronJobs(self)
        self.openapi: dict[str, Any] = {}  # the document of the routes `app()` built last

    # -- the app ---------------------------------------------------------------------------------

    def app(self) -> Starlette:
        scopes: dict[tuple[str, str], str | None] = {}  # (method, path) of a keyed route: its endpoints

        def route(path: str, endpoint: str | None, handler: Handler, methods: list[str]) -> Route:
            scopes.update({(method, path): endpoint for method in methods})
            return Route(path, self._guarded(endpoint, handler), methods=methods)

        routes = [
            Route("/health", self._health, methods=["GET"]),
            Route("/v1/health", self._health, methods=["GET"]),
            route("/openapi.json", None, self._openapi, ["GET"]),
            route("/v1/models", "models", self._models, ["GET"]),
            route("/v1/capabilities", None, self._capabilities, ["GET"]),
            route("/v1/chat/completions", "chat", self._chat, ["POST"]),
            *self.responses.routes(route), *self.runs.routes(route), *self.sessions.routes(route),
            *self.cron_jobs.routes(route),
        ]
        routes = one_route_per_path(routes)
        self.openapi = openapi.document(routes, scopes, version=__version__, model=self.model_name)

        @contextlib.asynccontextmanager
        async def lifespan(app: Starlette) -> AsyncIterator[None]:
            await asyncio.to_thread(self.runs.start)
            sweeping = asyncio.ensure_future(self.runs.sweeping())
            try:
                yield
            finally:
                sweeping.cancel()
                self.close()

        return Starlette(routes=routes, lifespan=lifespan, exception_handlers={HTTPException: _no_such_route})

    def close(self) -> None:
        self.runs.close()
        self.turns.close()
        self.store.close()

    async def serve(self, host: str, port: int, *, ready: Callable[[str], Any] | None = None,
                    grace: int | None = None, app: Starlette | None = None) -> None:
        """Serve until SIGINT/SIGTERM (running requests finish; a second signal stops at once). A
        store refusing this host (a wrong password, a schema newer than this hermes-core) stops it
        before it listens; one that cannot be reached yet does not. `app`: this server's app with
        more mounted beside it (`profiles_app`), served instead of `app()`."""
        await asyncio.to_thread(self.runs.start)
        await serve_asgi(app if app is not None else self.app(), host, port, ready=ready, what="hermes serve", grace=grace,
                         app_checks_keys=self.keys.any, max_body=self.max_body,
                         browsers=BrowserPolicy.from_config(self.manager.config))

    def _guarded(self, endpoint: str | None, handler: Handler) -> Callable[[Request], Awaitable[Response]]:
        """`handler` behind the key check (and `endpoint`'s scope), with errors as OpenAI's objects."""

        async def guarded(request: Request) -> Response:
            try:
                rights = self._rights(request, endpoint)
                user = header_value(request, "X-Hermes-User")
                return await handler(request, rights, user)
            except ApiError as exc:
                return error_response(exc)
            except ClientDisconnect:  # gone before its body was read, or refused by the host (413, 408)
                return error_response(ApiError(400, "the request body did not arrive whole",
                                               code="client_disconnected"))
            except StateUnavailableError as exc:  # the shared database is restarting, say: try again
                log.warning("%s %s: %s", request.method, request.url.path, exc)
                return error_response(unavailable(exc))
            except MemoryStoreError as exc:
                log.error("%s %s: %s", request.method, request.url.path, exc)
                return error_response(ApiError(500, str(exc), type="server_error", code="state_error"))
            except Exception as exc:  # noqa: BLE001 - a request never takes the server down
                log.error("%s %s failed", request.method, request.url.path, exc_info=True)
                return error_response(ApiError(500, f"internal error: {type(exc).__name__}: {exc}",
                                               type="server_error"))

        return guarded

    def _rights(self, request: Request, endpoint: str | None) -> ApiKey:
        if not self.keys.any:
            return OPEN
        rights = self.keys.match(bearer_token(request.headers.get("authorization")))
        if rights is None:
            raise ApiError(401, "Invalid API key: send Authorization: Bearer <API_SERVER_KEY or a named key>",
                           type="authentication_error", code="invalid_api_key",
                           headers={"WWW-Authenticate": "Bearer"})
        if endpoint is not None and not rights.may(endpoint):
            raise ApiError(403, f"the key {rights.name!r} may not call the {endpoint} endpoints "
                                f"(api_server.keys.{rights.name}.endpoints)", type="permission_error",
                           code="endpoint_not_allowed")
        return rights

    # -- small routes ----------------------------------------------------------------------------

    async def _health(self, request: Request) -> Response:
        """`ok`; or `degraded` (503, with the reason, the URL's password masked) while the store
        cannot be reached: the host runs and answers again by itself once it can."""
        body = {"status": "ok", "platform": "hermes-core", "version": __version__, "host": self.fleet.ident}
        try:
            await asyncio.to_thread(self.store.ping)
        except MemoryStoreError as exc:
            return Json({**body, "status": "degraded", "reason": str(exc)}, status_code=503,
                        headers={"Retry-After": str(RETRY_AFTER)})
        return Json(body)

    async def _openapi(self, request: Request, rights: ApiKey, user: str) -> Response:
        return Json(self.openapi)

    async def _models(self, request: Request, rights: ApiKey, user: str) -> Response:
        return Json({"object": "list", "data": [
            {"id": self.model_name, "object": "model", "created": self.started, "owned_by": "hermes"}]})

    async def _capabilities(self, request: Request, rights: ApiKey, user: str) -> Response:
        endpoints = {name: rights.may(name) for name in keys.API_ENDPOINTS}
        return Json({
            "object": "hermes.api_server.capabilities", "platform": "hermes-core", "version": __version__,
            "model": self.model_name, "auth": {"type": "bearer", "required": self.keys.any, "key": rights.name},
            "runtime": {"mode": "server_agent", "tool_execution": "server"},
            "features": {
                "chat_completions": endpoints["chat"], "chat_completions_streaming": endpoints["chat"],
                "responses_api": endpoints["responses"], "responses_streaming": endpoints["responses"],
                "run_submission": endpoints["runs"], "run_status": endpoints["runs"],
                "run_events_sse": endpoints["runs"], "run_stop": endpoints["runs"],
                "runs_idempotency": {"supported": endpoints["runs"], "durable": True, "retention_seconds": 86400},
                "run_approval_response": False, "approval_events": False, "run_steer": False,
                "tool_progress_events": True, "session_chat": endpoints["sessions"],
                "session_fork": endpoints["sessions"], "jobs_admin": endpoints["jobs"],
                "caller_identity_header": "X-Hermes-User",
                "session_continuity_header": "X-Hermes-Session-Id",
                "session_key_header": SESSION_KEY_HEADER,
            },
            "endpoints": endpoints,
        })

    # -- chat completions ------------------------------------------------------------------------

    async def _chat(self, request: Request, rights: ApiKey, user: str) -> Response:
        body = await self.body(request)
        ask = self.continuity(request, rights, user, chat_conversation(body))
        ask.stream = flag(body.get("stream"), "stream")
        model = self.model_name
        headers = {"X-Hermes-Session-Id": ask.session_id}
        if ask.session_key:  # echoed, as Hermes does
            headers[SESSION_KEY_HEADER] = ask.session_key
        self.admit()
        if ask.stream:
            return StreamingResponse(self._chat_stream(self.events(ask), model), media_type="text/event-stream",
                                     headers={**headers, "Cache-Control": "no-cache", "X-Accel-Buffering": "no"})
        try:
            done = await self.turn(ask)
        except Exception as exc:  # noqa: BLE001 - said to the caller
            raise self.failure(exc) from None
        result = done.result
        text = result.text if result is not None else ""
        return Json({
            "id": new_id("chatcmpl-"), "object": "chat.completion", "created": int(time.time()), "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                         "finish_reason": finish_reason(done)}],
            "usage": usage(done),
        }, headers=headers)

    async def _chat_stream(self, events: AsyncIterator[tuple[str, Any]], model: str) -> AsyncIterator[str]:
        chunk_id, created = new_id("chatcmpl-"), int(time.time())

        def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> str:
            return sse({"id": chunk_id, "object": "chat.completion.chunk", "created": created, "model": model,
                        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **extra})

        yield chunk({"role": "assistant", "content": ""})
        async with contextlib.aclosing(events):  # type: ignore[type-var]
            async for kind, data in events:
                if kind == "delta":
                    yield chunk({"content": data})
                elif kind in ("tool", "tool_result"):
                    # Hermes' progress event; "choices": [] keeps a stock SDK client iterating past it
                    yield sse({"object": "hermes.tool.progress", "choices": [], "tool": data["name"],
                               "toolCallId": data["call_id"], "status": "running" if kind == "tool" else "completed",
                               **({"label": data["arguments"][:200]} if kind == "tool" else {})},
                              event="hermes.tool.progress")
                elif kind == "keepalive":
                    yield ": keepalive\n\n"
                elif kind == "error":
                    error = self.failure(data)
                    yield chunk({}, "error", error={"message": error.message, "type": error.type, "code": error.code})
                elif kind == "done":
                    yield chunk({}, finish_reason(data), usage=usage(data))
        yield sse("[DONE]")


async def _no_such_route(request: Request, exc: Exception) -> Response:
    """A path the server does not have (404) or a method its path does not take (405, `Allow`
    naming those it takes), as an OpenAI error object like every other answer."""
    status = getattr(exc, "status_code", 500)
    headers = dict(getattr(exc, "headers", None) or {})
    if status == 405:
        message = f"{request.method} {request.url.path} is not served; the path takes {headers.get('Allow', '')}"
    elif status == 404:
        message = f"{request.url.path} is not served here (GET /openapi.json lists what is)"
    else:
        message = str(getattr(exc, "detail", "")) or f"HTTP {status}"
    return error_response(ApiError(status, message, code="not_found" if status == 404 else None, headers=headers))
