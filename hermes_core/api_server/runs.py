"""`/v1/runs`: an agent turn started now and watched (or stopped) later, as Hermes has it.

`POST /v1/runs` answers 202 with the run's id at once; `GET /v1/runs/{id}` is its status,
`GET /v1/runs/{id}/events` its events (server-sent, from the first: `message.delta`,
`tool.started`, `tool.completed`, then `run.completed`, `run.failed` or `run.cancelled`), and
`POST /v1/runs/{id}/stop` stops it. A run's events are stored as they happen and its status when
it ends, so they outlive a restart and any host sharing the store (`state.url`) streams them: a
host that does not run it follows the stored events until the run ends. A run whose server
stopped is `interrupted`; one whose host stopped answering (no heartbeat for twice
`state.lease_seconds`) is `failed` with the reason, ended by another host. An `Idempotency-Key`
header makes a retried creation safe on any host: the same key with the same body answers the
first run (`replayed: true`, for 24 hours, across restarts), with another body 409.
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

from hermes_core import MemoryStoreError, StateUnavailableError

from .core import KEEPALIVE, RETRY_AFTER, SESSION_KEY_HEADER, new_id, new_session_id
from .http import ApiError, Json, sse
from .inputs import responses_conversation
from .keys import ApiKey
from .store import TERMINAL_EVENTS
from .turns import Ask, TurnDone

if TYPE_CHECKING:
    from .core import Core, RouteMaker

__all__ = ["Runs"]

log = logging.getLogger("hermes.api_server")
TERMINAL = ("completed", "failed", "cancelled", "interrupted")
_IDEMPOTENCY = re.compile(r"[\x21-\x7e]{1,255}")
POLL = 0.2  # seconds between two reads of a run's stored events while another host runs it


@attrs.define
class _Run:
    """A run this server started: its status object, its events so far, who watches."""

    status: dict[str, Any]
    owner: str
    ask: Ask
    events: list[dict[str, Any]] = attrs.Factory(list)
    changed: asyncio.Event = attrs.Factory(asyncio.Event)
    stored: int = 0  # how many of `events` are stored
    storing: asyncio.Future[None] | None = None

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
        self.unsaved: dict[str, _Run] = {}  # ended runs whose end could not be stored yet

    def routes(self, route: RouteMaker) -> list[Route]:
        return [route("/v1/runs", "runs", self._create, ["POST"]),
                route("/v1/runs/{run_id}", "runs", self._status, ["GET"]),
                route("/v1/runs/{run_id}/events", "runs", self._events, ["GET"]),
                route("/v1/runs/{run_id}/stop", "runs", self._stop, ["POST"]),
                route("/v1/runs/{run_id}/approval", "runs", self._approval, ["POST"])]

    def start(self) -> None:
        """This host starts serving: it registers, beats, and ends the runs of hosts that are gone
        (with no shared database: this home's earlier servers, stopped or crashed)."""
        try:
            self.sweep()
        except StateUnavailableError as exc:  # the server starts all the same; the next sweep tries again
            log.warning("hermes serve: %s", exc)

    def sweep(self) -> list[str]:
        """Store the ends that could not be stored, end the runs of hosts that are gone (done every
        half lease, and when a client asks about a run another host runs); the runs of this host
        a client asked another host to stop."""
        self.server.fleet.start()
        for run in list(self.unsaved.values()):
            self._save_end(run)
        self.server.fleet.reap(self.server.store)
        return self.server.store.stops(self.server.fleet.ident)

    async def sweeping(self) -> None:
        """`sweep()` every half lease while the server runs; a store that cannot be reached is
        swept again the next time (said once, and again once it answers)."""
        failing = False
        while True:
            await asyncio.sleep(self.server.fleet.lease / 2)
            try:
                for run_id in await asyncio.to_thread(self.sweep):
                    live = self.live.get(run_id)
                    if live is not None and live.status["status"] not in TERMINAL:
                        live.ask.cancel()
                        live.status["status"] = "stopping"
            except MemoryStoreError as exc:
                (log.debug if failing else log.warning)("runs of stopped hosts not checked: %s", exc)
                failing = True
                continue
            if failing:
                log.warning("the API server store answers again (%s)", self.server.store.location)
                failing = False

    def close(self) -> None:
        """The server stops: its runs end `interrupted` (stored now: the process may end before their
        turns do), and the host stops beating."""
        for run in list(self.live.values()):
            run.ask.cancel()
            if run.status["status"] not in TERMINAL:
                reason = "its server stopped before it ended"
                run.status.update(status="interrupted", error={"message": reason, "type": "server_error"})
                run.add("run.interrupted", error=reason)
            with contextlib.suppress(MemoryStoreError):
                self._save_end(run)
        self.server.fleet.stop()

    # -- creating ----------------------------------------------------------------------------------

    async def _create(self, request: Request, rights: ApiKey, user: str) -> Response:
        server = self.server
        body = await server.body(request)
        session_key = server.session_key(request)
        idempotency = request.headers.get("idempotency-key")
        run_id = new_id("run_")
        claim: tuple[str, str] | None = None
        if idempotency is not None:
            if not _IDEMPOTENCY.fullmatch(idempotency):
                raise ApiError(400, "Idempotency-Key must be 1 to 255 visible ASCII characters",
                               param="Idempotency-Key", code="invalid_idempotency_key")
            digest = hashlib.sha256(json.dumps(body, sort_keys=True, default=str).encode("utf-8", "surrogatepass")
                                    ).hexdigest()
            claim = (idempotency, digest)
            earlier = server.store.claimed(rights.name, idempotency)
            if earlier is not None:
                return self._replay(earlier, digest, rights)
        conversation = responses_conversation(body)
        session_id = body.get("session_id")
        if session_id is not None and (not isinstance(session_id, str) or not session_id):
            raise ApiError(400, "session_id must be a non-empty string", param="session_id")
        ask = Ask(conversation.prompt, rights, session_id or new_session_id(), user=user, stream=True,
                  history=conversation.history, instructions=conversation.instructions,
                  session_key=session_key)
        if session_id is not None:
            server.session(session_id, rights, param="session_id")
            server.not_busy(session_id)
            if conversation.history:
                raise ApiError(400, "with session_id, input holds only the new message (the session has the rest)",
                               param="input")
            ask.resume = True
        server.fleet.start()  # registered already, unless the store could not be reached so far
        server.admit()
        now = time.time()
        run = _Run({"object": "hermes.run", "run_id": run_id, "status": "running", "created_at": now,
                    "updated_at": now, "session_id": ask.session_id, "model": server.model_name,
                    "last_event": None}, rights.name, ask)
        try:  # the key claimed (on any host) and the run stored in one transaction
            earlier = server.store.start_run(run.status, rights.name, server.fleet.ident, idempotency=claim)
        except BaseException:
            server.turns.release()
            raise
        if earlier is not None and claim is not None:  # another request with the key came first
            server.turns.release()
            return self._replay(earlier, claim[1], rights)
        self.live[run_id] = run
        task = asyncio.ensure_future(self._drive(run))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)
        echoed = {SESSION_KEY_HEADER: ask.session_key} if ask.session_key else {}
        return Json({"run_id": run_id, "status": "started", "replayed": False}, status_code=202,
                    headers={"X-Hermes-Session-Id": ask.session_id, **echoed})

    def _replay(self, earlier: tuple[str, str], digest: str, rights: ApiKey) -> Response:
        """The answer to a request whose Idempotency-Key an earlier one claimed: its run, or 409 when
        that request had another body."""
        if earlier[0] != digest:
            raise ApiError(409, "Idempotency-Key was already used with a different request payload",
                           param="Idempotency-Key", code="idempotency_key_conflict")
        found = self._find(earlier[1], rights)
        status = found["status"] if found is not None else "started"
        return Json({"run_id": earlier[1], "status": status, "replayed": True}, status_code=202,
                    headers={"Idempotency-Replayed": "true"})

    async def _drive(self, run: _Run) -> None:
        """Run the turn, turning its events into the run's (stored as they come); store the run's end."""
        async with contextlib.aclosing(self.server.events(run.ask)) as events:  # type: ignore[type-var]
            async for kind, data in events:
                if run.status["status"] == "interrupted":  # its server stopped (`close`)
                    return
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
                if run.status["status"] not in TERMINAL:
                    self._store_soon(run)
        if run.status["run_id"] not in self.live:
            return  # its end was stored when the server stopped
        if run.storing is not None:
            await asyncio.wait([run.storing])
        try:
            await asyncio.to_thread(self._save_end, run)
        except MemoryStoreError as exc:  # answered from memory meanwhile; stored by a later sweep
            log.warning("the end of run %s could not be stored yet: %s", run.status["run_id"], exc)

    def _store_soon(self, run: _Run) -> None:
        """Store the run's new events, in the background (those that come meanwhile go in one write)."""
        if run.storing is None or run.storing.done():
            run.storing = asyncio.ensure_future(self._store_events(run))

    async def _store_events(self, run: _Run) -> None:
        while run.stored < len(run.events) and run.status["status"] not in TERMINAL:
            first, batch = run.stored, list(run.events[run.stored:])
            try:
                await asyncio.to_thread(self.server.store.add_events, run.status["run_id"], first, batch)
            except MemoryStoreError as exc:  # stored with the next ones, or with the run's end
                log.warning("events of run %s not stored yet: %s", run.status["run_id"], exc)
                return
            run.stored = max(run.stored, first + len(batch))

    def _save_end(self, run: _Run) -> None:
        """Store the run's end with its events not stored yet (kept in `unsaved` while that fails)."""
        run_id = run.status["run_id"]
        self.unsaved[run_id] = run
        if not self.server.store.end_run(dict(run.status), self.server.fleet.ident, run.stored,
                                         run.events[run.stored:]):
            log.warning("run %s had been ended by another host (this one was taken for gone)", run_id)
        self.unsaved.pop(run_id, None)
        self.live.pop(run_id, None)  # the store answers for it from now on

    def _done(self, run: _Run, done: TurnDone) -> None:
        result = done.result
        if result is None or done.cancelled:
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
        store = self.server.store
        found = store.run(run_id, rights.name)
        if found is not None and found["status"] not in TERMINAL and self.server.fleet.reap(store, run_id):
            found = store.run(run_id, rights.name)  # its host was gone: it ended just now
        return found

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
        if live is None:  # run by another host, or ended: its stored events
            async for line in self._follow_stored(run_id):
                yield line
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

    async def _follow_stored(self, run_id: str) -> AsyncIterator[str]:
        """A run's stored events, and those another host stores, until its last one (or until it
        has no host: ended, or its host was found gone and it was ended here)."""
        store, fleet = self.server.store, self.server.fleet
        after, quiet, checked = -1, 0.0, 0.0
        try:
            while True:
                events = await asyncio.to_thread(store.events, run_id, after)
                for seq, name, event in events:
                    yield sse(event)
                    after = seq
                    if name in TERMINAL_EVENTS:
                        yield ": stream closed\n\n"
                        return
                quiet = 0.0 if events else quiet + POLL
                checked += POLL
                if checked >= fleet.lease / 2 or after < 0:
                    checked = 0.0
                    running = await asyncio.to_thread(store.run_host, run_id) is not None
                    if not running or await asyncio.to_thread(fleet.reap, store, run_id) != []:
                        for _, _, event in await asyncio.to_thread(store.events, run_id, after):
                            yield sse(event)
                        yield ": stream closed\n\n"
                        return
                if quiet >= KEEPALIVE:
                    quiet = 0.0
                    yield ": keepalive\n\n"
                await asyncio.sleep(POLL)
        except MemoryStoreError as exc:  # the stream ends in words; the client follows again later
            yield sse({"event": "error", "run_id": run_id, "error": str(exc),
                       "retry_after": RETRY_AFTER if isinstance(exc, StateUnavailableError) else None},
                      event="error")

    async def _stop(self, request: Request, rights: ApiKey, user: str) -> Response:
        run_id, status = self._known(request, rights)
        live = self.live.get(run_id)
        if status["status"] in TERMINAL:
            return Json(status)
        if live is None:  # another host runs it: it stops at its next sweep
            if self.server.store.ask_stop(run_id) is None:
                return Json(self._known(request, rights)[1])
            return Json({"run_id": run_id, "status": "stopping"})
        live.ask.cancel()
        live.status["status"] = "stopping"
        return Json({"run_id": run_id, "status": "stopping"})

    async def _approval(self, request: Request, rights: ApiKey, user: str) -> Response:
        run_id, _ = self._known(request, rights)
        raise ApiError(409, f"run {run_id} is not waiting for an approval (this host asks for none)",
                       code="approval_not_pending")
