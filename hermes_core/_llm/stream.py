"""A streamed chat completion: its chunks folded into the completion a non-streamed request
would have answered, its text handed on as it arrives.

The host streams only the agent's own requests, and only when someone watches: a terminal
showing the answer, or a plugin listening to the `on_stream_*` hooks. Everything after the
stream (reading the answer, usage and cost, `post_api_request`, the stored messages) sees the
same completion body either way, so streaming changes what a person sees and when, nothing else.
Chunks are folded as the openai SDK folds them: strings concatenated (a tool call's id, name
and arguments arrive in pieces on some servers), by choice and tool-call `index`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from .._messages import storable_json

if TYPE_CHECKING:
    from .routes import Route

__all__ = ["EmptyStream", "Folded", "StreamSink", "fold", "streams_from", "whole_answers_from"]

# (provider, model, base_url, with tools) whose server sent an empty stream: asked for whole
# answers for the rest of the process (llama-cpp-python's server cannot stream a request with tools).
_whole: set[tuple[str, str, str, bool]] = set()


class EmptyStream(ValueError):
    """The server ended a streamed answer without sending a single chunk."""


def streams_from(route: Route, tools: bool) -> bool:
    """Whether the agent's answers (to a request with or without `tools`) may be streamed from
    `route`: its `stream` key, and what it did before."""
    return route.stream and (route.provider, route.model, route.base_url, tools) not in _whole


def whole_answers_from(route: Route, tools: bool) -> None:
    """Remember that `route` cannot stream an answer to a request with (or without) `tools`."""
    _whole.add((route.provider, route.model, route.base_url, tools))


class StreamSink(Protocol):
    """Sees one streamed attempt: it began (`start`, with who answers), each piece of the answer's text as it
    arrives (`delta`), how it ended (`end`: finished, or broke off with a reason). A retry or
    a fallback after a broken stream starts again with `start`. It must not raise."""

    def start(self, provider: str, model: str) -> None: ...

    def delta(self, text: str) -> None: ...

    def end(self, text: str, finished: bool, error: str | None) -> None: ...


class Folded:
    """The completion built so far from a stream's chunks."""

    __slots__ = ("_calls", "_parts", "finish_reason", "head", "usage")

    def __init__(self) -> None:
        self._parts: list[str] = []
        self._calls: dict[int, dict[str, Any]] = {}
        self.finish_reason: str | None = None
        self.usage: Mapping[str, Any] | None = None
        self.head: dict[str, Any] = {}

    @property
    def text(self) -> str:
        return "".join(self._parts)

    def feed(self, chunk: Any) -> str:
        """Fold one chunk in; the text it added ("" for none)."""
        if not isinstance(chunk, Mapping):
            raise ValueError("a stream chunk is not a JSON object")
        for key in ("id", "model", "created", "system_fingerprint", "provider"):
            if chunk.get(key) is not None and key not in self.head:
                self.head[key] = chunk[key]
        if isinstance(chunk.get("usage"), Mapping):
            self.usage = chunk["usage"]
        added = ""
        for choice in chunk.get("choices") or ():
            if not isinstance(choice, Mapping) or choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta")
            if isinstance(delta, Mapping):
                content = delta.get("content")
                if isinstance(content, str) and content:
                    self._parts.append(content)
                    added += content
                for position, call in enumerate(delta.get("tool_calls") or ()):
                    if isinstance(call, Mapping):
                        self._call(call, position)
            if choice.get("finish_reason"):
                self.finish_reason = str(choice["finish_reason"])
        return added

    def _call(self, piece: Mapping[str, Any], position: int) -> None:
        index = piece.get("index")
        index = index if isinstance(index, int) else position
        call = self._calls.setdefault(index, {"id": "", "type": "function", "function": {"name": "", "arguments": ""}})
        if isinstance(piece.get("id"), str):
            call["id"] += piece["id"]
        if isinstance(piece.get("type"), str):
            call["type"] = piece["type"]
        function = piece.get("function")
        if isinstance(function, Mapping):
            for key in ("name", "arguments"):
                if isinstance(function.get(key), str):
                    call["function"][key] += function[key]

    def body(self) -> bytes:
        """The folded completion as the JSON body a non-streamed request would have had."""
        message: dict[str, Any] = {"role": "assistant", "content": self.text or None}
        if self._calls:
            message["tool_calls"] = [self._calls[index] for index in sorted(self._calls)]
        completion = {**self.head, "object": "chat.completion",
                      "choices": [{"index": 0, "message": message, "finish_reason": self.finish_reason}]}
        if self.usage is not None:
            completion["usage"] = dict(self.usage)
        return storable_json(completion).encode()  # a lone surrogate in the text: escaped


def fold(chunks: Iterable[Any], route: Route, sink: StreamSink, reason: Callable[[BaseException], str]) -> bytes:
    """Fold a stream's chunks, telling `sink` as it goes (`start` at the first chunk, each piece
    of text, `end`); the completion's body. A stream that breaks off ends the sink with
    `reason(exc)` before the exception goes on to the caller; one that sends nothing at all
    raises `EmptyStream` (the sink has heard nothing of it)."""
    folded = Folded()
    started = False
    try:
        for chunk in chunks:
            if not started:
                sink.start(route.provider, route.model)
                started = True
            added = folded.feed(chunk)
            if added:
                sink.delta(added)
    except BaseException as exc:
        if started:
            sink.end(folded.text, False, reason(exc))
        raise
    if not started:
        raise EmptyStream("the server ended the stream without sending anything")
    sink.end(folded.text, True, None)
    return folded.body()
