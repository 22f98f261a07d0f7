"""What the gateway does with one received message: `pre_gateway_dispatch`, authorisation and
pairing, the conversation's agent session (one per Hermes session key, resumed from the store
after a restart), and the turn in a worker thread with the conversation's session variables set. Also `ctx.inject_message`, which the
gateway serves ("conversation"): a plugin allowed to (`allow_gateway_injection`) starts a turn
in a conversation the gateway knows."""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import logging
from collections.abc import Callable
from typing import Any, TypeVar

from hermes_core import (
    CommandFailedError, PluginManager, SessionNotFoundError, StateStoreError, UnknownCommandError, spending_as,
)
from hermes_core import config_keys as keys
from hermes_core.agent import Agent
from hermes_core.hosting import approver_scope, in_thread

from . import approvals
from .auth import PAIRING_REPLY, authorised
from .pairing import PairingStore
from .platforms.base import BasePlatformAdapter
from .platforms.event import MessageEvent, MessageType
from .routes import Routes
from .session import SessionSource, session_key_for
from .session_context import set_session_vars

__all__ = ["Conversations"]

log = logging.getLogger("hermes.gateway")
T = TypeVar("T")
OPEN_SESSIONS = 64  # agent sessions kept open; the least recently used idle ones beyond are closed


class Conversations:
    """The gateway's message handler and its agent sessions, by session key."""

    def __init__(self, manager: PluginManager, routes: Routes, pairing: PairingStore,
                 adapters: dict[str, BasePlatformAdapter], say: Callable[[str], None]) -> None:
        self.manager = manager
        self.routes = routes
        self.pairing = pairing
        self.adapters = adapters
        self.say = say
        self.agents: dict[str, Agent] = {}
        self.busy: set[str] = set()
        self.loop: asyncio.AbstractEventLoop | None = None
        self.stopping = False
        self.changed: Callable[[], None] = lambda: None  # a conversation started (the status file is rewritten)

    # -- one message -----------------------------------------------------------------------------

    async def handle(self, adapter: BasePlatformAdapter, entry: Any, event: MessageEvent,
                     named: SessionSource | None = None) -> str | None:
        """The answer to `event`, or None (skipped, refused, or nothing to say). `named` is the
        source as the adapter named it (`event`'s is made encodable): what is asked of the chat
        goes there, where the answer goes."""
        source = event.source
        named = named or source
        platform = source.platform.value
        if not event.internal:
            directive = await self.manager.lifecycle.pre_gateway_dispatch(
                event=event, gateway=self, session_store=self.routes).arun()
            if directive and directive.get("action") == "skip":
                log.info("%s: a plugin skipped a message (%s)", platform, directive.get("reason", ""))
                return None
            if directive and directive.get("action") == "rewrite" and isinstance(directive.get("text"), str):
                event = dataclasses.replace(event, text=directive["text"])
            try:  # off the loop: the pairings may be in the shared database
                if not await in_thread(authorised, source, entry, adapter, self.pairing):
                    return await in_thread(self._refuse, source)
            except StateStoreError as exc:  # refused while it cannot be checked
                self.say(f"{platform}: could not check whether {source.user_id or 'the sender'} may talk, so the "
                         f"message was not answered: {exc}")
                return None
        key = session_key_for(source, getattr(adapter.config, "extra", None))  # also an adapter on Hermes' own base
        command = event.get_command() if event.is_command() else None
        if command in ("approve", "deny"):  # answers the turn that waits for it
            return approvals.answer(key, command, event.get_command_args())
        agent = await self._agent(key, source)
        self.busy.add(key)
        try:
            return await in_thread(self._turn, agent, key, event, adapter, named)
        finally:
            self.busy.discard(key)

    def _refuse(self, source: SessionSource) -> str | None:
        platform, user = source.platform.value, source.user_id_alt or source.user_id
        behaviour = self.manager.config.read(keys.GATEWAY_UNAUTHORIZED_DM)
        if source.chat_type != "dm" or not user or behaviour == "ignore":
            self.say(f"{platform}: ignored a message from {user or 'an unknown sender'} (not allowed)")
            return None
        code = self.pairing.generate_code(platform, user, source.user_name or "")
        if code is None:
            self.say(f"{platform}: ignored a message from {user} (not allowed; a pairing code was sent recently)")
            return None
        self.say(f"{platform}: {user} is not allowed yet; sent a pairing code "
                 f"(approve with `hermes pairing approve {platform} CODE`)")
        return PAIRING_REPLY.format(code=code, platform=platform)

    async def _agent(self, key: str, source: SessionSource) -> Agent:
        """The conversation's agent session. Its memory is the sender's (the provider's `user_id`):
        in a conversation several people share, another sender's message closes the session and
        resumes it with theirs, so that no one is offered another's memories."""
        sender = _sender(source)
        agent = self.agents.pop(key, None)
        whose = sender if self.manager.config.read(keys.MEMORY_PER_CALLER) else ""
        if agent is not None and (agent.user_id == whose or key in self.busy):
            self.agents[key] = agent  # the most recently used last
            return agent
        if agent is not None:
            await in_thread(agent.close)
        platform = source.platform.value
        known = self.routes.session_id(key)

        def open_agent() -> Agent:
            # the chat's session key goes to the plugins (gateway_session_key), as Hermes' gateway hands it
            opening = functools.partial(Agent, self.manager, platform=platform, sender_id=sender, gateway_session_key=key,
                                        session_info={name: getattr(source, name) for name in _CHAT_INFO})
            if known is None:
                return opening()
            try:
                return opening(session_id=known, resume=True)
            except SessionNotFoundError:  # the route outlived its transcript: start it again
                return opening(session_id=known)

        agent = await in_thread(open_agent)
        self.routes.remember(key, agent.session_id, platform, source.to_dict())
        self.agents[key] = agent
        idle = [k for k in self.agents if k not in self.busy and k != key]
        for stale in idle[: max(len(self.agents) - OPEN_SESSIONS, 0)]:  # closed; resumed from the store when needed
            await in_thread(self.agents.pop(stale).close)
        self.changed()
        return agent

    def _turn(self, agent: Agent, key: str, event: MessageEvent, adapter: BasePlatformAdapter,
              named: SessionSource) -> str:
        """One turn (or slash command) of `agent`, on a worker thread; a tool call put to a human
        is asked of this chat, by the ids the adapter named it with (`approvals`)."""
        approvals.register_gateway_notify(key, self._notifier(adapter, named))
        try:
            with approver_scope(approvals.approver_for(self.manager, key)):
                return self._answer(agent, key, event)
        finally:
            approvals.unregister_gateway_notify(key)

    def _notifier(self, adapter: BasePlatformAdapter, source: SessionSource) -> Callable[[dict[str, Any]], None]:
        loop = self.loop
        metadata = {"thread_id": source.thread_id} if source.thread_id else None

        def notify(data: dict[str, Any]) -> None:  # on the turn's thread: sent on the loop, waited for
            if loop is None or loop.is_closed():
                raise ConnectionError("the gateway is stopping")
            sent = asyncio.run_coroutine_threadsafe(approvals.present(adapter, source.chat_id, data, metadata), loop)
            sent.result(timeout=60)

        return notify

    def _answer(self, agent: Agent, key: str, event: MessageEvent) -> str:
        source = event.source
        set_session_vars(platform=source.platform.value, source=source.platform.value, chat_id=source.chat_id,
                         chat_type=source.chat_type, chat_name=source.chat_name, thread_id=source.thread_id,
                         user_id=source.user_id, user_id_alt=source.user_id_alt, user_name=source.user_name,
                         scope_id=source.scope_id, session_key=key, session_id=agent.session_id,
                         message_id=event.message_id, parent_chat_id=source.parent_chat_id)
        self.routes.touch(key)
        agent.sender_id = _sender(source)  # in a shared group, this message's
        text = event.text
        if event.is_command() and event.message_type in (MessageType.TEXT, MessageType.COMMAND):
            if event.get_command() == "new":  # Hermes' gateway starts a fresh conversation with /new or /reset
                text = "/reset"
            try:
                return agent.command(text)
            except UnknownCommandError:
                return f"Unknown command /{event.get_command() or ''}"
            except CommandFailedError as exc:
                return str(exc)
        if event.media_urls:
            files = "\n".join(f"[attached: {path} ({kind})]" for path, kind in
                              zip(event.media_urls, [*event.media_types, *[""] * len(event.media_urls)]))
            text = f"{text}\n{files}" if text else files
        with spending_as(caller=f"{source.platform.value}:{agent.sender_id}" if agent.sender_id else None):
            result = agent.ask(text)  # every call of the turn held to the sender's budget too (budgets.caller)
        if result.stopped == "max_iterations":
            return (f"{result.text}\n\n(stopped after {agent.max_iterations} rounds of tool calls)".strip()
                    if result.text else f"I stopped after {agent.max_iterations} rounds of tool calls without an answer.")
        return result.text

    # -- the end ----------------------------------------------------------------------------------

    def close(self) -> None:
        """End every conversation's agent session that is not in the middle of a turn."""
        for key, agent in list(self.agents.items()):
            if key in self.busy:
                continue
            try:
                agent.close()
            except Exception as exc:  # noqa: BLE001 - closing the others goes on
                log.warning("closing the session of %s failed: %s: %s", key, type(exc).__name__, exc)
            del self.agents[key]

    # -- ctx.inject_message (capability "conversation") ------------------------------------------

    def inject_message(self, plugin_id: str, content: str, role: str = "user", *,
                       session_key: str | None = None) -> bool:
        """Start a turn in the conversation `session_key` with `content` ("[role] content" unless
        role is "user"): True when it was accepted (not when it finished), as in Hermes."""
        where = f"ctx.inject_message of plugin {plugin_id!r}"
        if not session_key:
            log.warning("%s: refused: under the gateway it needs session_key= (the conversation's key)", where)
            return False
        if self.manager.config.read(keys.PLUGIN_GATEWAY_INJECTION, plugin_id) is not True:
            log.warning("%s: refused: set plugins.entries.%s.allow_gateway_injection: true to allow it", where,
                        plugin_id)
            return False
        origin = self.routes.origin(session_key)
        loop = self.loop
        if origin is None or loop is None or self.stopping or loop.is_closed():
            log.warning("%s: refused: no running conversation %r", where, session_key)
            return False
        text = content if role == "user" else f"[{role}] {content}"
        try:
            loop.call_soon_threadsafe(lambda: loop.create_task(self._inject(plugin_id, session_key, origin, text)))
        except RuntimeError:
            return False
        return True

    async def _inject(self, plugin_id: str, key: str, origin: dict[str, Any], text: str) -> None:
        source = SessionSource.from_dict(origin)
        adapter = self.adapters.get(source.platform.value)
        if adapter is None:
            log.warning("ctx.inject_message of plugin %r: dropped: %s is not connected", plugin_id,
                        source.platform.value)
            return
        if not authorised(source, self.manager.platforms.get(source.platform.value), adapter, self.pairing):
            log.warning("ctx.inject_message of plugin %r: dropped: the conversation's sender is no longer allowed",
                        plugin_id)
            return
        event = MessageEvent(text=text, message_type=MessageType.TEXT, source=source, internal=True,
                             allow_gateway_control=False,
                             metadata={"hermes_plugin_id": plugin_id, "hermes_plugin_injection": True,
                                       "gateway_session_key": key})
        await adapter.handle_message(event)


_CHAT_INFO = ("user_name", "user_id_alt", "chat_id", "chat_name", "chat_type", "thread_id")  # as Hermes hands them


def _sender(source: SessionSource) -> str:
    """Who wrote a message, as `pre_llm_call`'s `sender_id` and a memory provider's `user_id` take it."""
    return source.user_id_alt or source.user_id or ""
