"""`gateway.config`, as Hermes defines it: `Platform`, `PlatformConfig`, `HomeChannel`, and how
config.yaml's `platforms.<name>` block becomes a `PlatformConfig`.

`Platform` has Hermes' built-in members; `Platform("irc")` gives a plugin platform its own
member (the same object every time), as Hermes' `_missing_` does for registered platforms.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

__all__ = ["Platform", "HomeChannel", "PlatformConfig", "ChannelOverride", "GatewayConfig", "platform_config"]

_PLATFORM_NAME = re.compile(r"[a-z0-9][a-z0-9_\-]*")


class Platform(Enum):
    """A messaging platform: Hermes' built-in ones, and any name a plugin registers."""

    LOCAL = "local"
    TELEGRAM = "telegram"
    DISCORD = "discord"
    WHATSAPP = "whatsapp"
    WHATSAPP_CLOUD = "whatsapp_cloud"
    SLACK = "slack"
    SIGNAL = "signal"
    MATTERMOST = "mattermost"
    MATRIX = "matrix"
    HOMEASSISTANT = "homeassistant"
    EMAIL = "email"
    SMS = "sms"
    DINGTALK = "dingtalk"
    API_SERVER = "api_server"
    WEBHOOK = "webhook"
    MSGRAPH_WEBHOOK = "msgraph_webhook"
    FEISHU = "feishu"
    WECOM = "wecom"
    WECOM_CALLBACK = "wecom_callback"
    WEIXIN = "weixin"
    BLUEBUBBLES = "bluebubbles"
    QQBOT = "qqbot"
    YUANBAO = "yuanbao"
    RELAY = "relay"

    @classmethod
    def _missing_(cls, value: object) -> Platform | None:
        """A plugin platform's member, made on first use (its value lower-cased, as Hermes does)."""
        if not isinstance(value, str) or not value.strip():
            return None
        value = value.strip().lower()
        known = cls._value2member_map_.get(value)
        if known is not None:
            return known  # type: ignore[return-value]
        if not _PLATFORM_NAME.fullmatch(value):
            return None
        member = object.__new__(cls)
        member._value_ = value
        member._name_ = value.upper().replace("-", "_")
        cls._value2member_map_[value] = member
        cls._member_map_[member._name_] = member
        return member


@dataclass
class HomeChannel:
    """The chat a platform delivers unprompted messages to (cron results, notices)."""

    platform: Platform
    chat_id: str
    name: str = "Home"
    thread_id: str | None = None
    user_id: str | None = None
    scope_id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"platform": self.platform.value, "chat_id": self.chat_id, "name": self.name}
        data.update({k: v for k in ("thread_id", "user_id", "scope_id") if (v := getattr(self, k))})
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> HomeChannel:
        return cls(platform=Platform(data["platform"]), chat_id=str(data["chat_id"]), name=data.get("name") or "Home",
                   thread_id=data.get("thread_id"), user_id=data.get("user_id"), scope_id=data.get("scope_id"))


@dataclass
class ChannelOverride:
    """A chat's own model, provider or system prompt."""

    model: str | None = None
    provider: str | None = None
    system_prompt: str | None = None


def _bool(value: Any, default: bool) -> bool:
    if isinstance(value, str):
        lowered = value.strip().lower()
        if lowered in ("true", "1", "yes", "on"):
            return True
        if lowered in ("false", "0", "no", "off"):
            return False
        return default
    return default if value is None else bool(value)


@dataclass
class PlatformConfig:
    """One platform's settings: `platforms.<name>` of config.yaml (`extra:` holds the adapter's own keys)."""

    enabled: bool = False
    token: str | None = None
    api_key: str | None = None
    home_channel: HomeChannel | None = None
    reply_to_mode: str = "first"
    gateway_restart_notification: bool = True
    typing_indicator: bool = True
    typing_status_text: str | None = None
    channel_overrides: dict[str, ChannelOverride] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"enabled": self.enabled, "reply_to_mode": self.reply_to_mode, "extra": dict(self.extra)}
        for name in ("token", "api_key"):
            if getattr(self, name):
                data[name] = getattr(self, name)
        if self.home_channel is not None:
            data["home_channel"] = self.home_channel.to_dict()
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PlatformConfig:
        extra = dict(data.get("extra") or {})
        home = data.get("home_channel")
        overrides = {str(k): ChannelOverride(**{f: v.get(f) for f in ("model", "provider", "system_prompt")})
                     for k, v in (data.get("channel_overrides") or {}).items() if isinstance(v, Mapping)}
        return cls(
            enabled=_bool(data.get("enabled"), False), token=data.get("token"), api_key=data.get("api_key"),
            home_channel=HomeChannel.from_dict(home) if isinstance(home, Mapping) and home.get("chat_id") else None,
            reply_to_mode=str(data.get("reply_to_mode") or "first"),
            gateway_restart_notification=_bool(data.get("gateway_restart_notification",
                                                        extra.get("gateway_restart_notification")), True),
            typing_indicator=_bool(data.get("typing_indicator", extra.get("typing_indicator")), True),
            typing_status_text=data.get("typing_status_text", extra.get("typing_status_text")),
            channel_overrides=overrides, extra=extra,
        )


@dataclass
class GatewayConfig:
    """The gateway's settings adapters may read: the platforms' configs and how sessions are keyed."""

    platforms: dict[Platform, PlatformConfig] = field(default_factory=dict)
    group_sessions_per_user: bool = True
    thread_sessions_per_user: bool = False
    unauthorized_dm_behavior: str = "pair"

    def get_connected_platforms(self) -> list[Platform]:
        return sorted((p for p, c in self.platforms.items() if c.enabled), key=lambda p: p.value)


# Hermes' own keys of a `platforms.<name>` block; the others are the adapter's (`extra`).
_OWN_KEYS = ("enabled", "token", "api_key", "home_channel", "reply_to_mode", "gateway_restart_notification",
             "typing_indicator", "typing_status_text", "channel_overrides", "extra")


def platform_config(block: Mapping[str, Any] | None) -> PlatformConfig:
    """The `PlatformConfig` of a `platforms.<name>` block. Keys other than Hermes' own go into
    `extra` too (the adapter's settings written beside `enabled`), `extra:` winning."""
    block = dict(block or {})
    extra = {k: v for k, v in block.items() if k not in _OWN_KEYS}
    extra.update(block.get("extra") or {})
    return PlatformConfig.from_dict({**block, "extra": extra})
