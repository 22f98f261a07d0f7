"""`session/cancel` mid-answer over ACP: the prompt answers `cancelled` every time, and the
broken-off answer is not stored as said (the session goes on from the user's messages alone),
also from a model server whose stream, broken off, looks as if it had ended."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("acp", reason="the ACP tests need the agent-client-protocol SDK (hermes-core[acp])")

from acp import text_block  # noqa: E402

from hermes_core.testing import Reply  # noqa: E402
from tests.acp.test_acp import Editor, session  # noqa: E402
from tests.helpers import hermes_json, llm_config  # noqa: E402

ANSWER = "PIECE0 PIECE1 PIECE2 PIECE3 PIECE4"


@pytest.mark.parametrize("streams", ["yes", "unframed"], ids=["chunked", "closed-at-end"])
def test_four_cancels_mid_answer_are_each_cancelled_and_nothing_half_said_is_stored(
        home: Path, llm_server, streams: str) -> None:
    llm_server.streams = streams  # unframed: a stream broken off looks like one that ended
    llm_config(home, llm_server.url, "plugins:\n  disabled: [cron]\n")
    holds = [threading.Event() for _ in range(4)]
    for index, held in enumerate(holds):
        llm_server.push(Reply(ANSWER, hold=held, hold_after=1 + index % 3))
    editor = Editor()

    async def work(conn: Any) -> tuple[str, list[str]]:
        new = await conn.new_session(cwd=str(home), mcp_servers=[])
        reasons = []
        for index in range(4):
            shown = len(editor.text())
            asked = asyncio.ensure_future(conn.prompt(session_id=new.session_id, prompt=[text_block(f"ask {index}")]))
            while len(editor.text()) == shown:  # the first piece of this answer reached the editor
                await asyncio.sleep(0.01)
            await conn.cancel(session_id=new.session_id)
            reasons.append((await asked).stop_reason)
        return new.session_id, reasons

    try:
        session_id, reasons = session(editor, work)
    finally:
        for held in holds:
            held.set()
    assert reasons == ["cancelled"] * 4
    stored = hermes_json("sessions", "show", session_id)["messages"]
    assert [(m["role"], m["content"]) for m in stored] == [("user", f"ask {index}") for index in range(4)]
