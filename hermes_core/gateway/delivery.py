"""Hermes' `gateway.delivery` as a delivery target is written: `DeliveryTarget.parse("telegram:123")`,
"origin", "local" or a platform's home channel, and back with `to_string()`. Cron's deliveries
(`hermes_core.cron.delivery`) read targets the same way. Hermes' `DeliveryRouter` and its partial
delivery contract are not served: an adapter that probes for them sends whole answers."""

from __future__ import annotations

import dataclasses

from .config import Platform
from .session import SessionSource

__all__ = ["MAX_PLATFORM_OUTPUT", "DeliveryTarget"]

MAX_PLATFORM_OUTPUT = 4000  # an answer longer than this is cut for a platform that does not split


@dataclasses.dataclass
class DeliveryTarget:
    """Where a message goes: a platform's chat (`chat_id` None: its home channel), the origin of
    a conversation, or local files (`Platform.LOCAL`)."""

    platform: Platform
    chat_id: str | None = None
    thread_id: str | None = None
    is_origin: bool = False
    is_explicit: bool = False

    @classmethod
    def parse(cls, target: str, origin: SessionSource | None = None) -> DeliveryTarget:
        text = target.strip()
        lowered = text.lower()
        if lowered == "origin":
            if origin is not None:
                return cls(origin.platform, origin.chat_id, origin.thread_id, is_origin=True)
            return cls(Platform.LOCAL, is_origin=True)
        if lowered == "local":
            return cls(Platform.LOCAL)
        name, _, rest = text.partition(":")
        try:
            platform = Platform(name.lower())
        except ValueError:
            return cls(Platform.LOCAL)
        if not rest:
            return cls(platform)
        chat_id, _, thread_id = rest.partition(":")
        return cls(platform, chat_id or None, thread_id or None, is_explicit=True)

    def to_string(self) -> str:
        if self.is_origin:
            return "origin"
        if self.platform == Platform.LOCAL:
            return "local"
        if self.chat_id and self.thread_id:
            return f"{self.platform.value}:{self.chat_id}:{self.thread_id}"
        return f"{self.platform.value}:{self.chat_id}" if self.chat_id else self.platform.value
