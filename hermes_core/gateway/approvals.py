"""Approvals in the gateway: a tool call a `pre_tool_call` hook puts to a human is asked of the chat
the conversation runs in, and waits for its answer, as Hermes' gateway asks (its
`tools.approval`, whose gateway functions are these).

While a conversation's turn runs, the gateway registers how to reach that chat
(`register_gateway_notify(session_key, notify)`): an adapter with approval buttons
(`supports_exec_approval_buttons()`, `send_exec_approval(...)`) gets a card, any other a message
saying how to answer. The turn waits (at most `approvals.timeout` seconds, 300) until someone
answers: `/approve [session|always]` or `/deny [reason]` in that chat, or an adapter's button calling
`resolve_gateway_approval(session_key, choice)`. "session" approves the rule for the rest of the
conversation; "always" for every conversation, kept in `$HERMES_HOME/gateway/approvals.json`, or in
the shared database `state.url` names (every gateway of the fleet honours it; `revoke_permanent`,
`hermes gateway approvals --revoke`, takes it back everywhere).
A stopped turn, or a conversation whose turn ended, leaves nothing waiting.

The waiting approvals are the process's, as Hermes' are: an adapter's button handler calls the module-level
functions with the session key the gateway handed to `send_exec_approval`.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from hermes_core import StateStoreError
from hermes_core import config_keys as keys
from hermes_core.hosting import Cancelled, cancel_check

from .session_context import get_session_env

if TYPE_CHECKING:
    from .state import Always

__all__ = [
    "GatewayApprover", "answer", "approve_permanent", "approve_session", "clear_session", "get_pending_gateway_approval",
    "has_blocking_approval", "is_approved", "list_gateway_approvals", "pending_gateway_approval_count",
    "present", "register_gateway_notify", "resolve_gateway_approval", "revoke_permanent", "unregister_gateway_notify",
]

CHOICES = ("once", "session", "always", "deny")
log = logging.getLogger("hermes.gateway")


@attrs.define(eq=False)
class _Waiting:
    data: dict[str, Any]
    event: threading.Event = attrs.Factory(threading.Event)
    result: str | None = None
    reason: str | None = None


_lock = threading.Lock()
_queues: dict[str, list[_Waiting]] = {}
_notify: dict[str, Callable[[dict[str, Any]], None]] = {}
_session_approved: dict[str, set[str]] = {}
_permanent: set[str] = set()  # until `load_permanent` names where they are kept
_always: Always | None = None


def register_gateway_notify(session_key: str, notify: Callable[[dict[str, Any]], None]) -> None:
    """How to put an approval to the conversation `session_key`: `notify(data)`, called on the
    turn's thread, must hand the sending to the event loop and return."""
    with _lock:
        _notify[session_key] = notify


def unregister_gateway_notify(session_key: str) -> None:
    """The conversation's turn is over: no one can be asked, and whatever waits is let go (denied)."""
    with _lock:
        _notify.pop(session_key, None)
        waiting = _queues.pop(session_key, [])
    for entry in waiting:
        entry.event.set()


def resolve_gateway_approval(session_key: str, choice: str, resolve_all: bool = False, reason: str | None = None,
                             request_id: str | None = None) -> int:
    """Answer the conversation's oldest waiting approval (or the one `request_id` names, or all
    of them): `choice` is "once", "session", "always" or "deny". Returns how many were answered
    (0: nothing was waiting)."""
    choice = choice if choice in CHOICES else "deny"
    with _lock:
        queue = _queues.get(session_key, [])
        if request_id is not None:
            chosen = [e for e in queue if e.data.get("request_id") == request_id]
        else:
            chosen = list(queue) if resolve_all else queue[:1]
        for entry in chosen:
            queue.remove(entry)
            entry.result, entry.reason = choice, reason
            entry.event.set()
        if not queue:
            _queues.pop(session_key, None)
    return len(chosen)


def has_blocking_approval(session_key: str) -> bool:
    """Whether a turn of this conversation waits for an approval."""
    with _lock:
        return bool(_queues.get(session_key))


def list_gateway_approvals(session_key: str) -> list[dict[str, Any]]:
    with _lock:
        return [dict(entry.data) for entry in _queues.get(session_key, [])]


def get_pending_gateway_approval(session_key: str) -> dict[str, Any] | None:
    """The oldest approval this conversation waits for (for a client that reconnects)."""
    pending = list_gateway_approvals(session_key)
    return pending[0] if pending else None


def pending_gateway_approval_count() -> int:
    with _lock:
        return sum(len(queue) for queue in _queues.values())


def approve_session(session_key: str, pattern_key: str) -> None:
    with _lock:
        _session_approved.setdefault(session_key, set()).add(pattern_key)


def approve_permanent(pattern_key: str) -> None:
    """Approve the rule for every conversation, kept across restarts (and, on a shared database,
    for every gateway)."""
    with _lock:
        always = _always
        if always is None:
            _permanent.add(pattern_key)
    if always is not None:  # outside the lock: the event loop's /approve never waits on a disk
        always.add(pattern_key)


def revoke_permanent(pattern_key: str) -> bool:
    """Take back an "always" approval; whether there was one."""
    with _lock:
        always = _always
        if always is None:
            found = pattern_key in _permanent
            _permanent.discard(pattern_key)
            return found
    return always.remove(pattern_key)


def is_approved(session_key: str, pattern_key: str) -> bool:
    with _lock:
        if pattern_key in _session_approved.get(session_key, set()):
            return True
        always = _always
        if always is None:
            return pattern_key in _permanent
    return always.has(pattern_key)


def clear_session(session_key: str) -> None:
    """Forget the conversation's "session" approvals and let go of what it waits for."""
    with _lock:
        _session_approved.pop(session_key, None)
    unregister_gateway_notify(session_key)


def load_permanent(home: Path) -> None:
    """Keep the "always" approvals where `home` keeps them: its approvals.json, or the shared
    database its `state.url` names (an approval made before this is kept there too)."""
    global _always
    from .state import always_for

    always = always_for(home)
    with _lock:
        _always, earlier = always, set(_permanent)
        _permanent.clear()
    for pattern in sorted(earlier):
        always.add(pattern)


@attrs.frozen
class GatewayApprover:
    """The approver of one conversation's turn (see `hermes_core._runtime.approvals`)."""

    session_key: str
    timeout: float
    surface: str = "gateway"

    def __call__(self, request: Any) -> str:
        key = self.session_key
        try:
            if is_approved(key, request.pattern_key):
                return "session"
        except StateStoreError as exc:  # the shared database is down: the chat is asked
            log.warning("could not read the \"always\" approvals (%s); asking the chat", exc)
        entry = _Waiting({"request_id": request.request_id, "approval_id": request.request_id,
                          "command": request.command, "description": request.description,
                          "pattern_key": request.pattern_key, "pattern_keys": [request.pattern_key],
                          "session_key": key, "expires_at": time.time() + self.timeout})
        with _lock:
            notify = _notify.get(key)
            if notify is None:
                return "notify_failed"
            _queues.setdefault(key, []).append(entry)
        try:
            notify(dict(entry.data))
        except Exception:  # noqa: BLE001 - the chat cannot be reached: nothing to wait for
            _drop(key, entry)
            return "notify_failed"
        deadline = time.monotonic() + self.timeout
        try:
            while not entry.event.wait(min(1.0, max(deadline - time.monotonic(), 0))):
                cancel_check()  # the turn was stopped while it waited
                if time.monotonic() >= deadline:
                    _drop(key, entry)
                    return "timeout"
        except Cancelled:
            _drop(key, entry)
            raise
        choice = entry.result or "cancelled"
        if choice == "session":
            approve_session(key, request.pattern_key)
        elif choice == "always":
            try:
                approve_permanent(request.pattern_key)
            except StateStoreError as exc:  # approved this once all the same
                log.warning("could not keep %r approved always (%s); approve it again later", request.pattern_key, exc)
        return choice


def _drop(key: str, entry: _Waiting) -> None:
    with _lock:
        queue = _queues.get(key, [])
        if entry in queue:
            queue.remove(entry)
        if not queue:
            _queues.pop(key, None)


def approver_for(manager: Any, session_key: str | None = None) -> GatewayApprover:
    """The approver of a turn of the conversation `session_key` (else the one the session variables name)."""
    key = session_key or get_session_env("HERMES_SESSION_KEY")
    return GatewayApprover(key, float(manager.config.read(keys.APPROVALS_TIMEOUT)))


def answer(session_key: str, command: str, args: str) -> str:
    """What `/approve [all] [session|always]` or `/deny [all] [reason]` in a chat does, as Hermes'
    gateway answers them; the reply to send."""
    words = args.split()
    resolve_all = bool(words) and words[0].lower() == "all"
    words = words[1:] if resolve_all else words
    lowered = {word.lower() for word in words}
    choice = "deny" if command == "deny" else ("always" if lowered & {"always", "permanent", "permanently"} else
                                               "session" if lowered & {"session", "ses"} else "once")
    count = resolve_gateway_approval(session_key, choice, resolve_all,
                                     reason=" ".join(words) or None if choice == "deny" else None)
    if not count:
        return "Nothing is waiting for an approval here."
    if choice == "deny":
        return f"Denied{f' {count} calls' if count > 1 else ''}."
    scope = {"once": "this once", "session": "for this conversation", "always": "from now on"}[choice]
    return f"Approved {scope}{f' ({count} calls)' if count > 1 else ''}."


async def present(adapter: Any, chat_id: str, data: dict[str, Any], metadata: dict[str, Any] | None = None) -> None:
    """Put an approval to the chat through `adapter` (its buttons, or a message saying how to answer)."""
    result = await adapter.send_exec_approval(chat_id, data["command"], data["session_key"],
                                              description=data["description"], metadata=metadata)
    if getattr(result, "success", True) is False:
        raise ConnectionError(getattr(result, "error", None) or "the approval could not be sent")
