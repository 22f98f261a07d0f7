"""The messaging gateway: platform-adapter plugins connect the agent to chat platforms.

`Gateway(manager).run()` is `hermes gateway run`. The modules beside it are Hermes' gateway
names as plugins import them (`gateway.config`, `gateway.platforms.base`, `gateway.session`,
`gateway.session_context`, `gateway.pairing`), served under those names where Hermes Agent is
not installed. Like `hermes_core.agent`, it is built on hermes-core's public names only.
"""

from .runner import GATEWAY_HOOKS, Gateway, read_status

__all__ = ["GATEWAY_HOOKS", "Gateway", "read_status"]
