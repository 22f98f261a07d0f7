"""What one ACP session's turn shows its editor: the agent's display turned into `session/update`
notifications, and its approvals turned into `session/request_permission` requests.

Both run on the turn's worker thread and hand their messages to the event loop, where one sender
per session writes them in order (`Outbox`). The editor sees the answer as it is streamed
(`agent_message_chunk`), each tool call as it starts (`tool_call`, in progress, with its
arguments) and ends (`tool_call_update`, completed or failed, with its result).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import logging
from typing import Any, Literal

from hermes_core.agent import Relayed
from hermes_core.hosting import ApprovalRequest, Cancelled, cancel_check

__all__ = ["AcpApprover", "Outbox", "Relay"]

log = logging.getLogger("hermes.acp")

# Hermes' four choices, as ACP permission options: (option id, what the editor shows, ACP kind).
OPTIONS: tuple[tuple[str, str, Literal["allow_once", "allow_always", "reject_once"]], ...] = (("once", "Allow once", "allow_once"), ("session", "Allow for this session", "allow_always"),
           ("always", "Always allow", "allow_always"), ("deny", "Deny", "reject_once"))


class Outbox:
    """One session's `session/update` notifications, sent in the order they were made."""

    def __init__(self, conn: Any, session_id: str, loop: asyncio.AbstractEventLoop) -> None:
        self.conn, self.session_id, self.loop = conn, session_id, loop
        self._queue: asyncio.Queue[Any] = asyncio.Queue()
        self._sender = loop.create_task(self._send_all(), name=f"hermes-acp-updates:{session_id}")

    def put(self, update: Any) -> None:
        """From any thread: queue an update."""
        try:
            self.loop.call_soon_threadsafe(self._queue.put_nowait, update)
        except RuntimeError:  # the loop has closed: the editor is gone
            pass

    async def drained(self) -> None:
        """Every update queued so far has been written."""
        await self._queue.join()

    async def _send_all(self) -> None:
        while True:
            update = await self._queue.get()
            try:
                await self.conn.session_update(session_id=self.session_id, update=update)
            except Exception as exc:  # noqa: BLE001 - a lost update never stops the turn
                log.warning("session %s: an update was not sent: %s: %s", self.session_id, type(exc).__name__, exc)
            finally:
                self._queue.task_done()

    def close(self) -> None:
        self._sender.cancel()


class Relay(Relayed):
    """The agent's display for an editor: its text and tool calls become updates."""

    def __init__(self, outbox: Outbox) -> None:
        super().__init__()
        self.outbox = outbox
        self.streamed = False  # whether text was streamed since the last model request began

    def delta(self, text: str) -> None:
        from acp import text_block, update_agent_message

        self.streamed = True
        self.outbox.put(update_agent_message(text_block(text)))

    def working(self, what: str) -> None:
        super().working(what)
        if what == "thinking":
            self.streamed = False

    def started(self, name: str, arguments: Any, call_id: str) -> None:
        from acp import start_tool_call

        self.outbox.put(start_tool_call(call_id or name, name, kind="other", status="in_progress",
                                        raw_input=_parsed(arguments)))

    def finished(self, name: str, result: str, call_id: str) -> None:
        from acp import text_block, tool_content, update_tool_call

        self.outbox.put(update_tool_call(call_id or name, status="failed" if _is_error(result) else "completed",
                                         content=[tool_content(text_block(result))]))


class AcpApprover:
    """Asks the editor about a tool call a `pre_tool_call` hook put to a human
    (`session/request_permission` with Hermes' four choices). "Allow for this session" and
    "Always allow" approve the call's rule until the session is closed."""

    surface = "acp"

    def __init__(self, conn: Any, session_id: str, loop: asyncio.AbstractEventLoop) -> None:
        self.conn, self.session_key, self.loop = conn, session_id, loop
        self.approved: set[str] = set()

    def __call__(self, request: ApprovalRequest) -> str:
        from acp.schema import PermissionOption, ToolCallUpdate

        if request.pattern_key in self.approved:
            return "session"
        asked = self.conn.request_permission(
            session_id=self.session_key,
            tool_call=ToolCallUpdate(tool_call_id=request.tool_call_id or request.request_id,
                                     title=f"{request.tool_name}: {request.description}", kind="other",
                                     status="pending", raw_input=dict(request.args)),
            options=[PermissionOption(option_id=option, name=name, kind=kind) for option, name, kind in OPTIONS])
        future = asyncio.run_coroutine_threadsafe(asked, self.loop)
        while True:  # the turn may be stopped while the editor is asked
            try:
                response = future.result(timeout=0.2)
                break
            except concurrent.futures.TimeoutError:
                try:
                    cancel_check()
                except Cancelled:
                    future.cancel()
                    raise
            except Exception as exc:  # noqa: BLE001 - the editor could not be asked: nothing approves
                log.warning("session %s: permission not asked: %s: %s", self.session_key, type(exc).__name__, exc)
                return "notify_failed"
        outcome = response.outcome
        if getattr(outcome, "outcome", "") != "selected":
            return "cancelled"
        choice = str(outcome.option_id)
        if choice in ("session", "always"):
            self.approved.add(request.pattern_key)
        return choice if choice in ("once", "session", "always") else "deny"


def _parsed(arguments: Any) -> Any:
    if isinstance(arguments, str):
        try:
            return json.loads(arguments)
        except ValueError:
            return arguments
    return arguments


def _is_error(result: str) -> bool:
    """Whether a tool's result is hermes-core's error result (`{"error": ...}`) or a blocked call."""
    if result.startswith("Tool call "):
        return True
    try:
        parsed = json.loads(result)
    except ValueError:
        return False
    return isinstance(parsed, dict) and set(parsed) == {"error"}
