"""`/v1/runs`: an agent turn started now and watched (or stopped) later, as Hermes has it.

`POST /v1/runs` answers 202 with the run's id at once; `GET /v1/runs/{id}` is its status,
`GET /v1/runs/{id}/events` its events (server-sent, from the first: `message.delta`,
`tool.started`, `tool.completed`, then `run.completed`, `run.failed` or `run.cancelled`), and
`POST /v1/runs/{id}/stop` stops it. A run and its events are stored when it ends, so they outlive
a restart; a run that was running when its server stopped is `interrupted`. An
`Idempotency-Key` header makes a retried creation safe: the same key with the same body answers
the first run (`replayed: true`, for 24 hours, across restarts), with another body 409.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import re
import time
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

import attrs
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from .core import new_id, new_session_id
from .http import ApiError, Json, sse
from .inputs import responses_conversation
from .keys import ApiKey
from .turns import Ask, TurnDone

if TYPE_CHECKING:
    from .core import Core, RouteMaker

__all__ = ["Runs"]

log = logging.getLogger("hermes.api_server")
TERMINAL = ("completed", "failed", "cancelled", "interrupted")
_IDEMPOTENCY = re.compile(r"[\x21-\x7e]{1,255}")


@attrs.define
class _Run:
    """A run this server started: its status object, its events so far, who watches."""

    status: dict[str, Any]
    owner: str
    ask: Ask
    events: list[dict[str, Any]] = attrs.Factory(list)
    changed: asyncio.Event = attrs.Factory(asyncio.Event)

    def add(self, event: str, **data: Any) -> None:
        now = time.time()
        self.events.append({"event": event, "run_id": self.status["run_id"], "timestamp": now, **data})
        self.status.update(last_event=event, updated_at=now)
        self.changed.set()
        self.changed = asyncio.Event()  # the next waiters wait for the next event


class Runs:
    """The runs of one `ApiServer`."""

    def __init__(self, server: Core) -> None:
        self.server = server
        self.live: dict[str, _Run] = {}
        self.tasks: set[asyncio.Task[None]] = set()
        server.store.interrupt_unfinished()  # their server stopped: whoever waits is told so

    def routes(self, route: RouteMaker) -> list[Route]:
        return [route("/v1/runs", "runs", self._create, ["POST"]),
                route("/v1/runs/{run_id}", "runs", self._status, ["GET"]),
                route("/v1/runs/{run_id}/events", "runs", self._events, ["GET"]),
                route("/v1/runs/{run_id}/stop", "runs", self._stop, ["POST"]),
                route("/v1/runs/{run_id}/approval", "runs", self._approval, ["POST"])]

    def close(self) -> None:
        for run in self.live.values():
            run.ask.cancel()

    # -- creating ----------------------------------------------------------------------------------

    async def _create(self, request: Request, rights: ApiKey, user: str) -> Response:
        server = self.server
        body = await server.body(request)
        idempotency = request.headers.get("idempotency-key")
        run_id = new_id("run_")
        if idempotency is not None:
            if not _IDEMPOTENCY.fullmatch(idempotency):
                raise ApiError(400, "Idempotency-Key must be 1 to 255 visible ASCII characters",
                               param="Idempotency-Key", code="invalid_idempotency_key")
            digest = hashlib.sha256(json.dumps(body, sort_keys=True, default=str).encode("utf-8", "surrogatepass")
                                    ).hexdigest()
            earlier = server.store.claim(rights.name, idempotency, digest, run_id)
            if earlier is not None:
                if earlier[0] != digest:
                    raise ApiError(409, "Idempotency-Key was already used with a different request payload",
                                   param="Idempotency-Key", code="idempotency_key_conflict")
                found = self._find(earlier[1], rights)
                status = found["status"] if found is not None else "started"
                return Json({"run_id": earlier[1], "status": status, "replayed": True}, status_code=202,
                                    headers={"Idempotency-Replayed": "true"})
        conversation = responses_conversation(body)
        session_id = body.get("session_id")
        if session_id is not None and (not isinstance(session_id, str) or not session_id):
            raise ApiError(400, "session_id must be a non-empty string", param="session_id")
        ask = Ask(conversation.prompt, rights, session_id or new_session_id(), user=user, stream=True,
                  history=conversation.history, instructions=conversation.instructions)
        if session_id is not None:
            server.session(session_id, rights, param="session_id")
            server.not_busy(session_id)
            if conversation.history:
                raise ApiError(400, "with session_id, input holds only the new message (the session has the rest)",
                               param="input")
            ask.resume = True
        server.admit()
        now = time.time()
        run = _Run({"object": "hermes.run", "run_id": run_id, "status": "running", "created_at": now,
                    "updated_at": now, "session_id": ask.session_id, "model": server.model_name,
                    "last_event": None}, rights.name, ask)
        self.live[run_id] = run
        server.store.save_run(run.status, rights.name)
        task = asyncio.ensure_future(self._drive(run))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)
        return Json({"run_id": run_id, "status": "started", "replayed": False}, status_code=202,
                            headers={"X-Hermes-Session-Id": ask.session_id})

    async def _drive(self, run: _Run) -> None:
        """Run the turn, turning its events into the run's; store the run and its events at the end."""
        async with contextlib.aclosing(self.server.events(run.ask)) as events:  # type: ignore[type-var]
            async for kind, data in events:
                if kind == "delta":
                    run.add("message.delta", delta=data)
                elif kind == "tool":
                    run.add("tool.started", tool=data["name"], preview=data["arguments"][:200],
                            tool_call_id=data["call_id"])
                elif kind == "tool_result":
                    run.add("tool.completed", tool=data["name"], tool_call_id=data["call_id"])
                elif kind == "error":
                    error = self.server.failure(data)
                    run.status.update(status="failed", error={"message": error.message, "type": error.type})
                    run.add("run.failed", error=error.message)
                elif kind == "done":
                    self._done(run, data)
        store = self.server.store
        try:
            store.save_run(run.status, run.owner, events=run.events)
        except Exception:  # noqa: BLE001 - a run that cannot be stored is still answered while it is live
            log.warning("run %s could not be stored", run.status["run_id"], exc_info=True)
            return
        self.live.pop(run.status["run_id"], None)  # the store answers for it from now on

    def _done(self, run: _Run, done: TurnDone) -> None:
        result = done.result
        if result is None:
            run.status["status"] = "cancelled"
            run.add("run.cancelled")
            return
        usage = {"input_tokens": result.input_tokens, "output_tokens": result.output_tokens,
                 "total_tokens": result.input_tokens + result.output_tokens}
        run.status.update(status="completed", output=result.text, usage=usage)
        run.add("run.completed", output=result.text, usage=usage)

    # -- watching --------------------------------------------------------------------------------------

    def _find(self, run_id: str, rights: ApiKey) -> dict[str, Any] | None:
        live = self.live.get(run_id)
        if live is not None and live.owner == rights.name:
            return live.status
        return self.server.store.run(run_id, rights.name)

    def _known(self, request: Request, rights: ApiKey) -> tuple[str, dict[str, Any]]:
        run_id = request.path_params["run_id"]
        found = self._find(run_id, rights)
        if found is None:
            raise ApiError(404, f"Run not found: {run_id}", code="run_not_found")
        return run_id, found

    async def _status(self, request: Request, rights: ApiKey, user: str) -> Response:
        return Json(self._known(request, rights)[1])

    async def _events(self, request: Request, rights: ApiKey, user: str) -> Response:
        run_id, status = self._known(request, rights)
        live = self.live.get(run_id)
        return StreamingResponse(self._follow(run_id, live), media_type="text/event-stream",
                                 headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})

    async def _follow(self, run_id: str, live: _Run | None) -> AsyncIterator[str]:
        if live is None:  # ended before this server started: its stored events
            for _, _, event in self.server.store.events(run_id):
                yield sse(event)
            yield ": stream closed\n\n"
            return
        sent = 0
        while True:
            while sent < len(live.events):
                yield sse(live.events[sent])
                sent += 1
            if live.status["status"] in TERMINAL:
                break
            try:
                await asyncio.wait_for(live.changed.wait(), 10.0)
            except asyncio.TimeoutError:
                yield ": keepalive\n\n"
        yield ": stream closed\n\n"

    async def _stop(self, request: Request, rights: ApiKey, user: str) -> Response:
        run_id, status = self._known(request, rights)
        live = self.live.get(run_id)
        if status["status"] in TERMINAL or live is None:
            return Json(status)
        live.ask.cancel()
        live.status["status"] = "stopping"
        return Json({"run_id": run_id, "status": "stopping"})

    async def _approval(self, request: Request, rights: ApiKey, user: str) -> Response:
        run_id, _ = self._known(request, rights)
        raise ApiError(409, f"run {run_id} is not waiting for an approval (this host asks for none)",
                       code="approval_not_pending")
