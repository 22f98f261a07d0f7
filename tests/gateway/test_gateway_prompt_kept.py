"""A gateway conversation resumed after a restart sends the system prompt it started with, though
SOUL.md and the memory files changed in between; a new conversation reads them again."""

from __future__ import annotations

from pathlib import Path

from tests.helpers.chat import GatewayProcess, configure, post_json

SECRET = {"Authorization": "Bearer s3cret"}


def test_a_restarted_gateway_resumes_a_conversation_with_its_kept_prompt(home: Path, llm_server, chat) -> None:
    url = configure(home, llm_server.url)
    (home / "SOUL.md").write_text("You are Quill.", encoding="utf-8")
    (home / "memories").mkdir(exist_ok=True)
    (home / "memories" / "MEMORY.md").write_text("The CI runs on Fridays.", encoding="utf-8")
    llm_server.always("ok")
    with GatewayProcess() as gateway:
        gateway.wait_for(r"webhook: connected")
        assert post_json(url, {"text": "hello", "chat_id": "ada"}, SECRET)[0] == 200
        gateway.stop()
    (home / "SOUL.md").write_text("You are Nib.", encoding="utf-8")
    (home / "memories" / "MEMORY.md").write_text("The CI runs on Mondays.", encoding="utf-8")
    with GatewayProcess() as gateway:
        gateway.wait_for(r"webhook: connected")
        assert post_json(url, {"text": "again", "chat_id": "ada"}, SECRET)[0] == 200
        assert post_json(url, {"text": "hi", "chat_id": "bob"}, SECRET)[0] == 200
        gateway.stop()
    first, resumed, other = (request.messages[0]["content"] for request in llm_server.requests)
    assert resumed == first and first.startswith("You are Quill.") and "Fridays" in first
    assert other.startswith("You are Nib.") and "Mondays" in other
