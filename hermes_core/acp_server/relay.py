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
from collections.abc import Coroutine
from typing import Any, Literal

from hermes_core import result_text
from hermes_core.agent import Relayed, progress_text
from hermes_core.hosting import ApprovalRequest, Cancelled, cancel_check

__all__ = ["AcpApprover", "Outbox", "Relay", "from_editor"]

log = logging.getLogger("hermes.acp")

# Hermes' four choices, as ACP permission options: (option id, what the editor shows, ACP kind).
OPTIONS: tuple[tuple[str, str, Literal["allow_once", "allow_always", "reject_once"]], ...] = (
    ("once", "Allow once", "allow_once"), ("session", "Allow for this session", "allow_always"),
    ("always", "Always allow", "allow_always"), ("deny", "Deny", "reject_once"))


# Hermes' task states as ACP's plan states (ACP has no "cancelled").
PLAN_STATUS: dict[str, Literal["pending", "in_progress", "completed"]] = {
    "pending": "pending", "in_progress": "in_progress", "completed": "completed", "cancelled": "completed"}


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

    def progressed(self, name: str, call_id: str, progress: float, total: float | None, message: str) -> None:
        from acp import text_block, tool_content, update_tool_call

        shown = message or progress_text(progress, total, "")  # a delegate's text so far, or the count
        self.outbox.put(update_tool_call(call_id or name, status="in_progress", content=[tool_content(text_block(shown))]))

    def finished(self, name: str, result: str, call_id: str) -> None:
        from acp import text_block, tool_content, update_tool_call

        self.outbox.put(update_tool_call(call_id or name, status="failed" if _is_error(result) else "completed",
                                         content=[tool_content(text_block(result_text(result)))]))
        plan = _plan(result)
        if plan is not None:
            self.outbox.put(plan)


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
        try:
            response = from_editor(asked, self.loop)
        except Cancelled:
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


def from_editor(request: Coroutine[Any, Any, Any], loop: asyncio.AbstractEventLoop,
                timeout: float | None = None) -> Any:
    """From the turn's worker thread: the editor's answer to `request`, sent on the event loop.
    A turn stopped meanwhile stops waiting (`Cancelled`); past `timeout` seconds, `TimeoutError`."""
    future = asyncio.run_coroutine_threadsafe(request, loop)
    waited = 0.0
    while True:
        try:
            return future.result(timeout=0.2)
        except concurrent.futures.TimeoutError:
            waited += 0.2
            try:
                cancel_check()
            except Cancelled:
                future.cancel()
                raise
            if timeout is not None and waited >= timeout:
                future.cancel()
                raise TimeoutError(f"the editor did not answer in {timeout:g} s") from None


def _plan(result: str) -> Any:
    """The editor's plan from a tool result that is Hermes' task list (`todo_list`'s
    `{"todos": [{"id", "content", "status"}, ...], "summary": {...}}`), else None. ACP has no
    "cancelled": a cancelled task stays on the plan, completed, marked "[cancelled]"."""
    from acp import plan_entry, update_plan

    if '"todos"' not in result:
        return None
    try:
        parsed = json.loads(result)
    except (ValueError, RecursionError):  # not JSON, or nested past the parser
        return None
    if not (isinstance(parsed, dict) and isinstance(parsed.get("todos"), list)
            and isinstance(parsed.get("summary"), dict)):
        return None
    entries = []
    for task in parsed["todos"]:
        if not isinstance(task, dict) or not str(task.get("content") or "").strip():
            continue
        status, content = str(task.get("status") or "pending"), str(task["content"]).strip()
        entries.append(plan_entry(f"[cancelled] {content}" if status == "cancelled" else content,
                                  status=PLAN_STATUS.get(status, "pending")))
    return update_plan(entries)


def _parsed(arguments: Any) -> Any:
    if isinstance(arguments, str):
        try:
            return json.loads(arguments)
        except (ValueError, RecursionError):  # not JSON, or nested past the parser
            return arguments
    return arguments


def _is_error(result: str) -> bool:
    """Whether a tool's result is hermes-core's error result (`{"error": ...}`) or a blocked call."""
    if result.startswith("Tool call "):
        return True
    try:
        parsed = json.loads(result)
    except (ValueError, RecursionError):  # not JSON, or nested past the parser
        return False
    return isinstance(parsed, dict) and set(parsed) == {"error"}
