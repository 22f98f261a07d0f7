"""`/api/sessions`: the stored sessions, their messages, a fork, and a turn in one (Hermes'
sessions API). A named key reaches only the sessions it made here; the operator's keys reach
every platform's, as `hermes sessions list` shows them (`owners`).

`GET /api/sessions?limit=&offset=&user=` lists the latest first (`user`: only those started by
that `X-Hermes-User`); `GET /api/sessions/{id}` and `/messages` read one;
`POST /api/sessions/{id}/fork` copies it into a new session; `POST /api/sessions/{id}/chat`
runs a turn in it (`{"message": "..."}`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from .core import new_session_id
from .http import ApiError, Json, read_json
from .inputs import text_of
from .keys import ApiKey
from .owners import SESSION, session_not_found
from .turns import Ask

if TYPE_CHECKING:
    from .core import Core, RouteMaker

__all__ = ["Sessions"]

MAX_PAGE = 200
MAX_OFFSET = 2**62  # beyond every stored list, and within the databases' 64-bit OFFSET


def _session(row: dict[str, Any]) -> dict[str, Any]:
    return {"id": row["id"], "source": row.get("platform", ""), "user_id": row.get("user", ""),
            "model": row["model"], "title": row["title"], "started_at": row["created"],
            "last_active": row["updated"], "message_count": row["messages"],
            "input_tokens": row.get("input_tokens", 0), "output_tokens": row.get("output_tokens", 0),
            "estimated_cost_usd": row.get("cost")}


def _count(request: Request, name: str, default: int, most: int | None = None) -> int:
    raw = request.query_params.get(name)
    if raw is None:
        return default
    if not (raw.isascii() and raw.isdigit()):
        raise ApiError(400, f"{name} must be a whole number, 0 or more", param=name)
    return min(int(raw), most if most is not None else MAX_OFFSET)


class Sessions:
    """The sessions routes of one `ApiServer`."""

    def __init__(self, server: Core) -> None:
        self.server = server

    def routes(self, route: RouteMaker) -> list[Route]:
        return [route("/api/sessions", "sessions", self._list, ["GET"]),
                route("/api/sessions/{session_id}", "sessions", self._get, ["GET"]),
                route("/api/sessions/{session_id}/messages", "sessions", self._messages, ["GET"]),
                route("/api/sessions/{session_id}/fork", "sessions", self._fork, ["POST"]),
                route("/api/sessions/{session_id}/chat", "sessions", self._chat, ["POST"])]

    @property
    def store(self) -> Any:
        return self.server.turns.store

    def _found(self, request: Request, rights: ApiKey) -> dict[str, Any]:
        session_id = request.path_params["session_id"]
        self.server.session(session_id, rights)
        found = self.store.show(session_id)
        if found is None:  # removed meanwhile
            raise session_not_found(session_id)
        return found  # type: ignore[no-any-return]

    def _summary(self, found: dict[str, Any]) -> dict[str, Any]:
        usage = found["usage"]
        costs = [u["cost"] for u in usage if u["cost"] is not None]
        return _session({**found, "messages": len(found["messages"]),
                         "input_tokens": sum(u["input_tokens"] for u in usage),
                         "output_tokens": sum(u["output_tokens"] for u in usage),
                         "cost": sum(costs) if costs else None})

    async def _list(self, request: Request, rights: ApiKey, user: str) -> Response:
        limit, offset = _count(request, "limit", 50, MAX_PAGE), _count(request, "offset", 0)
        who = request.query_params.get("user")
        rows = self.store.sessions(limit + 1, user=who, offset=offset, ids=self.server.owners.mine(SESSION, rights))
        return Json({"object": "list", "data": [_session(row) for row in rows[:limit]], "limit": limit,
                             "offset": offset, "has_more": len(rows) > limit})

    async def _get(self, request: Request, rights: ApiKey, user: str) -> Response:
        return Json({"object": "hermes.session", "session": self._summary(self._found(request, rights))})

    async def _messages(self, request: Request, rights: ApiKey, user: str) -> Response:
        found = self._found(request, rights)
        limit, offset = _count(request, "limit", 500, 500), _count(request, "offset", 0)
        page = found["messages"][offset:offset + limit]
        return Json({"object": "list", "session_id": found["id"], "data": page,
                             "pagination": {"limit": limit, "offset": offset, "returned": len(page),
                                            "total": len(found["messages"])}})

    async def _fork(self, request: Request, rights: ApiKey, user: str) -> Response:
        found = self._found(request, rights)
        fork = new_session_id()
        self.server.owners.record(SESSION, fork, rights)
        self.store.start(fork, found["model"], platform="api_server", user=user or found.get("user", ""))
        with self.store.step():
            for message in found["messages"]:
                self.store.append(fork, message)
        created = self.store.show(fork)
        return Json({"object": "hermes.session", "session": self._summary(created),
                             "forked_from": found["id"]}, status_code=201)

    async def _chat(self, request: Request, rights: ApiKey, user: str) -> Response:
        server = self.server
        found = self._found(request, rights)
        body = await read_json(request, server.max_body)
        given = body.get("message", body.get("input"))
        text = text_of(given, "message")
        if not text.strip():
            raise ApiError(400, "message is missing or empty (the user's new message)", param="message",
                           code="missing_message")
        instructions = body.get("instructions") or body.get("system_message") or ""
        if not isinstance(instructions, str):
            raise ApiError(400, "instructions must be a string", param="instructions")
        server.not_busy(found["id"])
        ask = Ask(text, rights, found["id"], resume=True, user=user, instructions=instructions)
        server.admit()
        try:
            done = await server.turn(ask)
        except Exception as exc:  # noqa: BLE001 - said to the caller
            raise server.failure(exc) from None
        result = done.result
        usage = {"input_tokens": result.input_tokens if result else 0,
                 "output_tokens": result.output_tokens if result else 0}
        return Json({"object": "hermes.session.chat.completion", "session_id": done.session_id,
                             "message": {"role": "assistant", "content": result.text if result else ""},
                             "usage": usage}, headers={"X-Hermes-Session-Id": done.session_id})
