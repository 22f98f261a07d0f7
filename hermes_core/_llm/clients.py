"""The host's LLM side, made on first use: the `LlmHost` behind every plugin's `ctx.llm`, and the
host's own clients, `AuxiliaryLlm` (side tasks) and `AgentLlm` (the agent loop's requests)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .._config.config import Config
    from .._hooks.calls import LifecycleHooks
    from .auxiliary import AgentLlm, AuxiliaryLlm
    from .host import LlmHost

__all__ = ["HostClients"]


class HostClients:
    """The LLM clients of one host. `config` is the host's fixed config (None: config.yaml under
    `home`, read afresh on each call, so an edit applies to the next call); `hooks` are the
    lifecycle hooks the side tasks fire (`pre_auxiliary_call`, ...)."""

    __slots__ = ("_home", "_config", "_hooks", "_host", "_lock")

    def __init__(self, home: Path, config: Config | None, hooks: Callable[[], LifecycleHooks]) -> None:
        self._home, self._config, self._hooks = home, config, hooks
        self._host: LlmHost | None = None
        self._lock = threading.Lock()

    def host(self) -> LlmHost:
        """The host side of every plugin's `ctx.llm` (the openai SDK is imported on its first call)."""
        with self._lock:
            if self._host is None:
                from .._config.file import ConfigWatcher
                from .gate import attach_hooks
                from .host import LlmHost

                fixed = self._config
                read = (lambda: fixed) if fixed is not None else ConfigWatcher(self._home).current
                self._host = LlmHost(self._home, read)
                attach_hooks(self._host, self._hooks())
            return self._host

    def auxiliary(self, task: str) -> AuxiliaryLlm:
        """The client for the side task `task` (`auxiliary.<task>` in config, else the main model)."""
        from .auxiliary import AuxiliaryLlm

        return AuxiliaryLlm(self.host(), task, self._hooks())

    def agent(self) -> AgentLlm:
        """The client for the agent loop's own requests (main model, fallback, tools; the request hooks)."""
        from .auxiliary import AgentLlm

        return AgentLlm(self.host(), self._hooks())
