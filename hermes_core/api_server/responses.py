"""`/v1/responses`: OpenAI's Responses API over the agent, with stored responses.

A response answers in a stored session. `previous_response_id` goes on from a stored response
(in its session when nothing came after it there, else in a fork of the session up to it);
`conversation` names a chain whose latest response is the previous one; `instructions` carry over
from the previous response when not given again. The tools the agent ran appear in `output` as
`function_call` and `function_call_output` items (already run: the caller has nothing to do).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from hermes_core import Messages, MemoryStoreError, StateUnavailableError

from .core import flag, new_id, new_session_id, unavailable
from .http import ApiError, Json, sse
from .inputs import responses_conversation
from .keys import ApiKey
from .turns import Ask, TurnDone

if TYPE_CHECKING:
    from .core import Core, RouteMaker

__all__ = ["Responses", "output_items"]


def _message(text: str, status: str = "completed") -> dict[str, Any]:
    return {"type": "message", "id": new_id("msg_"), "status": status, "role": "assistant",
            "content": [{"type": "output_text", "text": text, "annotations": []}]}


def _call(call_id: str, name: str, arguments: str, status: str = "completed") -> dict[str, Any]:
    return {"type": "function_call", "id": new_id("fc_"), "call_id": call_id, "name": name, "arguments": arguments,
            "status": status}


def _call_output(call_id: str, output: str) -> dict[str, Any]:
    return {"type": "function_call_output", "id": new_id("fco_"), "call_id": call_id, "output": output,
            "status": "completed"}


def output_items(added: Messages) -> list[dict[str, Any]]:
    """The `output` of a turn from the messages it added: text, tool calls and their results."""
    items: list[dict[str, Any]] = []
    for message in added:
        role, content = message.get("role"), message.get("content")
        if role == "assistant":
            if isinstance(content, str) and content.strip():
                items.append(_message(content))
            for call in message.get("tool_calls") or ():
                function = call.get("function") or {}
                items.append(_call(str(call.get("id", "")), str(function.get("name", "")),
                                   str(function.get("arguments", ""))))
        elif role == "tool":
            items.append(_call_output(str(message.get("tool_call_id", "")), str(content or "")))
    return items


class _StreamedItems:
    """The Responses stream events of a turn, as its events come, and the items they built."""

    def __init__(self) -> None:
        self.seq = 0
        self.items: list[dict[str, Any]] = []
        self._text: list[str] | None = None  # the open message's text so far
        self._calls: dict[str, dict[str, Any]] = {}

    def event(self, kind: str, **data: Any) -> str:
        payload = {"type": kind, "sequence_number": self.seq, **data}
        self.seq += 1
        return sse(payload, event=kind)

    def delta(self, text: str) -> list[str]:
        out = []
        if self._text is None:
            self._text = []
            self.items.append(_message("", "in_progress") | {"content": []})
            out.append(self.event("response.output_item.added", output_index=len(self.items) - 1,
                                  item=self.items[-1]))
            out.append(self.event("response.content_part.added", item_id=self.items[-1]["id"],
                                  output_index=len(self.items) - 1, content_index=0,
                                  part={"type": "output_text", "text": "", "annotations": []}))
        self._text.append(text)
        out.append(self.event("response.output_text.delta", item_id=self.items[-1]["id"],
                              output_index=len(self.items) - 1, content_index=0, delta=text, logprobs=[]))
        return out

    def close_message(self) -> list[str]:
        if self._text is None:
            return []
        text, self._text = "".join(self._text), None
        item, index = self.items[-1], len(self.items) - 1
        part = {"type": "output_text", "text": text, "annotations": []}
        item.update(status="completed", content=[part])
        return [self.event("response.output_text.done", item_id=item["id"], output_index=index, content_index=0,
                           text=text, logprobs=[]),
                self.event("response.content_part.done", item_id=item["id"], output_index=index, content_index=0,
                           part=part),
                self.event("response.output_item.done", output_index=index, item=item)]

    def tool(self, data: dict[str, Any]) -> list[str]:
        out = self.close_message()
        item = _call(data["call_id"], data["name"], data["arguments"], "in_progress")
        self.items.append(item)
        self._calls[data["call_id"]] = item
        return [*out, self.event("response.output_item.added", output_index=len(self.items) - 1, item=item)]

    def tool_result(self, data: dict[str, Any]) -> list[str]:
        call = self._calls.pop(data["call_id"], None)
        out = []
        if call is not None:
            call["status"] = "completed"
            out.append(self.event("response.output_item.done", output_index=self.items.index(call), item=call))
        item = _call_output(data["call_id"], data["result"])
        self.items.append(item)
        index = len(self.items) - 1
        return [*out, self.event("response.output_item.added", output_index=index, item=item),
                self.event("response.output_item.done", output_index=index, item=item)]


class Responses:
    """The Responses routes of one `ApiServer`."""

    def __init__(self, server: Core) -> None:
        self.server = server

    def routes(self, route: RouteMaker) -> list[Route]:
        return [route("/v1/responses", "responses", self._create, ["POST"]),
                route("/v1/responses/{response_id}", "responses", self._get, ["GET"]),
                route("/v1/responses/{response_id}", "responses", self._delete, ["DELETE"])]

    async def _get(self, request: Request, rights: ApiKey, user: str) -> Response:
        response_id = request.path_params["response_id"]
        found = self.server.store.response(response_id, rights.name)
        if found is None:
            raise ApiError(404, f"Response not found: {response_id}", code="response_not_found")
        return Json(found[0])

    async def _delete(self, request: Request, rights: ApiKey, user: str) -> Response:
        response_id = request.path_params["response_id"]
        if not self.server.store.delete_response(response_id, rights.name):
            raise ApiError(404, f"Response not found: {response_id}", code="response_not_found")
        return Json({"id": response_id, "object": "response", "deleted": True})

    def _ask(self, body: dict[str, Any], rights: ApiKey, user: str) -> tuple[Ask, dict[str, Any] | None]:
        """The turn a request asks for, and the previous response it goes on from (None: none)."""
        conversation = responses_conversation(body)
        previous_id, name = body.get("previous_response_id"), body.get("conversation")
        if previous_id is not None and name is not None:
            raise ApiError(400, "Cannot use both 'conversation' and 'previous_response_id'", param="conversation")
        for field, value in (("previous_response_id", previous_id), ("conversation", name)):
            if value is not None and (not isinstance(value, str) or not value):
                raise ApiError(400, f"{field} must be a non-empty string", param=field)
        if name is not None:
            previous_id = self.server.store.conversation(name, rights.name)
        ask = Ask(conversation.prompt, rights, new_session_id(), user=user, history=conversation.history,
                  instructions=conversation.instructions)
        if previous_id is None:
            return ask, None
        field = "conversation" if name is not None else "previous_response_id"
        found = self.server.store.response(previous_id, rights.name)
        if found is None:
            raise ApiError(400, f"Previous response not found: {previous_id}", param=field,
                           code="previous_response_not_found")
        previous, session_id, seq = found
        stored = self.server.turns.store.show(session_id)
        if stored is None:
            raise ApiError(400, f"the session of response {previous_id} ({session_id}) no longer exists",
                           param=field, code="previous_response_not_found")
        if not ask.instructions and isinstance(previous.get("instructions"), str):
            ask.instructions = previous["instructions"]
        earlier = stored["messages"][:seq]
        if len(stored["messages"]) == seq and session_id not in self.server.turns.busy and not ask.history:
            ask.session_id, ask.resume, ask.history = session_id, True, []  # nothing came after it: go on
        else:
            ask.history = [*earlier, *ask.history]  # a fork of the session up to that response
        return ask, previous

    async def _create(self, request: Request, rights: ApiKey, user: str) -> Response:
        server = self.server
        body = await server.body(request)
        ask, previous = self._ask(body, rights, user)
        ask.stream = flag(body.get("stream"), "stream")
        store = flag(body.get("store", True), "store")
        metadata = body.get("metadata") if isinstance(body.get("metadata"), dict) else {}
        base: dict[str, Any] = {
            "id": new_id("resp_"), "object": "response", "created_at": int(time.time()), "status": "in_progress",
            "model": server.model_name, "output": [], "previous_response_id": previous["id"] if previous else None,
            "instructions": ask.instructions or None, "error": None, "incomplete_details": None,
            "metadata": metadata, "parallel_tool_calls": True, "tool_choice": "auto", "tools": [],
            "store": store, "usage": None}
        conversation = body.get("conversation")
        headers = {"X-Hermes-Session-Id": ask.session_id}
        server.admit()

        def finish(done: TurnDone, items: list[dict[str, Any]]) -> dict[str, Any]:
            response = _finished(base, done, items)
            if store:
                server.store.save_response(response, rights.name, done.session_id, done.seq, conversation)
            return response

        if ask.stream:
            return StreamingResponse(self._stream(server.events(ask), base, finish), media_type="text/event-stream",
                                     headers={**headers, "Cache-Control": "no-cache", "X-Accel-Buffering": "no"})
        try:
            done = await server.turn(ask)
        except Exception as exc:  # noqa: BLE001 - said to the caller
            raise server.failure(exc) from None
        return Json(finish(done, output_items(done.added)), headers=headers)

    async def _stream(self, events: AsyncIterator[tuple[str, Any]], base: dict[str, Any],
                      finish: Callable[[TurnDone, list[dict[str, Any]]], dict[str, Any]]) -> AsyncIterator[str]:
        built = _StreamedItems()
        yield built.event("response.created", response=base)
        yield built.event("response.in_progress", response=base)
        async with contextlib.aclosing(events):  # type: ignore[type-var]
            async for kind, data in events:
                if kind == "delta":
                    for line in built.delta(data):
                        yield line
                elif kind == "tool":
                    for line in built.tool(data):
                        yield line
                elif kind == "tool_result":
                    for line in built.tool_result(data):
                        yield line
                elif kind == "keepalive":
                    yield ": keepalive\n\n"
                elif kind == "error":
                    for line in built.close_message():
                        yield line
                    error = self.server.failure(data)
                    failed = {**base, "status": "failed", "output": built.items,
                              "error": {"code": error.code or "server_error", "message": error.message}}
                    yield built.event("response.failed", response=failed)
                elif kind == "done":
                    for line in built.close_message():
                        yield line
                    try:
                        finished = finish(data, built.items)
                    except MemoryStoreError as exc:  # answered, but not stored: said, never a traceback
                        error = unavailable(exc) if isinstance(exc, StateUnavailableError) else \
                            ApiError(500, str(exc), type="server_error", code="state_error")
                        yield built.event("response.failed", response={
                            **base, "status": "failed", "output": built.items,
                            "error": {"code": error.code, "message": error.message}})
                        continue
                    yield built.event(f"response.{_status(data)}", response=finished)


def _status(done: TurnDone) -> str:
    if done.result is None or done.cancelled:
        return "incomplete"
    return "incomplete" if done.result.stopped else "completed"


def _finished(base: dict[str, Any], done: TurnDone, items: list[dict[str, Any]]) -> dict[str, Any]:
    result = done.result
    prompt, answer = (result.input_tokens, result.output_tokens) if result is not None else (0, 0)
    status = _status(done)
    details = None
    if status == "incomplete":
        details = {"reason": "cancelled" if result is None or done.cancelled else str(result.stopped)}
    return {**base, "status": status, "output": items, "incomplete_details": details,
            "usage": {"input_tokens": prompt, "input_tokens_details": {"cached_tokens": 0},
                      "output_tokens": answer, "output_tokens_details": {"reasoning_tokens": 0},
                      "total_tokens": prompt + answer}}
