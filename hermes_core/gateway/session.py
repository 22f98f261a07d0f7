"""`gateway.session`, as Hermes defines it: where a message came from (`SessionSource`) and the
key of its conversation (`build_session_key`, Hermes' algorithm), which the gateway maps to one
agent session kept across restarts."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from .config import Platform

__all__ = ["SessionSource", "build_session_key", "is_shared_multi_user_session", "neutralize_untrusted_inline_text",
           "session_key_for"]


@dataclass
class SessionSource:
    """The chat and the sender of a message."""

    platform: Platform
    chat_id: str
    chat_name: str | None = None
    chat_type: str = "dm"  # "dm", "group", "channel", "thread"
    user_id: str | None = None
    user_name: str | None = None
    thread_id: str | None = None
    chat_topic: str | None = None
    user_id_alt: str | None = None
    chat_id_alt: str | None = None
    is_bot: bool = False
    scope_id: str | None = None
    guild_id: str | None = None  # Hermes' older name of scope_id
    parent_chat_id: str | None = None
    message_id: str | None = None
    role_authorized: bool = False
    profile: str | None = None
    profile_route_rejected: bool = field(default=False, repr=False, compare=False)
    auto_thread_created: bool = False
    auto_thread_initial_name: str | None = None
    prospective_thread_id: str | None = None
    delivered_via_upstream_relay: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.platform, Platform):
            self.platform = Platform(self.platform)
        self.scope_id = self.scope_id or self.guild_id
        self.guild_id = self.scope_id

    @property
    def description(self) -> str:
        if self.platform == Platform.LOCAL:
            return "CLI terminal"
        text = (f"DM with {self.user_name or self.user_id or self.chat_id}" if self.chat_type == "dm"
                else f"{self.chat_type}: {self.chat_name or self.chat_id}")
        return text + (f", thread: {self.thread_id}" if self.thread_id else "")

    def to_dict(self) -> dict[str, Any]:
        skipped = {"role_authorized", "profile_route_rejected", "delivered_via_upstream_relay"}
        data = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in skipped}
        data["platform"] = self.platform.value
        return {k: v for k, v in data.items() if v not in (None, False) or k == "platform"}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SessionSource:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


def _namespace(profile: str | None) -> str:
    if not profile or profile == "default":
        return "agent:main"
    return "agent:main~" if profile == "main" else f"agent:{profile}"


def build_session_key(source: SessionSource, group_sessions_per_user: bool = True,
                      thread_sessions_per_user: bool = False, profile: str | None = None) -> str:
    """The conversation a message belongs to, as Hermes keys it: `agent:main:<platform>:<chat
    type>[:<chat id>][:<user>][:<thread>]` (a DM: one per chat; a group: one per member unless
    `group_sessions_per_user` is off; a thread: shared unless `thread_sessions_per_user`)."""
    is_dm = source.chat_type == "dm"
    chat_id = source.chat_id
    thread_id = source.thread_id or (None if is_dm else source.prospective_thread_id)
    chat_type_slot = "thread" if thread_id and not source.thread_id else source.chat_type
    if is_dm:
        isolate_user = not chat_id
    else:
        isolate_user = group_sessions_per_user and not (thread_id and not thread_sessions_per_user)
    participant = (source.user_id_alt or source.user_id) if (isolate_user or not is_dm) else None
    parts: list[str] = [_namespace(profile), source.platform.value, chat_type_slot]
    if source.platform == Platform.SLACK and source.scope_id:
        parts.append(str(source.scope_id))
    if chat_id:
        parts.append(chat_id)
    user_part = [str(participant)] if isolate_user and participant else []
    thread_part = [thread_id] if thread_id else []
    parts += user_part + thread_part if is_dm else thread_part + user_part
    return ":".join(str(part) for part in parts)


def session_key_for(source: SessionSource, extra: Any) -> str:
    """`build_session_key` with a platform's `extra` settings (`group_sessions_per_user`,
    `thread_sessions_per_user`), as Hermes' adapters key their conversations."""
    extra = extra if isinstance(extra, Mapping) else {}
    return build_session_key(source, bool(extra.get("group_sessions_per_user", True)),
                             bool(extra.get("thread_sessions_per_user", False)))


def is_shared_multi_user_session(source: SessionSource, *, group_sessions_per_user: bool = True,
                                 thread_sessions_per_user: bool = False) -> bool:
    """Whether several people talk in the conversation of `source` (a group or thread not split per user)."""
    if source.chat_type == "dm":
        return False
    thread_id = source.thread_id or source.prospective_thread_id
    if thread_id:
        return not thread_sessions_per_user
    return not group_sessions_per_user


def neutralize_untrusted_inline_text(value: Any, *, max_chars: int = 240) -> str:
    """A sender's text (a display name, a chat title) made one inert line for a prompt: line
    breaks and control characters become spaces, runs of spaces one, at most `max_chars`."""
    text = " ".join("".join(ch if ch.isprintable() else " " for ch in str(value)).split())
    return text if not max_chars or len(text) <= max_chars else text[: max_chars - 3] + "..."
