"""`GET /openapi.json`: the API server's OpenAPI 3.1 document, for client generators and fuzzers.

The document is built from the app's own route table (`document(routes, scopes)`): each route's
method and path looks up its operation here, and a route with none stops the app from being
built, so the document cannot leave a route out. The schemas say what each route takes and
answers; a field the server ignores is allowed (`additionalProperties`), as OpenAI's clients send
more than this server reads.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from starlette.routing import Route

__all__ = ["OPERATIONS", "document"]


def _ref(name: str) -> dict[str, Any]:
    return {"$ref": f"#/components/schemas/{name}"}


def _obj(properties: dict[str, Any], required: Iterable[str] = (), **more: Any) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(required), **more}


_STR: dict[str, Any] = {"type": "string"}
_INT: dict[str, Any] = {"type": "integer"}
_BOOL: dict[str, Any] = {"type": "boolean"}
_NUM: dict[str, Any] = {"type": "number"}
_ANY_OBJECT: dict[str, Any] = {"type": "object"}


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    return {"anyOf": [schema, {"type": "null"}]}


_CONTENT = {"anyOf": [_STR, {"type": "array", "items": {"anyOf": [_STR, _ref("ContentPart")]}}, {"type": "null"}]}
_USAGE = _obj({"input_tokens": _INT, "output_tokens": _INT}, ["input_tokens", "output_tokens"])
_FLAG = {"anyOf": [_BOOL, {"type": "null"}, {"type": "string", "enum": ["true", "false"]}]}

SCHEMAS: dict[str, Any] = {
    "Error": _obj({"error": _obj({"message": _STR, "type": _STR, "param": _nullable(_STR), "code": _nullable(_STR)},
                                ["message", "type"])}, ["error"]),
    "Health": _obj({"status": {"type": "string", "enum": ["ok", "degraded"]}, "platform": _STR, "version": _STR,
                    "host": _STR, "reason": _STR}, ["status", "platform", "version", "host"]),
    "ModelList": _obj({"object": {"const": "list"}, "data": {"type": "array", "items": _obj(
        {"id": _STR, "object": {"const": "model"}, "created": _INT, "owned_by": _STR},
        ["id", "object", "created", "owned_by"])}}, ["object", "data"]),
    "Capabilities": _obj({"object": _STR, "platform": _STR, "version": _STR, "model": _STR, "auth": _obj(
        {"type": _STR, "required": _BOOL, "key": _STR}, ["type", "required", "key"]), "runtime": _ANY_OBJECT,
        "features": _ANY_OBJECT, "endpoints": {"type": "object", "additionalProperties": _BOOL}},
        ["object", "platform", "version", "model", "auth", "features", "endpoints"]),
    "ContentPart": _obj({"type": _STR, "text": _STR}, ["type"]),
    "ChatMessage": _obj({"role": {"type": "string", "enum": ["system", "developer", "user", "assistant", "tool",
                                                             "function"]}, "content": _CONTENT}, ["role"]),
    "ChatCompletionRequest": _obj({"model": _STR, "messages": {"type": "array", "minItems": 1,
                                                               "items": _ref("ChatMessage")}, "stream": _FLAG},
                                  ["messages"], example={"messages": [{"role": "user", "content": "What time is it?"}]}),
    "ChatCompletion": _obj({
        "id": _STR, "object": {"const": "chat.completion"}, "created": _INT, "model": _STR,
        "choices": {"type": "array", "items": _obj({"index": _INT, "message": _obj(
            {"role": {"const": "assistant"}, "content": _STR}, ["role", "content"]),
            "finish_reason": _STR}, ["index", "message", "finish_reason"])},
        "usage": _obj({"prompt_tokens": _INT, "completion_tokens": _INT, "total_tokens": _INT},
                      ["prompt_tokens", "completion_tokens", "total_tokens"])},
        ["id", "object", "created", "model", "choices", "usage"]),
    "InputItem": _obj({"type": _STR, "role": _STR, "content": _CONTENT}),
    "ResponseRequest": _obj({
        "model": _STR, "input": {"anyOf": [_STR, {"type": "array", "items": {"anyOf": [_STR, _ref("InputItem")]}}]},
        "instructions": _nullable(_STR), "previous_response_id": _nullable(_STR), "conversation": _nullable(_STR),
        "store": _FLAG, "stream": _FLAG, "metadata": _ANY_OBJECT}, ["input"], example={"input": "What time is it?"}),
    "Response": _obj({
        "id": _STR, "object": {"const": "response"}, "created_at": _INT, "status": _STR, "model": _STR,
        "output": {"type": "array", "items": _obj({"type": _STR, "id": _STR, "status": _STR}, ["type", "id"])},
        "previous_response_id": _nullable(_STR), "instructions": _nullable(_STR), "error": _nullable(_ANY_OBJECT),
        "incomplete_details": _nullable(_ANY_OBJECT), "metadata": _ANY_OBJECT, "store": _BOOL,
        "usage": _nullable(_ANY_OBJECT)}, ["id", "object", "created_at", "status", "model", "output"]),
    "Deleted": _obj({"id": _STR, "object": _STR, "deleted": {"const": True}}, ["id", "object", "deleted"]),
    "RunRequest": _obj({"model": _STR, "input": {"anyOf": [_STR, {"type": "array", "items": {
        "anyOf": [_STR, _ref("InputItem")]}}]}, "instructions": _nullable(_STR), "session_id": _nullable(_STR)},
        ["input"], example={"input": "What time is it?"}),
    "RunStarted": _obj({"run_id": _STR, "status": _STR, "replayed": _BOOL}, ["run_id", "status", "replayed"]),
    "Run": _obj({"object": {"const": "hermes.run"}, "run_id": _STR, "status": _STR, "created_at": _NUM,
                 "updated_at": _NUM, "session_id": _STR, "model": _STR, "last_event": _nullable(_STR),
                 "output": _STR, "usage": _ANY_OBJECT, "error": _ANY_OBJECT}, ["run_id", "status"]),
    "Session": _obj({"id": _STR, "source": _STR, "user_id": _STR, "model": _STR, "title": _nullable(_STR),
                     "started_at": _NUM, "last_active": _NUM, "message_count": _INT, "input_tokens": _INT,
                     "output_tokens": _INT, "estimated_cost_usd": _nullable(_NUM)}, ["id", "message_count"]),
    "SessionList": _obj({"object": {"const": "list"}, "data": {"type": "array", "items": _ref("Session")},
                         "limit": _INT, "offset": _INT, "has_more": _BOOL}, ["object", "data", "has_more"]),
    "SessionOne": _obj({"object": {"const": "hermes.session"}, "session": _ref("Session"), "forked_from": _STR},
                       ["object", "session"]),
    "SessionMessages": _obj({"object": {"const": "list"}, "session_id": _STR, "data": {
        "type": "array", "items": _ANY_OBJECT}, "pagination": _obj(
        {"limit": _INT, "offset": _INT, "returned": _INT, "total": _INT}, ["limit", "offset", "returned", "total"])},
        ["object", "session_id", "data", "pagination"]),
    "SessionChatRequest": _obj({"message": _CONTENT, "input": _CONTENT, "instructions": _nullable(_STR),
                                "system_message": _nullable(_STR)}, example={"message": "And now?"}),
    "SessionChat": _obj({"object": {"const": "hermes.session.chat.completion"}, "session_id": _STR, "message": _obj(
        {"role": {"const": "assistant"}, "content": _STR}, ["role", "content"]), "usage": _USAGE},
        ["object", "session_id", "message", "usage"]),
    "Job": _obj({"id": _STR, "name": _STR, "prompt": _STR, "schedule": _ANY_OBJECT, "enabled": _BOOL,
                 "state": _STR, "deliver": _STR}, ["id"]),
    "JobRequest": _obj({"name": _STR, "schedule": _STR, "prompt": _nullable(_STR), "deliver": _nullable(_STR),
                        "skills": _nullable({"type": "array", "items": _STR}), "repeat": {}}, ["name", "schedule"],
                       example={"name": "digest", "schedule": "every 2h", "prompt": "Summarise the inbox"}),
    "JobChange": _obj({"name": _STR, "schedule": _STR, "prompt": _STR, "deliver": _STR,
                       "skills": {"type": "array", "items": _STR}, "repeat": {}, "enabled": _BOOL},
                      additionalProperties=False, example={"prompt": "Summarise the inbox briefly"}),
    "JobOne": _obj({"job": _ref("Job")}, ["job"]),
    "JobList": _obj({"jobs": {"type": "array", "items": _ref("Job")}}, ["jobs"]),
    "Ok": _obj({"ok": {"const": True}}, ["ok"]),
    "ServerSentEvent": _obj({"event": _STR, "data": _STR, "id": _STR, "retry": _INT}, ["data"],
                            description="one event; `data` is JSON, or `[DONE]` at the end of a chat stream"),
}

_WHY = {400: "a malformed request (the error's `param` names the field)", 401: "no key, or a wrong one",
        403: "the key may not call these endpoints", 404: "no such id, or another key's",
        409: "busy, or in conflict with an earlier request", 413: "the body is larger than api_server.max_body_bytes",
        415: "the body is not JSON", 421: "the Host is not an address of this server",
        429: "too many turns at once, or the key's budget is spent", 502: "the model failed",
        503: "the shared database cannot be reached now (Retry-After)"}


def _json(schema: str | dict[str, Any], why: str, *, stream: bool = False) -> dict[str, Any]:
    content: dict[str, Any] = {"application/json": {"schema": _ref(schema) if isinstance(schema, str) else schema}}
    if stream:
        content["text/event-stream"] = {"schema": _ref("ServerSentEvent")}
    return {"description": why, "content": content}


def _op(summary: str, ok: tuple[int, str | dict[str, Any], str], errors: Iterable[int] = (), *, body: str | None = None,
        stream: bool = False, params: Iterable[dict[str, Any]] = ()) -> dict[str, Any]:
    status, schema, why = ok
    operation: dict[str, Any] = {"summary": summary, "responses": {
        str(status): _json(schema, why, stream=stream),
        **{str(code): _json("Error", _WHY[code]) for code in errors}}}
    if body is not None:
        operation["requestBody"] = {"required": True, "content": {"application/json": {"schema": _ref(body)}}}
    if params:
        operation["parameters"] = list(params)
    return operation


def _operation_id(method: str, path: str) -> str:
    words = [part.strip("{}").replace(".", "_") for part in path.split("/") if part]
    return "_".join([method.lower(), *words])


def _path(name: str, **schema: Any) -> dict[str, Any]:
    return {"name": name, "in": "path", "required": True, "schema": {"type": "string", **schema}}


def _header(name: str, why: str) -> dict[str, Any]:
    return {"name": name, "in": "header", "required": False, "description": why,
            "schema": {"type": "string", "maxLength": 256, "pattern": "^[^\\x00-\\x1f\\x7f]*$"}}


def _query(name: str, schema: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "in": "query", "required": False, "schema": schema}


_TURN = (400, 409, 413, 429, 502)
_SESSION_KEY = _header("X-Hermes-Session-Key", "who or what the client is (webui:user-42), handed to the plugins "
                       "as gateway_session_key and echoed; selects no session (403 on a server with no keys)")
_PAGE = (_query("limit", {"type": "integer", "minimum": 0}), _query("offset", {"type": "integer", "minimum": 0}))
_JOB = _path("job_id", pattern="^[a-f0-9]{12}$")
_STREAMED = {"description": "the events (server-sent)",
             "content": {"text/event-stream": {"schema": _ref("ServerSentEvent")}}}

OPERATIONS: dict[tuple[str, str], dict[str, Any]] = {
    ("GET", "/health"): _op("Health (no key needed)", (200, "Health", "ok"), ()),
    ("GET", "/v1/health"): _op("Health (no key needed)", (200, "Health", "ok"), ()),
    ("GET", "/openapi.json"): _op("This document (any valid key)", (200, _ANY_OBJECT, "the OpenAPI document")),
    ("GET", "/v1/models"): _op("The one model", (200, "ModelList", "the models")),
    ("GET", "/v1/capabilities"): _op("What this server offers, and what the calling key may call",
                                     (200, "Capabilities", "the capabilities")),
    ("POST", "/v1/chat/completions"): _op("A turn of the agent (OpenAI's chat completions)",
                                          (200, "ChatCompletion", "the answer"), (*_TURN, 403, 404),
                                          body="ChatCompletionRequest", stream=True, params=[_header(
                                              "X-Hermes-Session-Id", "go on with this stored session"),
                                              _SESSION_KEY]),
    ("POST", "/v1/responses"): _op("A turn of the agent (OpenAI's Responses API)", (200, "Response", "the response"),
                                   _TURN, body="ResponseRequest", stream=True),
    ("GET", "/v1/responses/{response_id}"): _op("A stored response", (200, "Response", "the response"), (404,),
                                                params=[_path("response_id")]),
    ("DELETE", "/v1/responses/{response_id}"): _op("Delete a stored response", (200, "Deleted", "deleted"), (404,),
                                                   params=[_path("response_id")]),
    ("POST", "/v1/runs"): _op("Start a run (Idempotency-Key makes a retry safe)", (202, "RunStarted", "started"),
                              (*_TURN, 403, 404), body="RunRequest", params=[
                                  {"name": "Idempotency-Key", "in": "header", "required": False,
                                   "schema": {"type": "string", "pattern": "^[\\x21-\\x7e]{1,255}$"}},
                                  _SESSION_KEY]),
    ("GET", "/v1/runs/{run_id}"): _op("A run's status", (200, "Run", "its status"), (404,), params=[_path("run_id")]),
    ("GET", "/v1/runs/{run_id}/events"): _op("A run's events, from the first", (200, _ANY_OBJECT, "its events"), (404,),
                                             params=[_path("run_id")]),
    ("POST", "/v1/runs/{run_id}/stop"): _op("Stop a run", (200, "Run", "its status, or stopping"), (404,),
                                            params=[_path("run_id")]),
    ("POST", "/v1/runs/{run_id}/approval"): _op("Answer an approval (this host asks for none: 409)",
                                                (409, "Error", "no approval is pending"), (404,),
                                                params=[_path("run_id")]),
    ("GET", "/api/sessions"): _op("The sessions the key may reach, latest first", (200, "SessionList", "a page"),
                                  (400,), params=[*_PAGE, _query("user", _STR)]),
    ("GET", "/api/sessions/{session_id}"): _op("A session", (200, "SessionOne", "the session"), (404,),
                                               params=[_path("session_id")]),
    ("GET", "/api/sessions/{session_id}/messages"): _op("A session's messages", (200, "SessionMessages", "a page"),
                                                        (400, 404), params=[_path("session_id"), *_PAGE]),
    ("POST", "/api/sessions/{session_id}/fork"): _op("A copy of a session", (201, "SessionOne", "the copy"), (404,),
                                                     params=[_path("session_id")]),
    ("POST", "/api/sessions/{session_id}/chat"): _op("A turn in a session", (200, "SessionChat", "the answer"),
                                                     (*_TURN, 404), body="SessionChatRequest",
                                                     params=[_path("session_id")]),
    ("GET", "/api/jobs"): _op("The cron jobs the key may reach", (200, "JobList", "the jobs"),
                              params=[_query("include_disabled", _STR)]),
    ("POST", "/api/jobs"): _op("Add a cron job", (200, "JobOne", "the job"), (400, 413), body="JobRequest"),
    ("GET", "/api/jobs/{job_id}"): _op("A cron job", (200, "JobOne", "the job"), (400, 404), params=[_JOB]),
    ("PATCH", "/api/jobs/{job_id}"): _op("Change a cron job", (200, "JobOne", "the job"), (400, 404, 413),
                                         body="JobChange", params=[_JOB]),
    ("DELETE", "/api/jobs/{job_id}"): _op("Remove a cron job", (200, "Ok", "removed"), (400, 404), params=[_JOB]),
    **{("POST", f"/api/jobs/{{job_id}}/{verb}"): _op(f"{verb.title()} a cron job", (200, "JobOne", "the job"),
                                                      (400, 404), params=[_JOB])
       for verb in ("pause", "resume", "run")},
}
OPERATIONS[("GET", "/v1/runs/{run_id}/events")]["responses"]["200"] = _STREAMED
for _health in ("/health", "/v1/health"):
    OPERATIONS[("GET", _health)]["responses"]["503"] = _json("Health", "degraded: the store cannot be reached")

# What an answer holds that names another operation's id (OpenAPI links: for client generators,
# and for a fuzzer's sequences of calls): (status, {(method, path): {parameter: runtime expression}}).
_JOB_ID = {"job_id": "$response.body#/job/id"}
_SESSION_ID = {"session_id": "$response.header.X-Hermes-Session-Id"}
LINKS: dict[tuple[str, str], tuple[int, dict[tuple[str, str], dict[str, str]]]] = {
    ("POST", "/api/jobs"): (200, {(method, path): _JOB_ID for method, path in OPERATIONS
                                  if path.startswith("/api/jobs/{job_id}")}),
    ("POST", "/v1/responses"): (200, {(method, "/v1/responses/{response_id}"): {"response_id": "$response.body#/id"}
                                      for method in ("GET", "DELETE")}),
    ("POST", "/v1/runs"): (202, {(method, path): {"run_id": "$response.body#/run_id"} for method, path in OPERATIONS
                                 if path.startswith("/v1/runs/{run_id}")}),
    ("POST", "/v1/chat/completions"): (200, {(method, path): _SESSION_ID for method, path in OPERATIONS
                                             if path.startswith("/api/sessions/{session_id}")}),
}
for (_method, _path_), (_status, _targets) in LINKS.items():
    OPERATIONS[(_method, _path_)]["responses"][str(_status)]["links"] = {
        _operation_id(method, path): {"operationId": _operation_id(method, path), "parameters": parameters}
        for (method, path), parameters in _targets.items()}

_KEYED = (400, 401, 503)  # any keyed route: a bad X-Hermes-User, a missing key, the shared database down
_USER = _header("X-Hermes-User", "the caller, within the key (stored with the sessions it starts)")
_SESSION_HEADER = {"X-Hermes-Session-Id": {"description": "the stored session the turn answered in",
                                           "schema": {"type": "string"}}}
for _key in (("POST", "/v1/chat/completions"), ("POST", "/v1/responses"), ("POST", "/v1/runs"),
             ("POST", "/api/sessions/{session_id}/chat")):
    next(iter(OPERATIONS[_key]["responses"].values()))["headers"] = dict(_SESSION_HEADER)
for _key in (("POST", "/v1/chat/completions"), ("POST", "/v1/runs")):
    next(iter(OPERATIONS[_key]["responses"].values()))["headers"]["X-Hermes-Session-Key"] = {
        "description": "the request's X-Hermes-Session-Key, when it sent one", "schema": {"type": "string"}}
_CHANGING = {"POST", "PATCH", "PUT", "DELETE"}


def document(routes: Iterable[Route], scopes: Mapping[tuple[str, str], str | None], *, version: str,
             model: str) -> dict[str, Any]:
    """The OpenAPI document of `routes`; `scopes` maps each keyed route's (method, path) to the
    endpoints a named key needs for it (None: any key); a route not in it needs no key. A route
    with no operation here is a `LookupError` (the app is not built, so this document never
    leaves a route out)."""
    paths: dict[str, dict[str, Any]] = {}
    for route in routes:
        for method in sorted((route.methods or set()) - {"HEAD"}):
            key = (method, route.path)
            if key not in OPERATIONS:
                raise LookupError(f"the API server route {method} {route.path} has no OpenAPI operation: add it to "
                                  "OPERATIONS in hermes_core/api_server/openapi.py")
            operation = {**OPERATIONS[key], "operationId": _operation_id(method, route.path)}
            responses = {**operation["responses"], "421": _json("Error", _WHY[421])}
            if key in scopes:
                scope = scopes[key]
                for code in (*_KEYED, *((403,) if scope else ()), *((415,) if method in _CHANGING else ())):
                    responses.setdefault(str(code), _json("Error", _WHY[code]))
                if scope:
                    operation["x-hermes-endpoints"] = scope
                operation["parameters"] = [*operation.get("parameters", ()), _USER]
            else:
                operation["security"] = []
            operation["responses"] = responses
            paths.setdefault(route.path, {})[method.lower()] = operation
    return {"openapi": "3.1.0",
            "info": {"title": "hermes-core API server", "version": version,
                     "description": f"The agent behind an OpenAI-compatible API; its one model is {model!r}."},
            "paths": paths, "security": [{"bearer": []}],
            "components": {"schemas": SCHEMAS, "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}}}}

