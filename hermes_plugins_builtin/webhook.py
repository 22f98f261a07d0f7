"""Built-in plugin `webhook`: the agent behind an HTTP endpoint on loopback, a messaging platform
registered with `ctx.register_platform` as any other (its adapter: `webhook_adapter`, imported
only when `hermes gateway run` starts it).

    platforms:
      webhook:
        enabled: true
        port: 8644            # 0: any free port
        secret: ...           # or $WEBHOOK_SECRET; every request must carry it

See docs/gateway.md for the requests it takes.
"""

from __future__ import annotations

import os
from typing import Any

SECRET_ENV = "WEBHOOK_SECRET"


def _adapter(config: Any) -> Any:
    from .webhook_adapter import WebhookAdapter

    return WebhookAdapter(config)


def _configured(config: Any) -> bool:
    return bool(str(config.extra.get("secret") or os.getenv(SECRET_ENV, "")).strip())


def register(ctx: Any) -> None:
    ctx.register_platform(
        name="webhook", label="Webhook", adapter_factory=_adapter, check_fn=lambda: True,
        validate_config=_configured, required_env=[SECRET_ENV],
        install_hint=f"set platforms.webhook.secret in config.yaml or ${SECRET_ENV}", emoji="🪝",
        platform_hint="You are answering an HTTP request; the answer is returned as plain text.",
    )
