"""One agent turn for a request: the reference agent in a worker thread, its progress handed to
the event loop as events, stopped when the caller goes away.

`Turns.run(ask)` opens the agent (a new session with the caller's history, or a stored one
resumed), runs the turn with the caller's identity in the session variables (as the gateway
sets a sender's), and closes it. While it runs, `ask.events` (when given) receives
`("delta", text)` for each piece of the model's text, `("tool", {...})` when a tool is called and
`("tool_result", {...})` when it answered. `ask.cancel()` stops the turn at once: its model
request is broken off, no further tool runs, and the session stays valid (as after Ctrl-C in
`hermes chat`). At most `api_server.max_concurrent_runs` turns
run at once; `Turns.admit()` says whether one more may start.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from typing import Any

import attrs

from hermes_core import Messages, PluginManager, spending_as
from hermes_core.agent import Agent, Relayed, SessionStore, TurnResult
from hermes_core.cron.run import TOOLSET as CRON_TOOLSET
from hermes_core.gateway.session_context import set_session_vars
from hermes_core.hosting import Cancel, Cancelled, in_thread, state_url

from .keys import ApiKey

__all__ = ["Ask", "Relay", "TurnCancelled", "TurnDone", "Turns"]

PLATFORM = "api_server"


TurnCancelled = Cancelled  # the caller of a turn went away or stopped it; the agent handles it as Ctrl-C


Emit = Callable[[str, Any], None]


class Relay(Relayed):
    """The agent's display for a server: its text and tool calls become events."""

    def __init__(self, emit: Emit | None, stream: bool) -> None:
        super().__init__(streams=stream)  # the model's answer is streamed only for a streamed request
        self._emit = emit or (lambda kind, data: None)

    def delta(self, text: str) -> None:
        self._emit("delta", text)

    def started(self, name: str, arguments: Any, call_id: str) -> None:
        self._emit("tool", {"name": name, "call_id": call_id,
                            "arguments": arguments if isinstance(arguments, str) else str(arguments)})

    def finished(self, name: str, result: str, call_id: str) -> None:
        self._emit("tool_result", {"name": name, "call_id": call_id, "result": result})


@attrs.define
class Ask:
    """What one request asks of the agent."""

    text: str
    rights: ApiKey
    session_id: str
    resume: bool = False  # go on with the stored session `session_id` (else: a new one, with `history`)
    user: str = ""
    session_key: str = ""  # X-Hermes-Session-Key: who or what the client is, for the plugins
    history: Messages = attrs.Factory(list)
    instructions: str = ""  # the caller's system message, added to the agent's prompt
    stream: bool = False
    events: Emit | None = None
    stop: Cancel = attrs.Factory(Cancel)  # set by `cancel()`, before or while the turn runs

    def cancel(self) -> None:
        self.stop.set()


@attrs.frozen
class TurnDone:
    """How a turn ended: its session, the result (None when cancelled), and the messages the turn
    added after the user's (assistant messages, tool calls and results), with the session's
    message count after it. `cancelled`: its caller stopped it before it ended (also when the
    answer was finished just before: every host reports a stopped turn the same way)."""

    session_id: str
    result: TurnResult | None
    added: Messages
    seq: int
    cancelled: bool = False


class Turns:
    """The agent turns of one server: a shared session store, and a cap on how many run at once."""

    def __init__(self, manager: PluginManager, limit: int) -> None:
        self.manager = manager
        self.limit = limit
        self.running = 0
        self.busy: set[str] = set()  # the sessions a turn runs in now
        self.store = SessionStore(manager.home, url=state_url(manager.home))

    def admit(self) -> bool:
        """Take a place for one more turn (False: all `limit` are taken); `release` gives it back."""
        if self.running >= self.limit:
            return False
        self.running += 1
        return True

    def release(self) -> None:
        self.running = max(self.running - 1, 0)

    async def run(self, ask: Ask) -> TurnDone:
        """Run `ask`'s turn in a worker thread (see the module); the caller holds a place (`admit`)."""
        loop = asyncio.get_running_loop()
        emit = ask.events

        def threadsafe(kind: str, data: Any) -> None:
            if emit is not None:
                try:
                    loop.call_soon_threadsafe(emit, kind, data)
                except RuntimeError:  # the loop has closed: no one listens any more
                    pass

        relay = Relay(threadsafe, ask.stream)
        self.busy.add(ask.session_id)
        try:
            return await in_thread(self._turn, ask, relay)  # a daemon thread: a hung turn never holds the process
        finally:
            self.busy.discard(ask.session_id)

    def _tools(self, rights: ApiKey) -> frozenset[str] | None:
        """The tools the key's agent is offered. A named key's is never offered the `cronjob` tool:
        it reaches every job of the home, whoever made it (the key has its own through `/api/jobs`)."""
        if rights.operator and rights.tools.everything:  # every tool: no list to build for each request
            return None
        infos = self.manager.tool_infos()
        offered = rights.tools.names(infos)
        if rights.operator:
            return offered
        return frozenset(info.name for info in infos
                         if info.toolset != CRON_TOOLSET and (offered is None or info.name in offered))

    def _turn(self, ask: Ask, relay: Relay) -> TurnDone:
        # The caller's instructions follow the agent's own identity (Hermes' ephemeral system prompt).
        agent = Agent(self.manager, session_id=ask.session_id, resume=ask.resume,
                      history=None if ask.resume else ask.history, display=relay, platform=PLATFORM,
                      sender_id=ask.user, user_id=ask.rights.caller(ask.user), instructions=ask.instructions or None,
                      tools=self._tools(ask.rights), store=self.store, gateway_session_key=ask.session_key or None,
                      session_info={"user_name": ask.user, "chat_id": ask.session_id, "chat_type": "dm"})
        set_session_vars(platform=PLATFORM, source=PLATFORM, user_id=ask.user, user_name=ask.user,
                         chat_id=agent.session_id, chat_type="dm", session_key=f"{PLATFORM}:{agent.session_id}",
                         session_id=agent.session_id, message_id=uuid.uuid4().hex)
        result: TurnResult | None = None
        try:
            caller = f"{PLATFORM}:{ask.rights.caller(ask.user)}" if ask.user else None  # budgets.caller's holder
            with spending_as(ask.rights.budget_holder, caller=caller):
                result = agent.ask(ask.text, cancel=ask.stop)
        except Cancelled:
            pass
        finally:
            agent.close()
        return TurnDone(agent.session_id, result, _after_last_user(agent.messages),
                        self.store.written_seq(agent.session_id), cancelled=result is None or ask.stop.is_set)

    def close(self) -> None:
        self.store.close()


def _after_last_user(messages: Messages) -> Messages:
    for index in range(len(messages) - 1, -1, -1):
        if messages[index].get("role") == "user":
            return list(messages[index + 1:])
    return list(messages)
