"""What every route of the API server shares: the keys, the turns, the store, whose each
session is (`owners`), and the steps of a request that asks the agent something (its body read,
a place taken, the turn run or streamed as events, a failure said as an OpenAI error)."""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from hermes_core import HermesError, PluginLlmBudgetError, PluginManager, StateUnavailableError
from hermes_core import config_keys as keys
from hermes_core.agent import FIRED_HOOKS
from hermes_core.hosting import state_url

from .fleet import Fleet
from .http import ApiError, header_value, read_json
from .inputs import Conversation
from .keys import ApiKey, Keys
from .owners import SESSION, Owners, session_not_found
from .settings import DEFAULT_MODEL_NAME
from .store import ApiStore
from .turns import Ask, TurnDone, Turns

__all__ = ["SESSION_KEY_HEADER", "Core", "Handler", "RouteMaker", "flag", "new_id", "new_session_id", "unavailable"]

log = logging.getLogger("hermes.api_server")
KEEPALIVE = 10.0  # seconds between two `: keepalive` comments of a quiet stream
RETRY_AFTER = 2  # seconds a caller is asked to wait when the shared database cannot be reached

Handler = Callable[[Request, ApiKey, str], Awaitable[Response]]
SESSION_KEY_HEADER = "X-Hermes-Session-Key"  # who or what the client is, handed to the plugins (as Hermes')
RouteMaker = Callable[[str, "str | None", Handler, list[str]], Route]  # (path, endpoint scope, handler, methods)

def new_id(prefix: str) -> str:
    return f"{prefix}{uuid.uuid4().hex}"


def new_session_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S") + "-" + uuid.uuid4().hex[:6]


class Core:
    """The state and steps the routes share, over a loaded `PluginManager`."""

    def __init__(self, manager: PluginManager, *, keys_: Keys | None = None, model_name: str | None = None) -> None:
        self.manager = manager.load()
        self.manager.declare_fired_hooks(*FIRED_HOOKS)
        config = self.manager.config
        self.keys = keys_ if keys_ is not None else Keys.from_config(config)
        self.model_name = model_name or DEFAULT_MODEL_NAME
        self.turns = Turns(self.manager, config.read(keys.API_SERVER_MAX_CONCURRENT))
        url = state_url(self.manager.home)
        self.store = ApiStore(self.manager.home, url=url, retention_days=config.read(keys.API_SERVER_RETENTION_DAYS),
                              max_stored=config.read(keys.API_SERVER_MAX_STORED),
                              pool_size=config.read(keys.STATE_POOL_SIZE))
        self.fleet = Fleet(self.manager.home, url, lease=float(config.read(keys.STATE_LEASE)))
        self.owners = Owners(self.store)
        self.max_body = config.read(keys.API_SERVER_MAX_BODY)
        self.started = int(time.time())

    # -- what every agent route shares ---------------------------------------------------------------

    async def body(self, request: Request) -> dict[str, Any]:
        body = await read_json(request, self.max_body)
        model = body.get("model")
        if model is not None and model != self.model_name:
            raise ApiError(400, f"model {model!r} is not served here (models: {self.model_name}); see GET /v1/models",
                           param="model", code="model_not_found")
        return body

    def admit(self) -> None:
        """Take a place for one turn, or 429 when `api_server.max_concurrent_runs` run already."""
        if not self.turns.admit():
            raise ApiError(429, f"Too many concurrent runs (max {self.turns.limit}); try again shortly",
                           type="rate_limit_error", code="rate_limit_exceeded", headers={"Retry-After": "1"})

    async def turn(self, ask: Ask) -> TurnDone:
        """Run `ask` (its place taken with `admit`, given back when it ends); its session is its
        key's from now on (when no key made it before)."""
        try:
            self.owners.record(SESSION, ask.session_id, ask.rights, new=not ask.resume)
            return await self.turns.run(ask)
        finally:
            self.turns.release()

    def started_turn(self, ask: Ask) -> asyncio.Task[TurnDone]:
        """`turn(ask)` as a task that runs on whatever happens to its caller (a client that goes away
        cancels the turn with `ask.cancel()`, never the task)."""
        return asyncio.ensure_future(self.turn(ask))

    def failure(self, exc: BaseException) -> ApiError:
        """What a turn's exception means to the caller."""
        if isinstance(exc, StateUnavailableError):
            return unavailable(exc)
        if isinstance(exc, PluginLlmBudgetError) and exc.budget == "on_store_error":  # the ledger, not a cap
            return ApiError(503, str(exc), type="server_error", code="state_unavailable",
                            headers={"Retry-After": str(RETRY_AFTER)})
        if isinstance(exc, PluginLlmBudgetError):
            return ApiError(429, str(exc), type="insufficient_quota", code="budget_exceeded")
        if isinstance(exc, HermesError):
            return ApiError(502, str(exc), type="server_error", code="agent_error")
        log.error("an agent turn failed", exc_info=exc)
        return ApiError(500, f"internal error: {type(exc).__name__}: {exc}", type="server_error")

    def session_key(self, request: Request) -> str:
        """The request's `X-Hermes-Session-Key` ("" when none): a stable name of who or what the
        client is (`webui:user-42`), handed to the agent as `gateway_session_key` for the plugins
        (a memory provider's `initialize`). It selects nothing the server keeps: the sessions a
        request reaches are its key's, whatever it says. As Hermes': one line of at most 256
        characters (400), and only on a server with keys (403 on an open one)."""
        value = header_value(request, SESSION_KEY_HEADER)
        if value and not self.keys.any:
            raise ApiError(403, f"{SESSION_KEY_HEADER} requires API key authentication: set API_SERVER_KEY "
                                "(or api_server.keys) to use it", type="permission_error",
                           param=SESSION_KEY_HEADER, code="session_key_requires_auth")
        return value

    def continuity(self, request: Request, rights: ApiKey, user: str, conversation: Conversation) -> Ask:
        """The turn a chat request asks for. `X-Hermes-Session-Id` goes on with that stored session
        (its history is the server's; only the request's last message is new). Otherwise the
        conversation is named by its caller (key and user) and first message, as Hermes names it by
        the first message: a client that sends the whole history each time (every chat UI) goes on
        with the same stored session while the history it sends is what that session holds, and
        starts a new one when it differs (an edited message)."""
        given = header_value(request, "X-Hermes-Session-Id")
        base = Ask(conversation.prompt, rights, "", user=user, instructions=conversation.instructions,
                   history=conversation.history, session_key=self.session_key(request))
        if given:
            self.session(given, rights, param="X-Hermes-Session-Id")
            self.not_busy(given)
            base.session_id, base.resume, base.history = given, True, []
            return base
        first = conversation.history[0]["content"] if conversation.history else conversation.prompt
        seed = f"{rights.name}\0{user}\0{conversation.instructions}\0{first}".encode("utf-8", "surrogatepass")
        derived = "api-" + hashlib.sha256(seed).hexdigest()[:16]
        stored = self.turns.store.window(derived)
        if stored is None:
            base.session_id = derived
        elif derived not in self.turns.busy and _same(stored, conversation.history):
            base.session_id, base.resume, base.history = derived, True, []
        else:
            base.session_id = new_session_id()
        return base

    def session(self, session_id: str, rights: ApiKey, *, param: str | None = None) -> None:
        """404, as for an id that never existed, unless `session_id` is a stored session `rights`
        may reach (`owners`). Every route that names a session asks this first."""
        if not self.owners.reaches(SESSION, session_id, rights) or self.turns.store.window(session_id) is None:
            raise session_not_found(session_id, param)

    def not_busy(self, session_id: str) -> None:
        if session_id in self.turns.busy:
            raise ApiError(409, f"session {session_id} is answering another request; wait for it",
                           code="session_active_turn")

    def events(self, ask: Ask) -> AsyncIterator[tuple[str, Any]]:
        """Start the turn of `ask` now, and its events as they come: `delta`, `tool`, `tool_result`,
        `keepalive`, then `done` (its `TurnDone`) or `error` (the exception). Closing the events
        (the caller went away) cancels the turn; a turn whose events are never read still ends."""
        queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
        ask.events = lambda kind, data: queue.put_nowait((kind, data))
        task = self.started_turn(ask)
        task.add_done_callback(lambda _: queue.put_nowait(("end", None)))
        return self._drain(ask, queue, task)

    async def _drain(self, ask: Ask, queue: asyncio.Queue[tuple[str, Any]],
                     task: asyncio.Task[TurnDone]) -> AsyncIterator[tuple[str, Any]]:
        try:
            while True:
                try:
                    kind, data = await asyncio.wait_for(queue.get(), KEEPALIVE)
                except asyncio.TimeoutError:
                    yield "keepalive", None
                    continue
                if kind == "end":
                    break
                yield kind, data
            exc = task.exception()
            yield ("error", exc) if exc is not None else ("done", task.result())
        finally:
            if not task.done():
                ask.cancel()


def unavailable(exc: StateUnavailableError) -> ApiError:
    """The shared database cannot be reached now: 503, and when to try again."""
    return ApiError(503, str(exc), type="server_error", code="state_unavailable",
                    headers={"Retry-After": str(RETRY_AFTER)})


def flag(value: Any, field: str) -> bool:
    if value is None:
        return False
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise ApiError(400, f"{field} must be true or false", param=field)


def finish_reason(done: TurnDone) -> str:
    if done.result is None:
        return "stop"  # cancelled: what was said stands
    return "length" if done.result.stopped == "max_iterations" else "stop"


def usage(done: TurnDone) -> dict[str, int]:
    result = done.result
    prompt, completion = (result.input_tokens, result.output_tokens) if result is not None else (0, 0)
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def _same(stored: list[dict[str, Any]], history: list[dict[str, Any]]) -> bool:
    """Whether a stored session's conversation is `history`: the same user and assistant texts, in
    order (its tool calls and results are the server's own and never sent back)."""
    from hermes_core import message_text

    said = [(m.get("role"), message_text(m)) for m in stored
            if m.get("role") == "user" or (m.get("role") == "assistant" and not m.get("tool_calls"))]
    return said == [(m["role"], m["content"]) for m in history]
