"""What `hermes dashboard` runs: a manager whose plugins may register auth providers, the
dashboard over it, served until a signal.

>>> dashboard = open_dashboard("127.0.0.1")          # plugins loaded, the "dashboard" capability served
>>> asyncio.run(serve_dashboard(dashboard, "127.0.0.1", 9119, ready=print))
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable
from typing import Any

from hermes_core import PluginManager, ServingError
from hermes_core.hosting import BrowserPolicy, is_loopback, serve_asgi

from .registry import AuthProviders

__all__ = ["open_dashboard", "serve_dashboard", "TOKEN_VARIABLE"]

TOKEN_VARIABLE = "HERMES_DASHBOARD_SESSION_TOKEN"
NO_PROVIDER = ("hermes dashboard: {host} is not a loopback address, so a login is required, and no plugin "
               "registered a dashboard auth provider; enable one that does (its register(ctx) calls "
               "ctx.register_dashboard_auth_provider(provider); see docs/dashboard.md), or serve on 127.0.0.1")


def open_dashboard(host: str, *, login: bool = False, manager: PluginManager | None = None) -> Any:
    """The dashboard for serving on `host`: loopback (unless `login`) is guarded by a per-process
    session token (`HERMES_DASHBOARD_SESSION_TOKEN`, else a random one); any other address by the
    auth providers, and with none registered `ServingError` says how to add one."""
    from .app import Dashboard

    providers = AuthProviders()
    if manager is None:
        manager = PluginManager()
    manager.serve("dashboard", providers)
    manager.load()
    providers.make_current()
    loopback = is_loopback(host)
    gated = login or not loopback
    if gated and not providers.all():
        raise ServingError(NO_PROVIDER.format(host=host))
    token = None if gated else (os.environ.get(TOKEN_VARIABLE) or secrets.token_urlsafe(32))
    return Dashboard(manager, providers, token=token, secure=not loopback)


async def serve_dashboard(dashboard: Any, host: str, port: int, *, ready: Callable[[str], Any] | None = None) -> None:
    """Serve `dashboard` at `host:port` until SIGINT/SIGTERM (`ready(url)` once it listens)."""
    await serve_asgi(dashboard.app(), host, port, ready=ready, what="hermes dashboard", app_checks_keys=True,
                     max_body=1024 * 1024, browsers=BrowserPolicy.from_config(dashboard.manager.config))
