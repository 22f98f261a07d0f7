"""Putting a tool call to a human: a `pre_tool_call` hook answering `{"action": "approve",
"message": ..., "rule_key": ...}` asks for it, and the host the turn runs in decides how to ask.

A host that can ask someone (the gateway asks the chat the message came from; an editor asks
its user) runs its turns inside `approver_scope(approver)`. `approver(request)` blocks until a
choice is made and returns it (its `surface` and `session_key` attributes, where it has them,
name it to the approval hooks): "once", "session" or "always" let the call run; "deny",
"timeout", "cancelled" or "notify_failed" block it. Where no approver is in scope (`hermes run`,
a batch, the API server), an approval request blocks the call, as Hermes does with no human
present.

>>> with approver_scope(lambda request: "once"):
...     ...   # turns run here may have their tool calls approved
"""

from __future__ import annotations

import contextvars
import hashlib
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import attrs

__all__ = ["APPROVED", "ApprovalRequest", "Approver", "approver_scope", "current_approver", "pattern_key"]

APPROVED = frozenset({"once", "session", "always"})


@attrs.frozen
class ApprovalRequest:
    """One tool call put to a human: the tool and its arguments, why it needs approval (the
    hook's message), the rule it falls under (`pattern_key`: a "session" or "always" answer
    approves the rule), and the ids of the turn it belongs to."""

    tool_name: str
    args: Mapping[str, Any]
    description: str
    pattern_key: str
    session_id: str = ""
    turn_id: str = ""
    tool_call_id: str = ""
    request_id: str = attrs.field(factory=lambda: uuid.uuid4().hex[:12])

    @property
    def command(self) -> str:
        """The call as a person reads it: `tool(arguments)`, the arguments cut at 800 characters."""
        import json

        shown = json.dumps(dict(self.args), ensure_ascii=False, default=str)
        return f"{self.tool_name}({shown if len(shown) <= 800 else shown[:799] + '…'})"


Approver = Callable[[ApprovalRequest], str]

_current: contextvars.ContextVar[Approver | None] = contextvars.ContextVar("hermes_approver", default=None)


def current_approver() -> Approver | None:
    """Who can be asked in the turn this code runs in, if anyone."""
    return _current.get()


@contextmanager
def approver_scope(approver: Approver) -> Iterator[Approver]:
    """Run the block (a turn) with `approver` to ask."""
    token = _current.set(approver)
    try:
        yield approver
    finally:
        _current.reset(token)


def pattern_key(tool_name: str, reason: str, rule_key: str = "") -> str:
    """The rule a request falls under, as Hermes keys a plugin's: `plugin_rule:<rule_key>`, else
    `plugin_rule:<tool>:<hash of the reason>`."""
    if rule_key:
        return f"plugin_rule:{rule_key}"
    return f"plugin_rule:{tool_name}:{hashlib.sha256(reason.encode('utf-8', 'replace')).hexdigest()[:12]}"
