"""The floor under every stage that keeps state: where it is (`state.url`), the connections and
pool, schema versions and upgrades, leases, and the few places the SQL dialects differ.

- `state_url(home)`: the configured shared database, or None for SQLite under the home;
- `Store`: the base class of a stage's tables (a `SqliteFile` when no URL is configured);
- `Hosts`: the hosts sharing a home or a database, their heartbeats and the leases they hold;
- `close_state_pools(where, timeout=)`: close this process's pools on the databases picked.

Each stage owns its tables and queries; none talks to a driver. psycopg is imported only
when a `postgresql://` URL is configured.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .hosts import Heartbeat, Hosts, host_id
from .store import Store, pg_schema_of
from .url import ENV, StateUrl, parse_state_url, state_url

if TYPE_CHECKING:
    from .postgres import close_state_pools

__all__ = ["ENV", "Heartbeat", "Hosts", "StateUrl", "Store", "close_state_pools", "host_id", "parse_state_url",
           "pg_schema_of", "state_url"]


def __getattr__(name: str) -> Any:
    if name == "close_state_pools":  # from the PostgreSQL module, which is loaded only when used
        from .postgres import close_state_pools

        return close_state_pools
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
