"""What a platform adapter does by default where its platform can do less than Hermes asks:
editing or deleting a message, sending an image, a file, a voice note or a video (a short notice
as text), putting a tool call to the chat for approval (a message saying how to answer), and
answering a Slack-style interactive action (the plugins' `register_slack_action_handler`
handlers). `BasePlatformAdapter` inherits these; an adapter overrides what its platform has."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from .event import SendResult
from .text import approval_text

__all__ = ["SendDefaults"]

ActionDispatch = Callable[[Any, Mapping[str, Any], Mapping[str, Any]], Awaitable[bool]]


class SendDefaults:
    """The defaults (see the module); `send` is the adapter's own."""

    _slack_actions: ActionDispatch | None = None

    @abstractmethod
    async def send(self, chat_id: str, content: str, reply_to: str | None = None,
                   metadata: dict[str, Any] | None = None) -> SendResult: ...

    def format_message(self, content: str) -> str:
        return content

    async def edit_message(self, chat_id: str, message_id: str, content: str, *, finalize: bool = False) -> SendResult:
        return SendResult(success=False, error="editing messages is not supported on this platform")

    async def delete_message(self, chat_id: str, message_id: str) -> bool:
        return False

    async def send_image(self, chat_id: str, image_url: str, caption: str | None = None, reply_to: str | None = None,
                         metadata: dict[str, Any] | None = None) -> SendResult:
        text = f"{caption}\n{image_url}" if caption else image_url
        return await self.send(chat_id, text, reply_to=reply_to, metadata=metadata)

    @classmethod
    def supports_exec_approval_buttons(cls) -> bool:
        """Whether this adapter's `send_exec_approval` shows buttons that answer it."""
        return False

    async def send_exec_approval(self, chat_id: str, command: str, session_key: str, description: str | None = None,
                                 metadata: dict[str, Any] | None = None, allow_permanent: bool = True,
                                 allow_session: bool = True, smart_denied: bool = False) -> SendResult:
        """Put a tool call to the chat (`gateway.approvals`); by default a message saying how to answer."""
        text = approval_text(command, description or "", allow_session=allow_session, allow_permanent=allow_permanent)
        return await self.send(chat_id, text, metadata=metadata)

    async def _send_file(self, chat_id: str, kind: str, path: str, caption: str | None, reply_to: str | None,
                         metadata: dict[str, Any] | None) -> SendResult:
        text = f"⚠️ Couldn't deliver the {kind} attachment ({path.rsplit('/', 1)[-1]})"
        return await self.send(chat_id, f"{caption}\n{text}" if caption else text, reply_to=reply_to, metadata=metadata)

    async def send_image_file(self, chat_id: str, image_path: str, caption: str | None = None,
                              reply_to: str | None = None, metadata: dict[str, Any] | None = None,
                              **_: Any) -> SendResult:
        return await self._send_file(chat_id, "image", image_path, caption, reply_to, metadata)

    async def send_document(self, chat_id: str, file_path: str, caption: str | None = None,
                            file_name: str | None = None, reply_to: str | None = None,
                            metadata: dict[str, Any] | None = None, **_: Any) -> SendResult:
        return await self._send_file(chat_id, "document", file_name or file_path, caption, reply_to, metadata)

    async def send_voice(self, chat_id: str, audio_path: str, caption: str | None = None,
                         reply_to: str | None = None, metadata: dict[str, Any] | None = None, **_: Any) -> SendResult:
        return await self._send_file(chat_id, "voice", audio_path, caption, reply_to, metadata)

    async def send_video(self, chat_id: str, video_path: str, caption: str | None = None,
                         reply_to: str | None = None, metadata: dict[str, Any] | None = None, **_: Any) -> SendResult:
        return await self._send_file(chat_id, "video", video_path, caption, reply_to, metadata)

    def set_slack_action_dispatch(self, dispatch: ActionDispatch | None) -> None:
        """Where `handle_slack_action` hands an action: the gateway sets its plugins' handlers."""
        self._slack_actions = dispatch

    async def handle_slack_action(self, ack: Any, body: Mapping[str, Any], action: Mapping[str, Any]) -> bool:
        """An interactive action (a button pressed, as Slack reports it: `body` the whole payload,
        `action` the pressed element with its `action_id`): the first plugin handler registered
        with `ctx.register_slack_action_handler` that matches it is called as Hermes calls it,
        `handler(ack, body, action)`. False when none matched (the adapter handles it itself)."""
        dispatch = self._slack_actions
        return False if dispatch is None else await dispatch(ack, body, action)
