"""`hermes acp`'s agent: the Agent Client Protocol's methods on the reference agent.

Each ACP session is a stored session of the host (`hermes sessions list` shows it, `hermes chat
--resume` continues it, and `session/load` or `session/resume` continue a session `hermes chat`
started). A prompt is one turn of the reference agent on a worker thread; `session/cancel` stops
it at once (`hosting.Cancel`: the model request is broken off) and the prompt answers
`cancelled` without waiting for a tool that is still running, whose session then takes the next
prompt when it has finished.
"""

from __future__ import annotations

import asyncio
import datetime
import logging
from pathlib import Path
from typing import Any

from hermes_core import LlmProviderError, PluginManager, SessionNotFoundError
from hermes_core.agent import Agent, SessionStore
from hermes_core.hosting import Cancel, Cancelled, approver_scope, in_thread, served_span, state_url, workspace_scope

from .folders import folders_for
from .relay import AcpApprover, Outbox, Relay
from .replay import replayed
from .workspace import EditorWorkspace

__all__ = ["HermesAcp"]

log = logging.getLogger("hermes.acp")
PLATFORM = "acp"
PAGE = 50  # sessions in one session/list answer


class _Session:
    """One open ACP session: its agent, its update sender, its approver, its running turn."""

    def __init__(self, agent: Agent, relay: Relay, approver: AcpApprover, workspace: EditorWorkspace) -> None:
        self.agent, self.relay, self.outbox, self.approver = agent, relay, relay.outbox, approver
        self.workspace = workspace  # the session's cwd, through the editor where it offers its files
        self.turn: asyncio.Future[Any] | None = None  # the running (or last) turn's worker
        self.cancel: Cancel | None = None  # the running turn's, set by session/cancel
        self.cancelled = asyncio.Event()  # the same, for the prompt waiting on the loop
        self.one_turn = asyncio.Lock()  # one turn at a time, also after a cancelled one


class HermesAcp:
    """The ACP agent (a plain class: a method it lacks is "method not found", as the SDK answers)."""

    def __init__(self, manager: PluginManager, version: str) -> None:
        self.manager = manager
        self.version = version
        self.conn: Any = None
        self.files: Any = None  # the editor's file system capabilities (`fs`), from `initialize`
        self.sessions: dict[str, _Session] = {}
        self.store = SessionStore(manager.home, url=state_url(manager.home))
        self.folders = folders_for(manager.home)

    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    # -- the connection ---------------------------------------------------------------------------

    async def initialize(self, protocol_version: int, client_capabilities: Any = None, client_info: Any = None,
                         **_: Any) -> Any:
        from acp import PROTOCOL_VERSION
        from acp.schema import (
            AgentCapabilities, Implementation, InitializeResponse, McpCapabilities, PromptCapabilities,
            SessionCapabilities, SessionCloseCapabilities, SessionListCapabilities, SessionResumeCapabilities,
        )

        self.files = getattr(client_capabilities, "fs", None)
        return InitializeResponse(
            protocol_version=min(protocol_version, PROTOCOL_VERSION),
            agent_capabilities=AgentCapabilities(
                load_session=True,
                prompt_capabilities=PromptCapabilities(image=False, audio=False, embedded_context=True),
                mcp_capabilities=McpCapabilities(http=True, sse=True),
                session_capabilities=SessionCapabilities(list=SessionListCapabilities(),
                                                         resume=SessionResumeCapabilities(),
                                                         close=SessionCloseCapabilities())),
            agent_info=Implementation(name="hermes-core", title="Hermes (hermes-core)", version=self.version),
            auth_methods=[])

    # -- sessions ---------------------------------------------------------------------------------

    async def new_session(self, cwd: str, mcp_servers: list[Any] | None = None, **_: Any) -> Any:
        from acp.schema import NewSessionResponse

        session = await self._open(cwd, None, mcp_servers)
        return NewSessionResponse(session_id=session.agent.session_id)

    async def load_session(self, cwd: str, session_id: str, mcp_servers: list[Any] | None = None, **_: Any) -> Any:
        """The stored session, continued, after its conversation is replayed to the editor."""
        from acp.schema import LoadSessionResponse

        session = await self._open(cwd, session_id, mcp_servers)
        shown = await in_thread(self.store.show, session_id)
        for update in replayed(shown["messages"] if shown else []):
            session.outbox.put(update)
        await session.outbox.drained()
        return LoadSessionResponse()

    async def resume_session(self, session_id: str, cwd: str, mcp_servers: list[Any] | None = None,
                             **_: Any) -> Any:
        """The stored session, continued, without replaying it (the editor has it)."""
        from acp.schema import ResumeSessionResponse

        await self._open(cwd, session_id, mcp_servers)
        return ResumeSessionResponse()

    async def close_session(self, session_id: str, **_: Any) -> Any:
        from acp.schema import CloseSessionResponse

        session = self.sessions.pop(session_id, None)
        if session is None:
            raise _unknown(session_id)
        await self._close(session)
        return CloseSessionResponse()

    async def list_sessions(self, cwd: str | None = None, cursor: str | None = None, **_: Any) -> Any:
        """The host's stored sessions, the latest first (`cwd`: those started there, and those
        started where no folder was recorded)."""
        from acp import RequestError
        from acp.schema import ListSessionsResponse, SessionInfo

        try:
            offset = int(cursor or 0)
        except ValueError:
            raise RequestError.invalid_params({"cursor": cursor, "reason": "not a cursor this agent gave"}) from None
        rows = await in_thread(lambda: self.store.sessions(PAGE + 1, offset=offset))
        cwds = await in_thread(self.folders.of, [row["id"] for row in rows[:PAGE]])
        found = []
        for row in rows[:PAGE]:
            where = cwds.get(row["id"], "")
            if cwd is not None and where and where != cwd:
                continue
            updated = datetime.datetime.fromtimestamp(float(row["updated"]), datetime.timezone.utc)
            found.append(SessionInfo(session_id=row["id"], cwd=where or cwd or str(Path.cwd()),
                                     title=row["title"] or None, updated_at=updated.isoformat()))
        return ListSessionsResponse(sessions=found, next_cursor=str(offset + PAGE) if len(rows) > PAGE else None)

    # -- a prompt ---------------------------------------------------------------------------------

    async def prompt(self, session_id: str, prompt: list[Any], **meta: Any) -> Any:
        """`session/prompt`: one turn, in a span that continues the client's `_meta.traceparent`."""
        with served_span("session/prompt", meta, **{"hermes.acp.session": session_id}):
            return await self._prompt(session_id, prompt)

    async def _prompt(self, session_id: str, prompt: list[Any]) -> Any:
        from acp import RequestError, text_block, update_agent_message
        from acp.schema import PromptResponse

        session = self.sessions.get(session_id)
        if session is None:
            raise _unknown(session_id)
        async with session.one_turn:
            if session.turn is not None and not session.turn.done():  # a cancelled turn still in a tool
                await asyncio.wait([session.turn])
            session.cancel, session.cancelled = Cancel(), asyncio.Event()
            turn = session.turn = asyncio.ensure_future(in_thread(self._turn, session, _prompt_text(prompt),
                                                                  session.cancel))
            stopped = asyncio.ensure_future(session.cancelled.wait())
            await asyncio.wait([turn, stopped], return_when=asyncio.FIRST_COMPLETED)
            stopped.cancel()
        if not turn.done():  # cancelled while a tool runs on: answered now, the tool ends on its own
            await session.outbox.drained()
            return PromptResponse(stop_reason="cancelled")
        try:
            result = turn.result()
        except LlmProviderError as exc:
            await session.outbox.drained()
            raise RequestError.internal_error({"message": f"every provider failed: {str(exc).splitlines()[0]}"}) \
                from None
        if result is None or session.cancel.is_set:  # cancelled, also when the answer had just come
            await session.outbox.drained()
            return PromptResponse(stop_reason="cancelled")
        if result.text and not session.relay.streamed:
            session.outbox.put(update_agent_message(text_block(result.text)))
        await session.outbox.drained()
        return PromptResponse(stop_reason="max_turn_requests" if result.stopped == "max_iterations" else "end_turn")

    def _turn(self, session: _Session, text: str, stop: Cancel) -> Any:
        """The turn, on its worker thread: its result, or None when it was stopped (a
        `KeyboardInterrupt` must not cross into the event loop, which would end the process)."""
        try:
            session.agent.tools = self._offered(session)
            with approver_scope(session.approver), workspace_scope(session.workspace):
                return session.agent.ask(text, cancel=stop)
        except Cancelled:
            return None

    async def cancel(self, session_id: str, **_: Any) -> None:
        session = self.sessions.get(session_id)
        if session is not None and session.cancel is not None:
            session.cancel.set()
            session.cancelled.set()

    # -- the end ----------------------------------------------------------------------------------

    async def stop_turns(self) -> None:
        """The editor's input ended and its prompts are overdue: each running turn is stopped and
        its prompt answers `cancelled`, as after `session/cancel`."""
        for session_id in list(self.sessions):
            await self.cancel(session_id)

    async def close(self) -> None:
        """The editor went away: every turn is stopped and every session closed."""
        for session in list(self.sessions.values()):
            if session.cancel is not None:
                session.cancel.set()
        while self.sessions:
            await self._close(self.sessions.popitem()[1])
        await in_thread(self.store.close)

    # -- helpers ----------------------------------------------------------------------------------

    async def _open(self, cwd: str, session_id: str | None, mcp_servers: list[Any] | None = None) -> _Session:
        from acp import RequestError

        if "\0" in cwd:
            raise RequestError.invalid_params({"cwd": cwd, "reason": "the session's folder holds a NUL character"})
        if not Path(cwd).is_absolute():
            raise RequestError.invalid_params({"cwd": cwd, "reason": "the session's folder must be an absolute path"})
        if session_id is not None and session_id in self.sessions:
            await self._close(self.sessions.pop(session_id))
        loop = asyncio.get_running_loop()
        outbox = Outbox(self.conn, session_id or "", loop)

        relay = Relay(outbox)

        def open_agent() -> Agent:
            return Agent(self.manager, session_id=session_id, resume=session_id is not None, display=relay,
                         platform=PLATFORM, store=self.store, cwd=cwd)  # the editor's folder: its AGENTS.md

        try:
            agent = await in_thread(open_agent)
        except SessionNotFoundError as exc:
            outbox.close()
            raise RequestError.resource_not_found(session_id or "") from exc
        outbox.session_id = agent.session_id
        files = self.files
        workspace = EditorWorkspace(cwd, self.conn, agent.session_id, loop,
                                    reads=bool(getattr(files, "read_text_file", False)),
                                    writes=bool(getattr(files, "write_text_file", False)))
        session = _Session(agent, relay, AcpApprover(self.conn, agent.session_id, loop), workspace)
        self.sessions[agent.session_id] = session
        await in_thread(self.folders.remember, agent.session_id, cwd)
        if mcp_servers:  # the editor's MCP servers: this session's tools too
            for problem in await in_thread(self.manager.mcp.attach, agent.session_id,
                                           [_mcp_entry(server) for server in mcp_servers]):
                log.warning("session %s: %s", agent.session_id, problem)
        return session

    async def _close(self, session: _Session) -> None:
        if session.cancel is not None:
            session.cancel.set()
        if session.turn is not None and not session.turn.done():
            await asyncio.wait([session.turn], timeout=5)
        await session.outbox.drained()
        session.outbox.close()
        await in_thread(session.agent.close)
        await in_thread(self.manager.mcp.detach, session.agent.session_id)

    def _offered(self, session: _Session) -> frozenset[str] | None:
        """The tools this session's turn is offered: every tool but those of MCP servers another
        session's editor handed over (None: every tool)."""
        attached = self.manager.mcp.attached_tools()
        foreign = set().union(*(tools for owner, tools in attached.items() if owner != session.agent.session_id))
        foreign -= attached.get(session.agent.session_id, set())
        if not foreign:
            return None
        return frozenset(info.name for info in self.manager.tool_infos() if info.name not in foreign)


def _mcp_entry(server: Any) -> dict[str, Any]:
    """An MCP server as the editor handed it (the SDK's stdio, HTTP or SSE model) as `attach` takes it."""
    return {"name": server.name, "command": getattr(server, "command", ""), "args": list(getattr(server, "args", [])),
            "env": {v.name: v.value for v in getattr(server, "env", None) or []}, "url": getattr(server, "url", ""),
            "headers": {h.name: h.value for h in getattr(server, "headers", None) or []},
            "transport": getattr(server, "type", None) or ("http" if getattr(server, "url", "") else "stdio")}


def _unknown(session_id: str) -> Exception:
    from acp import RequestError

    return RequestError.invalid_params({"sessionId": session_id, "reason": "no open session with this id "
                                        "(session/new, session/load or session/resume opens one)"})


def _prompt_text(blocks: list[Any]) -> str:
    """A prompt's content blocks as the user's message: text as it is, an embedded text resource
    as the file it is, a resource link as its URI."""
    parts: list[str] = []
    for block in blocks:
        kind = getattr(block, "type", "")
        if kind == "text":
            parts.append(block.text)
        elif kind == "resource":
            resource = block.resource
            text = getattr(resource, "text", None)
            parts.append(f'<file uri="{resource.uri}">\n{text}\n</file>' if text is not None
                         else f"[attached: {resource.uri}]")
        elif kind == "resource_link":
            parts.append(f"[file: {block.uri}]")
        else:
            parts.append(f"[{kind or 'content'} not supported by this agent]")
    return "\n".join(parts)
