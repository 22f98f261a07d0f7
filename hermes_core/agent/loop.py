"""The reference agent loop: a conversation with the configured model, the plugins' tools and
the active engines, Hermes' lifecycle hooks at Hermes' moments, stored as it goes.

One turn (`Agent.ask`): the user message is stored; `pre_llm_call` context and memory
`prefetch` go into the requests' copy of the user message; the context engine compresses
first when it says so; each model request is wrapped in the request hooks; the model answers
with text (the turn ends: `transform_llm_output`, `post_llm_call`, `sync_turn`,
`on_session_end`) or tool calls (each dispatched through the registry with its hooks, its
result stored and sent back with the call's id), up to `agent.max_iterations` rounds.
`FIRED_HOOKS` is what this host fires; it declares them to its manager, so that
`hermes plugins doctor` can name a plugin's hooks that never fire here.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

from hermes_core import (
    LifecycleHooks, LlmAnswer, Message, Messages, PluginManager, SessionNotFoundError, TurnIdentity,
    repair_tool_pairing, tool_message_content, turn_scope,
)
from hermes_core import config_keys as keys
from hermes_core.hosting import Cancel, cancel_check, cancel_scope, progress_scope, state_url, turn_span

from .display import Display
from .outcome import Outcome, Tally, TurnResult
from .store import SessionStore
from .streaming import STREAM_HOOKS, StreamHooks, TurnStream
from .system_prompt import DEFAULT_SYSTEM_PROMPT, SystemPrompt, build_system_prompt

__all__ = ["Agent", "TurnResult", "DEFAULT_SYSTEM_PROMPT", "FIRED_HOOKS"]

# The lifecycle hooks the reference host fires (docs/hooks.md says when). It has no terminal
# tool (`transform_terminal_output`), edits no files (`pre_verify`), and has no gateway,
# approval prompt, kanban, voice or subagents.
FIRED_HOOKS = frozenset({*STREAM_HOOKS,
    "on_session_start", "on_session_end", "on_session_finalize", "on_session_reset", "pre_llm_call",
    "post_llm_call", "transform_llm_output", "pre_api_request", "post_api_request", "api_request_error",
    "transform_api_error_classification", "on_interim_message", "pre_tool_call", "post_tool_call",
    "transform_tool_result", "pre_command", "agent_loop_stopped", "pre_auxiliary_call", "post_auxiliary_call",
    "on_budget_check",  # fired by ctx.llm, whichever host runs it
})
BUILTIN_COMMANDS = ("compress", "reset")


def new_session_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S") + "-" + uuid.uuid4().hex[:6]


class Agent:
    """One conversation. `ask(text)` runs a turn, `command("/name args")` a slash command;
    `close()` ends the session (or use `with`).

    A batch item sets what one run needs: `system_prompt` (the identity, in place of SOUL.md or
    `agent.system_prompt`), `prompt_files=False` (no SOUL.md, project context or memory file),
    `memory=False` (no memory provider in the session, no MEMORY.md or USER.md), `tools` (the names of
    the tools the model is offered and may call; None: every tool) and `store` (where the session is
    kept; else `$HERMES_HOME`'s). `cwd` is the conversation's working folder, where the project
    context is looked for (None: the process's; an editor's session: its folder); `instructions`
    is a caller's text added after the identity (a server's request's system message).
    A server's caller hands in `history`: the conversation so far, stored as the new session's
    first messages (`sender_id` is stored as the user who started it).

    The system prompt is assembled once, when the conversation starts, and kept with the session
    (with its first message); `resume=True` sends the kept one again, byte for byte, whatever the
    files say now (a `/reset` assembles and keeps a new one). Only `instructions` are the caller's
    own each time.

    `user_id` is whose long-term memory the session has: the memory provider's `initialize` gets
    it (with `platform`), and a provider that keeps callers apart (the built-in one does) reads
    and writes only theirs. A host serving several people sets it to the caller; None takes
    `sender_id`, and "" (the CLI: one home, one user) gives the home's own memory, as does
    `memory.per_caller: false` for every caller. `user_platform` is where `user_id` comes from
    when that is not `platform` (a cron job made in a chat: the chat's platform), handed to
    `initialize` as `user_platform`. `gateway_session_key` is the stable name of who or what the
    client is (a gateway chat's session key, an API caller's `X-Hermes-Session-Key`), handed as
    Hermes hands it to the memory provider's `initialize` and the context engine's
    `on_session_start`; it names nothing the host keeps (never a stored session). `session_info`
    is the rest of what Hermes hands them that the host knows, under Hermes' names: `user_name`,
    `user_id_alt`, `chat_id`, `chat_name`, `chat_type`, `thread_id`, `agent_context` ("cron" for a
    scheduled run; "primary" when not given); empty values are left out. A resumed session's title
    goes as `session_title`.

    `cancel()`, from any thread, stops the running turn promptly: its model request is broken
    off, no further tool runs, and `ask` raises `hosting.Cancelled` (a `KeyboardInterrupt`, handled
    as Ctrl-C is: what was said stands, the session stays valid). The answer the model was giving
    is never stored, even one that came whole just as the turn was stopped: a stream broken off
    can look ended. A caller that may stop a turn
    before it starts hands `ask` its own `hosting.Cancel`.
    """

    def __init__(
        self, manager: PluginManager, *, session_id: str | None = None, resume: bool = False,
        display: Display | None = None, max_iterations: int | None = None, platform: str = "cli",
        sender_id: str = "", system_prompt: str | None = None, memory: bool = True,
        tools: Collection[str] | None = None, store: SessionStore | None = None, history: Messages | None = None,
        user_id: str | None = None, user_platform: str | None = None, cwd: str | os.PathLike[str] | None = None,
        prompt_files: bool = True, instructions: str | None = None, gateway_session_key: str | None = None,
        session_info: Mapping[str, str | None] | None = None,
    ) -> None:
        if resume and history:
            raise ValueError("Agent: give history= for a new session or resume=True for a stored one, not both")
        self.manager = manager.load()
        self.manager.declare_fired_hooks(*FIRED_HOOKS)
        self.platform = platform
        self.sender_id = sender_id  # who writes (a gateway's user id; set per turn): pre_llm_call's sender_id
        config = self.manager.config
        self.user_id = ""  # whose memory: fixed for the session ("": the home's own)
        if config.read(keys.MEMORY_PER_CALLER):
            self.user_id = sender_id if user_id is None else user_id
        self._own_store = store is None  # a store handed in is its owner's to close
        self.store = store if store is not None else SessionStore(self.manager.home, url=state_url(self.manager.home))
        self.tools = frozenset(tools) if tools is not None else None
        self.display = display or Display(quiet=True)
        self._cancel: Cancel | None = None  # the running (or last) turn's
        self.stream_hooks = StreamHooks(self.manager.lifecycle)
        self.max_iterations = int(max_iterations or config.read(keys.AGENT_MAX_ITERATIONS))
        self.cwd = Path(cwd) if cwd is not None else None  # None: the process's working folder
        self._prompt_args = (system_prompt, prompt_files, memory, instructions)  # build_system_prompt's
        self.model = config.read(keys.MODEL_MODEL)
        self.sees_images = bool(config.read(keys.MODEL_ROUTE[4]))  # model.supports_vision
        self.session_id = session_id or new_session_id()
        window: Messages = []
        kept: dict[str, Any] | None = None  # the system prompt kept with the session resumed
        if resume:
            found = self.store.resumed(self.session_id)
            if found is None:
                known = ", ".join(s["id"] for s in self.store.sessions(5)) or "none yet"
                raise SessionNotFoundError(f"no session {self.session_id!r} (latest: {known}); see `hermes sessions list`")
            window, kept = repair_tool_pairing(found[0]), found[1]  # a turn cut short by Ctrl-C or a crash
        self.messages: Messages = window
        self.store.start(self.session_id, self.model, platform=platform, user=sender_id)
        if history:
            with self.store.step():
                for message in repair_tool_pairing(list(history)):
                    self._add(message)
            window = self.messages
        who: dict[str, Any] = {key: value for key, value in (session_info or {}).items() if value}
        title = self.store.title(self.session_id) if resume else ""
        if title:  # Hermes hands the session's title when it has one
            who["session_title"] = title
        if self.user_id:  # Hermes' memory providers take it
            who |= {"user_id": self.user_id} | ({"user_platform": user_platform} if user_platform else {})
        if gateway_session_key:  # who or what the client is (Hermes' gateway session key): for the plugins
            who["gateway_session_key"] = gateway_session_key
        self.session = self.manager.open_session(self.session_id, model=self.model, platform=platform, memory=memory,
                                                 **who)
        self._prompt_unsaved = False  # a prompt assembled here is kept with the session at its next message
        self.system_prompt = self._conversation_prompt(kept)  # once per conversation: the same bytes (caching)
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
        self.stream_hooks.close()
        self.session.close(self.messages)
        if self._own_store:
            self.store.close()

    def tool_schemas(self) -> list[dict[str, Any]]:
        """The tools the model is offered: the session's, only those of `tools` when given."""
        schemas = self.session.tool_schemas()
        return schemas if self.tools is None else [s for s in schemas if s["function"]["name"] in self.tools]

    # -- one turn ---------------------------------------------------------------------------

    def _add(self, message: Message) -> None:
        self.messages.append(message)
        self.store.append(self.session_id, message)

    def build_system_prompt(self) -> SystemPrompt:
        """The conversation's system prompt, assembled now (`system_prompt.build_system_prompt`)."""
        offered = [schema["function"]["name"] for schema in self.tool_schemas()]
        identity, files, memory, instructions = self._prompt_args
        return build_system_prompt(self.manager, self.session, platform=self.platform, cwd=self.cwd, offered=offered,
                                   system_prompt=identity, files=files, memory=memory, instructions=instructions)

    def _conversation_prompt(self, kept: dict[str, Any] | None) -> SystemPrompt:
        """The prompt kept with the session (`kept`), the caller's instructions in it; else one
        assembled now, to be kept with the session along with its next message. A prompt kept for
        another user's memory (a shared chat's other sender) is not theirs to send: assembled anew."""
        if kept is not None and kept.get("user_id", "") == self.user_id:
            try:
                return SystemPrompt.from_stored(kept).with_instructions(self._prompt_args[3])
            except (KeyError, TypeError, ValueError):  # kept by another version in a shape this one cannot read
                pass
        self._prompt_unsaved = True
        return self.build_system_prompt()

    def system_message(self) -> Message:
        """The system prompt as the conversation's requests send it: the same bytes each time."""
        return {"role": "system", "content": self.system_prompt.text}

    def _compress_if_needed(self) -> None:
        self._replace_window(self.session.before_request(self.messages), self.session.last_compaction_note)

    def _replace_window(self, after: Messages, note: str | None = None) -> None:
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

    def _request(self, extra: list[str]) -> Messages:
        """The messages of one request: the system prompt, the window, and this turn's extra
        context added to the copy of the last user message (never stored, never in the system prompt)."""
        request = [self.system_message(), *self.messages]
        context = "\n\n".join(text for text in extra if text)
        if context:
            for index in range(len(request) - 1, 0, -1):
                if request[index].get("role") == "user" and isinstance(request[index].get("content"), str):
                    request[index] = {**request[index], "content": f"{request[index]['content']}\n\n{context}"}
                    break
        return request

    def ask(self, text: str, *, cancel: Cancel | None = None) -> TurnResult:
        """Run one turn: the answer text, with the tokens and cost it took. `cancel` (else a new
        one) stops it when set; `cancel()` sets the running turn's."""
        task_id = str(uuid.uuid4())
        turn = TurnIdentity(self.session_id, task_id, f"{self.session_id}:{task_id}:{uuid.uuid4().hex[:8]}",
                            self.platform)
        self._cancel = cancel or Cancel()
        with turn_scope(turn), cancel_scope(self._cancel), \
                turn_span("hermes", self.session_id, self.model or "", self.platform, text) as span:
            return self._turn(turn, text, span)  # the turn's side calls (compression summaries) name this turn

    def cancel(self) -> None:
        """Stop the running turn, if any (thread-safe; see the class)."""
        running = self._cancel
        if running is not None:
            running.set()

    def _turn(self, turn: TurnIdentity, text: str, span: Any = None) -> TurnResult:
        """The turn, with Hermes' hooks in Hermes' order: `pre_llm_call` (`_begin`); per model
        request `pre_api_request` and `post_api_request` (or `api_request_error`), then
        `on_interim_message` and each tool's hooks (`_rounds`); `transform_llm_output`,
        `post_llm_call` and `on_session_end` once the answer is known (`_finish`), or
        `agent_loop_stopped` and `on_session_end` on Ctrl-C."""
        tally = Tally()
        extra = self._begin(turn, text)
        try:
            outcome = self._rounds(turn, text, extra, tally)
        except KeyboardInterrupt:
            self.messages = repair_tool_pairing(self.messages)  # the session stays valid to continue
            self.manager.lifecycle.agent_loop_stopped(session_key=self.session_id, platform=self.platform,
                                                      reason="user_stop", invalidation_reason="session_interrupt").run()
            self.session.on_turn_complete(self.messages, interrupted=True, turn_exit_reason="interrupted")
            self._end_turn(turn, "interrupted", interrupted=True)
            raise
        except Exception as exc:
            self._end_turn(turn, f"error({type(exc).__name__})", failed=True)
            raise
        self._finish(turn, text, outcome)
        if span is not None:  # the turn's `invoke_agent` span (export on): what it took
            span.finished(tally.result(outcome.final, outcome.stopped))
        return tally.result(outcome.final, outcome.stopped)

    def _begin(self, turn: TurnIdentity, text: str) -> list[str]:
        """Store the user's message and start the turn: the engines hear of it, `pre_llm_call`
        and memory `prefetch` give the extra context for this turn's requests (returned)."""
        is_first_turn = not self.messages
        if self._prompt_unsaved:  # the prompt assembled for this conversation, kept in the same transaction
            with self.store.step():
                self.store.save_prompt(self.session_id, {**self.system_prompt.stored(), "user_id": self.user_id})
                self._add({"role": "user", "content": text})
            self._prompt_unsaved = False
        else:
            self._add({"role": "user", "content": text})
        self.turns += 1
        model = self.model or ""
        self.session.on_turn_start(self.turns, text, model=model, platform=self.platform,
                                   tool_count=len(self.tool_schemas()))
        context = self.manager.lifecycle.pre_llm_call(
            session_id=self.session_id, task_id=turn.task_id, turn_id=turn.turn_id, user_message=text,
            conversation_history=list(self.messages), is_first_turn=is_first_turn, model=model,
            platform=self.platform, sender_id=self.sender_id,
        ).run()
        prefetched = self.session.prefetch(text)
        recalled = self.session.recall_line()
        if recalled:
            self.display.note(recalled)
        return [prefetched, context or ""]

    def _rounds(self, turn: TurnIdentity, text: str, extra: list[str], tally: Tally) -> Outcome:
        """Model requests until one answers with text, each round's tool calls run in between, at
        most `max_iterations` rounds; each round is one transaction of the store."""
        hooks = self.manager.lifecycle
        for count in range(1, self.max_iterations + 1):
            with self.store.step():  # the step's usage, messages and tool results: one transaction
                answer, streamed = self._model_request(turn, count, text, extra, tally)
                if not answer.tool_calls:
                    final = self._transformed(hooks, turn, answer.text)
                    cancel_check()  # stopped meanwhile: the answer is not stored as said
                    self._add({"role": "assistant", "content": final or ""})
                    return Outcome(final, f"text_response(finish_reason={answer.finish_reason or 'stop'})", count)
                self._add({"role": "assistant", "content": answer.text, "tool_calls": answer.tool_calls})
                if answer.text.strip():
                    hooks.on_interim_message(turn_id=turn.turn_id, iteration=count, session_id=self.session_id,
                                             model=answer.model, provider=answer.provider, surface=self.platform,
                                             text=answer.text.strip(), already_streamed=streamed).run()
                for call in answer.tool_calls:
                    tally.tool_calls += 1
                    self._run_tool(call, turn, answer.api_request_id)
        note = f"(stopped after {self.max_iterations} rounds of tool calls without a final answer)"
        final = self._transformed(hooks, turn, note)
        self._add({"role": "assistant", "content": final})
        return Outcome(final, f"max_iterations_reached({self.max_iterations}/{self.max_iterations})",
                        self.max_iterations, stopped="max_iterations")

    def _finish(self, turn: TurnIdentity, text: str, outcome: Outcome) -> None:
        """The turn's answer is known: `post_llm_call`, memory's `sync_turn` and next prefetch, the
        engines' turn end, `on_session_end`."""
        if outcome.final:
            self.manager.lifecycle.post_llm_call(
                session_id=self.session_id, task_id=turn.task_id, turn_id=turn.turn_id, user_message=text,
                assistant_response=outcome.final, conversation_history=list(self.messages), model=self.model or "",
                platform=self.platform).run()
        self.session.sync_turn(text, outcome.final, messages=self.messages)
        self.session.queue_prefetch(text)
        self.session.on_turn_complete(self.messages, api_call_count=outcome.rounds,
                                      turn_exit_reason=outcome.exit_reason)
        self._end_turn(turn, outcome.exit_reason, completed=outcome.stopped is None)

    def _model_request(
        self, turn: TurnIdentity, count: int, text: str, extra: list[str], tally: Tally
    ) -> tuple[LlmAnswer, bool]:
        """The turn's `count`th model request (the window compressed first when the engine says
        so), with the request hooks around each attempt; its usage accounted and stored. It is
        streamed when someone watches (the display shows the answer on a terminal, or a plugin
        listens to `on_stream_*`); the flag says whether any of its text was streamed."""
        cancel_check()
        self._compress_if_needed()
        request = self.session.select_context(self._request(extra), self.messages)
        sink = None
        if self.display.streams_answers or self.stream_hooks.wanted:
            sink = TurnStream(self.display, self.stream_hooks, turn, count)
        self.display.working("thinking")
        try:
            answer = self.llm.complete(request, tools=self.tool_schemas(), stream=sink, turn=turn,
                                       iteration=count, user_message=text, conversation_history=self.messages,
                                       context_length=self.session.context_length)
        finally:
            self.display.done()
        # A stream broken off because the turn was stopped may look ended (a server that ends its
        # body by closing the connection): an answer that came once the turn was stopped is never
        # taken as said. One check here, for every host and every kind of model server.
        cancel_check()
        usage = answer.usage
        self.session.after_response({"prompt_tokens": usage.input_tokens, "completion_tokens": usage.output_tokens})
        self.store.usage(self.session_id, answer.provider, answer.model, usage.input_tokens, usage.output_tokens,
                         usage.cost_usd)
        tally.add(usage.input_tokens, usage.output_tokens, usage.cost_usd)
        return answer, sink is not None and sink.streamed

    def _transformed(self, hooks: LifecycleHooks, turn: TurnIdentity, text: str) -> str:
        """The final answer as the plugins' `transform_llm_output` makes it (before it is stored)."""
        if not text:
            return text
        changed = hooks.transform_llm_output(response_text=text, session_id=self.session_id, model=self.model or "",
                                             platform=self.platform, turn_id=turn.turn_id).run()
        return changed if changed is not None else text

    def _end_turn(self, turn: TurnIdentity, reason: str, *, completed: bool = False, failed: bool = False,
                  interrupted: bool = False) -> None:
        """`on_session_end`, which Hermes fires at each turn's end."""
        self.manager.lifecycle.on_session_end(
            session_id=self.session_id, task_id=turn.task_id, turn_id=turn.turn_id, turn_exit_reason=reason,
            model=self.model or "", platform=self.platform, completed=completed, failed=failed, interrupted=interrupted,
        ).run()

    def _run_tool(self, call: dict[str, Any], turn: TurnIdentity, api_request_id: str) -> None:
        function = call.get("function")
        function = function if isinstance(function, dict) else {}
        name, arguments = str(function.get("name", "")), function.get("arguments", "{}")
        call_id = str(call.get("id", ""))
        cancel_check()  # a stopped turn runs no further tool
        self.display.tool(name, arguments, call_id=call_id)
        self.display.working(f"running {name}")
        try:
            if self.tools is not None and name not in self.tools:  # not offered: as unknown as a made-up name
                result = json.dumps({"error": f"Unknown tool: {name}"})
            else:
                def progressed(progress: float, total: float | None, message: str) -> None:
                    self.display.tool_progress(name, progress, total, message, call_id=call_id)

                with progress_scope(progressed):
                    result = self.session.dispatch_tool(name, arguments, tool_call_id=call_id, task_id=turn.task_id,
                                                        turn_id=turn.turn_id, api_request_id=api_request_id)
        finally:
            self.display.done()
        self.display.tool_result(name, result, call_id=call_id)
        self._add({"role": "tool", "tool_call_id": call_id, "content": tool_message_content(result, self.sees_images)})
        self.store.tool_call(self.session_id, call_id, name, arguments, result)

    def command(self, line: str) -> str:
        """Run a slash command line: `/compress [topic]`, `/reset`, or a plugin's command, after
        the plugins' `pre_command`. Raises `UnknownCommandError` or `CommandFailedError`."""
        name, _, rest = line.strip().removeprefix("/").partition(" ")
        if name.lower() not in BUILTIN_COMMANDS:
            result = self.manager.run_command(name, rest, session_key=self.session_id, platform=self.platform)
            return "" if result is None else str(result)
        self.manager.lifecycle.pre_command(surface="cli", command=name.lower(), alias_used=name, args_raw=rest,
                                           session_key=self.session_id, platform=self.platform).run()
        if name.lower() == "compress":
            return f"compressed: {self.compress(rest.strip() or None)} messages in the window"
        self.reset()
        return "conversation cleared"

    def reset(self) -> None:
        """A `/reset`: the window is cleared (stored as an event replacing it by nothing, so a
        resume starts empty too), the engine forgets, plugins hear `on_session_finalize`,
        `on_session_reset` and `on_session_start`."""
        self.store.compression(self.session_id, "reset", self.messages, [])
        self.messages = []
        self.session.reset()
        self.system_prompt = self.build_system_prompt()  # a fresh conversation reads its files again
        self._prompt_unsaved = True

    def compress(self, focus_topic: str | None = None) -> int:
        """A manual `/compress [topic]`; returns how many messages the window has after it."""
        self._replace_window(self.session.compress(self.messages, focus_topic=focus_topic, force=True))
        return len(self.messages)

