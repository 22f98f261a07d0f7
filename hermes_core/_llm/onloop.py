"""Redis from the caller's event loop (redis-py's asyncio client): the budgets' counters reserve
there, one round trip the loop awaits without blocking, instead of a hop to a thread and back.

A client is bound to the loop it connected on, so each running loop gets its own (per Redis URL),
with the same socket timeouts as the counters' own client; it is closed when the loop shuts down
(`asyncio.run`'s `shutdown_asyncgens`, as the LLM clients of `transport` are).
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import AsyncIterator
from typing import Any

__all__ = ["SOCKET_TIMEOUT", "script"]

SOCKET_TIMEOUT = 5.0  # seconds a command waits for Redis's answer before it is sent again (the counters' too)

_loops: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, _LoopRedis]] = weakref.WeakKeyDictionary()


class _LoopRedis:
    __slots__ = ("client", "keeper", "scripts")

    def __init__(self, url: str) -> None:
        import redis
        import redis.asyncio
        from redis.asyncio.retry import Retry
        from redis.backoff import NoBackoff

        self.client = redis.asyncio.Redis.from_url(url, socket_timeout=SOCKET_TIMEOUT, socket_connect_timeout=1.0,
                                                   retry=Retry(NoBackoff(), 1),
                                                   retry_on_error=[redis.ConnectionError, redis.TimeoutError])
        self.scripts: dict[str, Any] = {}
        self.keeper: AsyncIterator[None] | None = None

    async def _keep(self, loop: asyncio.AbstractEventLoop, url: str) -> AsyncIterator[None]:
        try:
            yield
        finally:  # the loop is shutting down
            _loops.get(loop, {}).pop(url, None)
            await self.client.aclose()


async def script(url: str, source: str) -> Any:
    """Redis's script `source` (an `AsyncScript`: `await it(args=[...])`, loaded on its first use)
    on the running loop's client of `url`."""
    loop = asyncio.get_running_loop()
    clients = _loops.get(loop)
    if clients is None:
        clients = _loops[loop] = {}
    found = clients.get(url)
    if found is None:
        found = clients[url] = _LoopRedis(url)
        found.keeper = found._keep(loop, url)
        await found.keeper.__anext__()
    registered = found.scripts.get(source)
    if registered is None:
        registered = found.scripts[source] = found.client.register_script(source)
    return registered
