"""What crosses an adapter, as Hermes defines it: `MessageEvent` (a message received),
`MessageType`, `SendResult` (what `send` returns), `ProcessingOutcome`, `EphemeralReply`.

Build a `MessageEvent` with keyword arguments: Hermes added fields before `source` over time.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime
from enum import Enum
from typing import Any

from ..session import SessionSource

__all__ = ["MessageType", "MessageEvent", "SendResult", "ProcessingOutcome", "EphemeralReply", "MessageHandler",
           "SEND_ERROR_KINDS", "coerce_plaintext_gateway_command"]


class MessageType(Enum):
    TEXT = "text"
    LOCATION = "location"
    PHOTO = "photo"
    VIDEO = "video"
    AUDIO = "audio"
    VOICE = "voice"
    DOCUMENT = "document"
    STICKER = "sticker"
    COMMAND = "command"


class ProcessingOutcome(Enum):
    SUCCESS = "success"
    FAILURE = "failure"
    CANCELLED = "cancelled"


@dataclass
class MessageEvent:
    """One message a platform delivered: its text, its source (chat and sender), its media as
    local files (`media_urls`, cached with `cache_image_from_url` & co.) and the platform's ids."""

    text: str
    message_type: MessageType = MessageType.TEXT
    user_id: str | None = None
    user_name: str | None = None
    source: SessionSource = None  # type: ignore[assignment]  # Hermes' default; the gateway needs one
    raw_message: Any = None
    message_id: str | None = None
    platform_update_id: int | None = None
    media_urls: list[str] = field(default_factory=list)
    media_types: list[str] = field(default_factory=list)
    media_text_inlined: list[bool | None] = field(default_factory=list)
    reply_to_message_id: str | None = None
    reply_to_text: str | None = None
    reply_to_author_id: str | None = None
    reply_to_author_name: str | None = None
    reply_to_is_own_message: bool = False
    prompt_response: dict[str, Any] | None = None
    auto_skill: str | list[str] | None = None
    channel_prompt: str | None = None
    channel_context: str | None = None
    context_only: bool = False
    internal: bool = False  # the gateway's own (an injected message): not authorised again
    metadata: dict[str, Any] = field(default_factory=dict)
    timestamp: datetime = field(default_factory=datetime.now)
    allow_gateway_control: bool = True

    def is_command(self) -> bool:
        return self.allow_gateway_control and self.text.lstrip().startswith("/")

    def get_command(self) -> str | None:
        if not self.is_command():
            return None
        word = self.text.lstrip()[1:].split(maxsplit=1)[0] if self.text.strip() != "/" else ""
        word = word.split("@", 1)[0].lower()
        return None if not word or "/" in word else word

    def get_command_args(self) -> str:
        if not self.is_command():
            return self.text
        rest = self.text.lstrip().split(maxsplit=1)
        return (rest[1] if len(rest) > 1 else "").replace("—", "--").replace("–", "-")


SEND_ERROR_KINDS = ("too_long", "bad_format", "forbidden", "not_found", "rate_limited", "transient", "unknown")


@dataclass
class SendResult:
    """What `send` did: `success`, the platform's `message_id`, or the `error` (and whether a retry may help)."""

    success: bool
    message_id: str | None = None
    error: str | None = None
    raw_response: Any = None
    retryable: bool = False
    retry_after: float | None = None
    continuation_message_ids: tuple[str, ...] = ()
    error_kind: str | None = None


class EphemeralReply(str):
    """A reply the platform may remove after `ttl_seconds`."""

    ttl_seconds: float | None

    def __new__(cls, text: str, ttl_seconds: float | None = None) -> EphemeralReply:
        reply = super().__new__(cls, text)
        reply.ttl_seconds = ttl_seconds
        return reply

    @property
    def text(self) -> str:
        return str(self)


MessageHandler = Callable[[MessageEvent], Awaitable["str | EphemeralReply | None"]]


def coerce_plaintext_gateway_command(event: MessageEvent) -> MessageEvent:
    """Hermes turns a few plain-text control phrases ("restart gateway") into commands; hermes-core's
    gateway has no such commands, so the event is returned as it is."""
    return event
