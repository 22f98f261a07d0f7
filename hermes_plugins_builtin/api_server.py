"""Built-in plugin `api_server`: `hermes serve`'s OpenAI-compatible API as the messaging platform
Hermes calls `api_server`, so that `hermes gateway run` serves it beside the chat platforms, as a
Hermes config asks (its adapter: `api_server_adapter`, imported only when the gateway starts it).

    platforms:
      api_server:
        enabled: true         # or API_SERVER_ENABLED=true, or API_SERVER_KEY set (as in Hermes)
        port: 8642            # or API_SERVER_PORT; host: / API_SERVER_HOST (127.0.0.1)
        key: ...              # or API_SERVER_KEY; needed off loopback

Needs the `server` extra (Starlette and uvicorn). See docs/api-server.md.
"""

from __future__ import annotations

import importlib.util
import os
from typing import Any


def _adapter(config: Any) -> Any:
    from .api_server_adapter import ApiServerAdapter

    return ApiServerAdapter(config)


def _installed() -> bool:
    return all(importlib.util.find_spec(name) is not None for name in ("starlette", "uvicorn"))


def _from_environment() -> dict[str, Any] | None:
    """Hermes enables the platform with API_SERVER_ENABLED, or by API_SERVER_KEY alone."""
    if os.getenv("API_SERVER_ENABLED", "").lower() in ("1", "true", "yes") or os.getenv("API_SERVER_KEY"):
        return {"enabled": True}
    return None


def register(ctx: Any) -> None:
    ctx.register_platform(
        name="api_server", label="API server", adapter_factory=_adapter, check_fn=_installed,
        env_enablement_fn=_from_environment, install_hint="pip install 'hermes-core[server]'", emoji="🔌",
        platform_hint="You are answering a request to an OpenAI-compatible API; the caller renders Markdown.",
    )
