"""The reference agent loop: a conversation with the configured model, the plugins' tools and
the active engines, the lifecycle hooks around every LLM and tool call, stored as it goes.

One turn (`Agent.ask`): the user message is stored; memory `prefetch` and `pre_llm_call`
context go into that request's copy of the user message; the context engine compresses
first when it says so; the model answers with text (the turn ends, `sync_turn`) or tool
calls (each dispatched through the registry, `pre_tool_call`/`post_tool_call` around it, its
result stored and sent back with the call's id), up to `agent.max_iterations` rounds.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

import attrs

from .. import config_keys as keys
from .._errors import SessionNotFoundError
from .._manager import PluginManager
from .._messages import repair_tool_pairing
from .display import Display
from .store import SessionStore

__all__ = ["Agent", "TurnResult", "DEFAULT_SYSTEM_PROMPT"]

DEFAULT_SYSTEM_PROMPT = (
    "You are Hermes, a helpful agent. Use the tools you are given when they help; answer plainly and briefly."
)


@attrs.frozen
class TurnResult:
    """The answer of one turn, and what it cost."""

    text: str
    tool_calls: int
    input_tokens: int
    output_tokens: int
    cost: float | None


@attrs.define
class _Tally:
    """What one turn has cost so far."""

    tool_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float | None = None

    def add(self, input_tokens: int, output_tokens: int, cost: float | None) -> None:
        self.input_tokens += input_tokens
        self.output_tokens += output_tokens
        if cost is not None:
            self.cost = (self.cost or 0.0) + cost

    def result(self, text: str) -> TurnResult:
        return TurnResult(text, self.tool_calls, self.input_tokens, self.output_tokens, self.cost)


def new_session_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S") + "-" + uuid.uuid4().hex[:6]


class Agent:
    """One conversation. `ask(text)` runs a turn; `close()` ends the session (or use `with`)."""

    def __init__(
        self, manager: PluginManager, *, session_id: str | None = None, resume: bool = False,
        display: Display | None = None, max_iterations: int | None = None,
    ) -> None:
        self.manager = manager.load()
        config = self.manager.config
        self.store = SessionStore(self.manager.home)
        self.display = display or Display(quiet=True)
        self.max_iterations = int(max_iterations or config.read(keys.AGENT_MAX_ITERATIONS))
        self.prompt = config.read(keys.AGENT_SYSTEM_PROMPT) or DEFAULT_SYSTEM_PROMPT
        self.model = config.read(keys.MODEL_MODEL)
        self.session_id = session_id or new_session_id()
        window: list[dict[str, Any]] = []
        if resume:
            found = self.store.window(self.session_id)
            if found is None:
                known = ", ".join(s["id"] for s in self.store.sessions(5)) or "none yet"
                raise SessionNotFoundError(f"no session {self.session_id!r} (latest: {known}); see `hermes sessions list`")
            window = repair_tool_pairing(found)  # a turn cut short by Ctrl-C or a crash
        self.messages: list[dict[str, Any]] = window
        self.store.start(self.session_id, self.model)
        self.session = self.manager.open_session(self.session_id, model=self.model)
        self.turns = sum(1 for m in window if m.get("role") == "user")  # on_turn_start's turn_number
        if resume:
            self.session.on_session_switch(self.session_id)  # the stored conversation goes on
        self.llm = self.manager.agent_llm()

    def __enter__(self) -> Agent:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.display.done()
        self.session.close(self.messages)
        self.store.close()

    # -- one turn ---------------------------------------------------------------------------

    def _add(self, message: dict[str, Any]) -> None:
        self.messages.append(message)
        self.store.append(self.session_id, message)

    def _system(self) -> dict[str, Any]:
        block = self.session.system_prompt_block()
        return {"role": "system", "content": f"{self.prompt}\n\n{block}" if block else self.prompt}

    def _compress_if_needed(self) -> None:
        self._replace_window(self.session.before_request(self.messages), self.session.last_compaction_note)

    def _replace_window(self, after: list[dict[str, Any]], note: str | None = None) -> None:
        """Adopt what the context engine made of the window, storing the event (before → after);
        `note` is what to show for it (None: the usual line, "": nothing)."""
        before = self.messages
        if after is not before and after != before:
            engine = self.session.engine_provider.name if self.session.engine_provider else "?"
            self.store.compression(self.session_id, engine, before, after)
            shown = f"context compressed by {engine}: {len(before)} → {len(after)} messages" if note is None else note
            if shown:
                self.display.note(shown)
            self.messages = list(after)

    def _request(self, extra: list[str]) -> list[dict[str, Any]]:
        """The messages of one request: the system prompt, the window, and this turn's extra
        context added to the copy of the last user message (never stored, never in the system prompt)."""
        request = [self._system(), *self.messages]
        context = "\n\n".join(text for text in extra if text)
        if context:
            for index in range(len(request) - 1, 0, -1):
                if request[index].get("role") == "user" and isinstance(request[index].get("content"), str):
                    request[index] = {**request[index], "content": f"{request[index]['content']}\n\n{context}"}
                    break
        return request

    def ask(self, text: str) -> TurnResult:
        """Run one turn: the answer text, with the tokens and cost it took."""
        tally = _Tally()
        self._add({"role": "user", "content": text})
        self.turns += 1
        self.session.on_turn_start(self.turns, text, model=self.model, platform="cli",
                                   tool_count=len(self.session.tool_schemas()))
        prefetched = self.session.prefetch(text)
        recalled = self.session.recall_line()
        if recalled:
            self.display.note(recalled)
        try:
            for calls in range(1, self.max_iterations + 1):
                self._compress_if_needed()
                request = self._request([prefetched])
                hooks = self.manager.lifecycle
                hooked = hooks.pre_llm_call(session_id=self.session_id, messages=request, model=self.model).run()
                request = self.session.select_context(self._request([prefetched, hooked or ""]), self.messages)
                self.display.working("thinking")
                try:
                    answer = self.llm.complete(request, tools=self.session.tool_schemas())
                finally:
                    self.display.done()
                usage = answer.usage
                self.session.after_response({"prompt_tokens": usage.input_tokens,
                                             "completion_tokens": usage.output_tokens})
                self.store.usage(self.session_id, answer.provider, answer.model, usage.input_tokens,
                                 usage.output_tokens, usage.cost_usd)
                tally.add(usage.input_tokens, usage.output_tokens, usage.cost_usd)
                hooks.post_llm_call(session_id=self.session_id, messages=request, response=answer,
                                    model=answer.model).run()
                message: dict[str, Any] = {"role": "assistant", "content": answer.text or None}
                if answer.tool_calls:
                    message["tool_calls"] = answer.tool_calls
                self._add(message)
                if not answer.tool_calls:
                    final = hooks.transform_llm_output(text=answer.text, session_id=self.session_id,
                                                       model=answer.model).run()
                    final = final if final is not None else answer.text
                    self.session.sync_turn(text, final, messages=self.messages)
                    self.session.queue_prefetch(text)
                    self.session.on_turn_complete(self.messages, api_call_count=calls, turn_exit_reason="final_answer")
                    return tally.result(final)
                for call in answer.tool_calls:
                    tally.tool_calls += 1
                    self._run_tool(call)
        except KeyboardInterrupt:
            self.messages = repair_tool_pairing(self.messages)  # the session stays valid to continue
            self.session.on_turn_complete(self.messages, interrupted=True, turn_exit_reason="interrupted")
            raise
        note = f"(stopped after {self.max_iterations} rounds of tool calls without a final answer)"
        self._add({"role": "assistant", "content": note})
        self.session.on_turn_complete(self.messages, api_call_count=self.max_iterations,
                                      turn_exit_reason="max_iterations")
        return tally.result(note)

    def _run_tool(self, call: dict[str, Any]) -> None:
        function = call.get("function")
        function = function if isinstance(function, dict) else {}
        name, arguments = str(function.get("name", "")), function.get("arguments", "{}")
        call_id = str(call.get("id", ""))
        self.display.tool(name, arguments)
        self.display.working(f"running {name}")
        try:
            result = self.session.dispatch_tool(name, arguments, tool_call_id=call_id)
        finally:
            self.display.done()
        self._add({"role": "tool", "tool_call_id": call_id, "content": result})
        self.store.tool_call(self.session_id, call_id, name, arguments, result)

    def reset(self) -> None:
        """A `/reset`: the window is cleared (stored as an event replacing it by nothing, so a
        resume starts empty too), the engine forgets, plugins hear `on_session_reset`."""
        self.store.compression(self.session_id, "reset", self.messages, [])
        self.messages = []
        self.session.reset()

    def compress(self, focus_topic: str | None = None) -> int:
        """A manual `/compress [topic]`; returns how many messages the window has after it."""
        self._replace_window(self.session.compress(self.messages, focus_topic=focus_topic, force=True))
        return len(self.messages)

