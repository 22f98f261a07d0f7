"""Hermes' `gateway.run`: the messaging gateway's runner, as installers and adapters look for it.

A platform plugin's installer checks that it runs beside Hermes by importing
`gateway.run.GatewayRunner` (and reading what it has); an adapter may hold one for a type hint or
an `isinstance` check. hermes-core's gateway is `hermes gateway run` (`hermes_core.gateway.Gateway`):
this `GatewayRunner` has the attributes of Hermes' runner that plugins read (`config`, `adapters`,
`session_store`, the running-turn maps), empty, and its entry points (`start`, `stop`,
`_handle_message`) say in one line that hermes-core's own gateway runs the platforms. Patching its
methods changes nothing in hermes-core's gateway.
"""

from __future__ import annotations

from typing import Any

from hermes_core import HermesError

from .config import GatewayConfig

__all__ = ["GatewayRunner", "start_gateway"]

_RUN = ("hermes-core runs the messaging gateway itself: enable the platform in config.yaml "
        "(platforms.<name>.enabled: true) and run `hermes gateway run`")


class GatewayRunner:
    """Hermes' multi-platform gateway runner, as far as a plugin reads it (see the module)."""

    def __init__(self, config: Any = None) -> None:
        self.config = config if config is not None else GatewayConfig()
        self.adapters: dict[Any, Any] = {}
        self.session_store: Any = None
        self.delivery_router: Any = None
        self.hooks: Any = None
        self._running = False
        self._draining = False
        self._running_agents: dict[str, Any] = {}
        self._running_agents_ts: dict[str, float] = {}
        self._pending_messages: dict[str, Any] = {}
        self._pending_approvals: dict[str, Any] = {}
        self._busy_ack_ts: dict[str, float] = {}

    async def start(self) -> bool:
        raise HermesError(f"gateway.run.GatewayRunner.start(): {_RUN}")

    async def stop(self) -> None:
        self._running = False

    async def _handle_message(self, event: Any) -> str | None:
        raise HermesError(f"gateway.run.GatewayRunner._handle_message(): {_RUN}")

    def _is_user_authorized(self, source: Any) -> bool:
        return False


async def start_gateway(config: Any = None, replace: bool = False, **kwargs: Any) -> bool:
    """Hermes' gateway entry point: here one line saying how hermes-core runs it."""
    raise HermesError(f"gateway.run.start_gateway(): {_RUN}")
