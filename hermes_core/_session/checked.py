"""What a session takes of a message list an engine made: it must be a valid OpenAI list."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .._messages import Messages, message_problems, repair_tool_pairing

__all__ = ["checked_messages"]


def checked_messages(result: Any, original: Messages, what: str, note: Callable[[str], None]) -> Messages:
    """`result` when it is a valid message list; repaired when only its tool pairing was wrong;
    else `original`. `what` (`context engine 'x'.compress()`) names the call in the note."""
    if result is None:
        return original
    problems = message_problems(result)
    if not problems:
        return result  # type: ignore[no-any-return]
    repaired = repair_tool_pairing(result) if isinstance(result, list) and all(
        isinstance(m, dict) for m in result) else None
    fixed = repaired is not None and not message_problems(repaired)
    note(f"{what} returned an invalid message list ({'; '.join(problems[:3])}); "
         f"{'repaired its tool pairing' if fixed else 'kept the original'}")
    return repaired if fixed and repaired is not None else original
