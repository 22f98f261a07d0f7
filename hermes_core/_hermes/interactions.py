"""Hermes' other gateway questions, `tools.clarify_gateway` (the agent asks the user to choose) and
`tools.slash_confirm` (a slash command asks to be confirmed): an adapter with buttons for them
calls these when one is pressed. hermes-core's agent asks neither question, so nothing is ever
waiting: a press resolves nothing (False, or None for the confirmation's reply), as Hermes
answers for a question that already expired. Tool calls put to a human are asked through
`tools.approval` (hermes-core's `gateway.approvals`), which does wait."""

from __future__ import annotations

__all__ = ["mark_awaiting_text", "resolve", "resolve_gateway_clarify"]


def resolve_gateway_clarify(clarify_id: str, value: str) -> bool:
    """Answer the clarify question `clarify_id`: False, none is waiting."""
    return False


def mark_awaiting_text(clarify_id: str) -> bool:
    """Wait for a typed answer to `clarify_id`: False, none is waiting."""
    return False


async def resolve(session_key: str, confirm_id: str, choice: str, timeout: float = 0) -> str | None:
    """Answer the slash-command confirmation `confirm_id`: None (no reply to send), none is waiting."""
    return None
