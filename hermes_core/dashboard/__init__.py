"""`hermes dashboard`: the operator's view of a home in a browser (docs/dashboard.md).

For plugin authors: `provider` (Hermes' `DashboardAuthProvider`, `Session`, `LoginStart`,
`TokenPrincipal` and errors, also served as `hermes_cli.dashboard_auth`); a plugin registers one
with `ctx.register_dashboard_auth_provider(provider)`, and adds a page with
`dashboard/manifest.json` (`plugin_pages`).

Internal: `registry` (the providers plugins registered), `gate` (who a request is from), `security`
(audit log, rate limit, CSRF, cookies), `data` (each page's data, read as the CLI reads it), `actions`
(each button, as its CLI command does it), `pages` (HTML), `app` (`Dashboard`, the Starlette app),
`serve` (`open_dashboard`, `serve_dashboard`: what `hermes dashboard` runs).

Starlette and uvicorn (the `server` extra) are imported by `app` and `serve` alone.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .app import DEFAULT_PORT, Dashboard
    from .provider import (DashboardAuthProvider, InvalidCodeError, InvalidCredentialsError, LoginStart,
                           ProviderError, RefreshExpiredError, Session, TokenPrincipal)
    from .serve import open_dashboard, serve_dashboard

_EXPORTS = {
    **dict.fromkeys(["DashboardAuthProvider", "InvalidCodeError", "InvalidCredentialsError", "LoginStart",
                     "ProviderError", "RefreshExpiredError", "Session", "TokenPrincipal"], "provider"),
    "Dashboard": "app", "DEFAULT_PORT": "app", "open_dashboard": "serve", "serve_dashboard": "serve",
}

__all__ = ["DEFAULT_PORT", "Dashboard", "DashboardAuthProvider", "InvalidCodeError", "InvalidCredentialsError",
           "LoginStart", "ProviderError", "RefreshExpiredError", "Session", "TokenPrincipal", "open_dashboard",
           "serve_dashboard"]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'hermes_core.dashboard' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value
