"""`ctx.register_skill`: read-only skill documents plugins ship, named `<plugin>:<name>`."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, NamedTuple

from .._errors import RegistrationError
from .._undo import Undo, put

__all__ = ["Skill", "Skills"]


_SKILL_NAME = re.compile(r"[A-Za-z0-9_\-]+")


class Skill(NamedTuple):
    name: str  # "<plugin>:<name>" (a portable package's: "agent-plugin-<slug>-<hash>:<name>")
    path: Path
    description: str
    plugin_id: str

    def read(self) -> str:
        return self.path.read_text(encoding="utf-8")


class Skills:
    """Read-only skill documents plugins ship, named `<plugin>:<name>`."""

    def __init__(self) -> None:
        self._skills: dict[str, Skill] = {}

    def add(self, plugin_id: str, name: str, path: Any, description: str, *, namespace: str = "") -> Undo:
        where = f"ctx.register_skill({name!r})"
        if not isinstance(name, str) or not _SKILL_NAME.fullmatch(name):
            raise RegistrationError(f"{where}: a skill name is letters, digits, '_' or '-' (no ':')",
                                    plugin_id=plugin_id)
        if isinstance(path, str) and path.strip():
            path = Path(path).expanduser()  # Hermes takes a `str` path as well as a `Path`
        if not isinstance(path, Path):
            raise RegistrationError(f"{where}: path must be a pathlib.Path or a str, not {type(path).__name__}",
                                    plugin_id=plugin_id)
        if not path.is_file():
            raise RegistrationError(f"{where}: {path} is not a file", plugin_id=plugin_id)
        skill = Skill(f"{namespace or plugin_id}:{name}", path, description, plugin_id)
        return put(self._skills, skill.name, skill)

    def get(self, name: str) -> Skill | None:
        return self._skills.get(name)

    def all(self) -> list[Skill]:
        return sorted(self._skills.values())
