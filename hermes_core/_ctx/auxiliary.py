"""`ctx.register_auxiliary_task`: a plugin's own `auxiliary.<key>` LLM task, which the operator configures."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, NamedTuple

from .._errors import RegistrationError
from .._undo import Undo, put

__all__ = ["AUXILIARY_DEFAULTS", "AuxiliaryTask", "AuxiliaryTasks", "BUILTIN_AUXILIARY"]


BUILTIN_AUXILIARY = frozenset({
    "vision", "compression", "web_extract", "approval", "mcp", "title_generation", "skills_hub", "curator",
    "session_search", "flush_memories",
})
AUXILIARY_DEFAULTS: Mapping[str, Any] = {"provider": "auto", "model": "", "base_url": "", "api_key": "",
                                         "timeout": 60, "extra_body": {}}
_AUX_KEY = re.compile(r"[A-Za-z0-9_]+")


class AuxiliaryTask(NamedTuple):
    key: str
    display_name: str
    description: str
    defaults: Mapping[str, Any]
    plugin_id: str


class AuxiliaryTasks:
    """Plugins' own `auxiliary.<key>` LLM tasks, declared so that the operator can see and
    configure each like a built-in one (`hermes plugins doctor` lists them); `defaults` are what the
    plugin suggests."""

    def __init__(self) -> None:
        self._tasks: dict[str, AuxiliaryTask] = {}

    def add(self, task: AuxiliaryTask) -> Undo:
        where = f"ctx.register_auxiliary_task({task.key!r})"
        if not isinstance(task.key, str) or not _AUX_KEY.fullmatch(task.key):
            raise RegistrationError(f"{where}: a task key is letters, digits and '_'", plugin_id=task.plugin_id)
        if task.key in BUILTIN_AUXILIARY:
            raise RegistrationError(f"{where}: {task.key!r} is a built-in auxiliary task; choose another key",
                                    plugin_id=task.plugin_id)
        owner = self._tasks.get(task.key)
        if owner is not None and owner.plugin_id != task.plugin_id:
            raise RegistrationError(f"{where}: plugin {owner.plugin_id!r} already owns auxiliary.{task.key}",
                                    plugin_id=task.plugin_id)
        return put(self._tasks, task.key, task._replace(defaults={**AUXILIARY_DEFAULTS, **dict(task.defaults or {})}))

    def get(self, key: str) -> AuxiliaryTask | None:
        return self._tasks.get(key)

    def all(self) -> list[AuxiliaryTask]:
        return sorted(self._tasks.values())
