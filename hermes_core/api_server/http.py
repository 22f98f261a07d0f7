"""The HTTP edges of the API server: OpenAI-style error objects, request bodies read with a size
limit and parsed into one clear error, and server-sent events."""

from __future__ import annotations

import json
import re
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from hermes_core import storable_json
from hermes_core.hosting import loads_sent

__all__ = ["ApiError", "Json", "error_response", "read_json", "sse", "header_value", "dumps", "one_route_per_path"]

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


class ApiError(Exception):
    """A request the server refuses: the HTTP status and OpenAI's error object fields."""

    def __init__(self, status: int, message: str, *, type: str = "invalid_request_error", param: str | None = None,
                 code: str | None = None, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.type, self.param, self.code = status, message, type, param, code
        self.headers = headers or {}


def dumps(value: Any) -> str:
    """Compact JSON for the wire that any text can be put in (`storable_json`)."""
    return storable_json(value, separators=(",", ":"), default=str)


class Json(JSONResponse):
    """A JSON response that any text can be put in (see `dumps`)."""

    def render(self, content: Any) -> bytes:
        return dumps(content).encode("utf-8")


def error_response(error: ApiError) -> Json:
    body = {"error": {"message": error.message, "type": error.type, "param": error.param, "code": error.code}}
    return Json(body, status_code=error.status, headers=error.headers)


def sse(data: Any, event: str | None = None) -> str:
    """One server-sent event (`data` as JSON unless it is a string, such as `[DONE]`)."""
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {data if isinstance(data, str) else dumps(data)}\n\n"


async def read_json(request: Request, limit: int) -> dict[str, Any]:
    """The request's JSON object body, at most `limit` bytes (413 beyond, checked before and while
    reading); malformed JSON, a body that is not an object or a bad Content-Length is a 400. An
    escaped lone surrogate ("\\ud800", which JSON allows) is read as U+FFFD (`hosting.loads_sent`):
    no field a route keeps (a conversation's name, metadata, a job) can then fail to encode."""
    declared = request.headers.get("content-length")
    if declared is not None:
        if not declared.isdigit():
            raise ApiError(400, "Content-Length must be a number of bytes", code="invalid_content_length")
        if int(declared) > limit:
            raise ApiError(413, f"the request body is larger than {limit:,} bytes (api_server.max_body_bytes)",
                           code="body_too_large")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise ApiError(413, f"the request body is larger than {limit:,} bytes (api_server.max_body_bytes)",
                           code="body_too_large")
        chunks.append(chunk)
    raw = b"".join(chunks)
    try:
        body = loads_sent(raw)
    except (ValueError, RecursionError) as exc:
        where = f" ({exc.msg} at line {exc.lineno} column {exc.colno})" if isinstance(exc, json.JSONDecodeError) else ""
        raise ApiError(400, f"Invalid JSON in request body{where}", code="invalid_json") from None
    if not isinstance(body, dict):
        raise ApiError(400, "Request body must be a JSON object", code="invalid_json")
    return body


def header_value(request: Request, name: str, *, limit: int = 256) -> str:
    """A text header's value ("" when absent): one line, at most `limit` characters (400 otherwise)."""
    value = request.headers.get(name, "")
    if _CONTROL.search(value):
        raise ApiError(400, f"the {name} header holds a control character", param=name)
    if len(value) > limit:
        raise ApiError(400, f"the {name} header is longer than {limit} characters", param=name)
    return value.strip()


def one_route_per_path(routes: list[Route]) -> list[Route]:
    """`routes` with those of one path joined into one route, so that a method the path does not
    take gets a 405 whose `Allow` names every method it does take (Starlette answers for the
    first route of the path alone)."""
    by_path: dict[str, list[Route]] = {}
    for route in routes:
        by_path.setdefault(route.path, []).append(route)
    joined = []
    for path, same in by_path.items():
        if len(same) == 1:
            joined.append(same[0])
            continue
        handlers = {method: route.endpoint for route in same for method in route.methods or ()}

        async def endpoint(request: Request, handlers: dict[str, Any] = handlers) -> Response:
            return await handlers[request.method](request)  # type: ignore[no-any-return]

        joined.append(Route(path, endpoint, methods=sorted(handlers)))
    return joined
