"""`SkillLibrary`: the skills a host offers its agent, and Hermes' skill tools' answers over them.

The home's tree (`$HERMES_HOME/skills/`, then `skills.external_dirs`) and the plugins' skills
(`<plugin>:<name>`), less those `skills.disabled` names and, for the platform the agent serves,
`skills.platform_disabled.<platform>`. `index_prompt` is the system prompt's index (the home's
skills only, as Hermes keeps plugin skills out of it); `skills_list` and `skill_view` answer `skills_list` and
`skill_view` with Hermes' result shapes; `entries` is every skill with whether it is enabled.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Collection, Iterable
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any, Protocol

from .. import config_keys as keys
from .._config.config import Config
from . import frontmatter
from .files import linked_files, serve_file
from .index import index_text
from .tree import CACHE_NAME, LocalSkill, Tree, scan

__all__ = ["SkillLibrary", "PluginSkill", "disabled_names"]

log = logging.getLogger("hermes.skills")
_warned: set[str] = set()
_warned_lock = threading.Lock()

NAME_HINT = "Use a skill name or relative path within the skills directory."
FILE_HINT = "Use a relative path within the skill directory"
USAGE_HINT = ("To view linked files, call skill_view(name, file_path) where file_path is e.g. 'references/api.md' "
              "or 'assets/config.yaml'")


class PluginSkill(Protocol):
    """A skill a plugin registered (`ctx.register_skill`): `Skill` of `hermes_core`."""

    @property
    def name(self) -> str: ...  # "<plugin>:<name>"

    @property
    def path(self) -> Path: ...  # its SKILL.md

    @property
    def description(self) -> str: ...

    @property
    def plugin_id(self) -> str: ...


def disabled_names(config: Config, platform: str = "") -> frozenset[str]:
    """`skills.disabled`, with `skills.platform_disabled.<platform>` for `platform` (else
    `$HERMES_PLATFORM`, else `$HERMES_SESSION_PLATFORM`) added, as Hermes unions them."""
    names: list[str] = config.read(keys.SKILLS_DISABLED)
    platform = platform or os.environ.get("HERMES_PLATFORM", "") or os.environ.get("HERMES_SESSION_PLATFORM", "")
    if platform:
        on_platform: list[str] = config.read(keys.SKILLS_PLATFORM_DISABLED_ON, platform)
        names += on_platform
    return frozenset(name for name in names if name)


def external_dirs(config: Config, home: Path) -> list[Path]:
    """`skills.external_dirs`: `~` and `${VAR}` expanded, relative to `$HERMES_HOME`; only those that exist."""
    found: list[Path] = []
    configured = config.read(keys.SKILLS_EXTERNAL_DIRS)
    if not configured:  # most homes: no folder to resolve (a turn builds its skills index each time)
        return found
    local = (home / "skills").resolve()
    for raw in configured:
        path = Path(os.path.expandvars(os.path.expanduser(raw)))
        path = (path if path.is_absolute() else home / path).resolve()
        if path.is_dir() and path != local and path not in found:
            found.append(path)
    return found


def _warn_once(line: str) -> None:
    with _warned_lock:
        if line in _warned:
            return
        _warned.add(line)
    log.warning("%s", line)


def _fail(error: str, **extra: Any) -> dict[str, Any]:
    return {"success": False, "error": error, **extra}


def _listed(value: Any) -> list[str]:
    """Hermes' `tags` / `related_skills`: a list, `"[a, b]"` or `"a, b"`."""
    if isinstance(value, list):
        return [str(item).strip() for item in value if str(item).strip()]
    if isinstance(value, str):
        return [part.strip().strip("'\"") for part in value.strip().strip("[]").split(",") if part.strip()]
    return []


def _hermes_field(data: dict[str, Any], key: str) -> list[str]:
    metadata = data.get("metadata")
    hermes = metadata.get("hermes") if isinstance(metadata, dict) else None
    if isinstance(hermes, dict) and key in hermes:
        return _listed(hermes[key])
    return _listed(data.get(key))


class SkillLibrary:
    """The skills offered on one platform (`cli`, `telegram`, `cron`, ...; "" for none in particular)."""

    def __init__(self, home: Path, config: Config, plugin_skills: Iterable[PluginSkill] = (), *,
                 platform: str = "") -> None:
        self.home = home
        self.platform = platform
        self.disabled = disabled_names(config, platform)
        self.roots = (home / "skills", *external_dirs(config, home))
        self._plugin_skills = {skill.name: skill for skill in plugin_skills}
        self._tree: Tree | None = None

    def __repr__(self) -> str:
        return f"<SkillLibrary home={str(self.home)!r} platform={self.platform!r}>"

    @property
    def tree(self) -> Tree:
        """The home's skills, scanned on first use (frontmatter only, remembered across runs); each
        malformed SKILL.md is one warning naming it (once per process)."""
        if self._tree is None:
            self._tree = scan(self.roots, self.home / ".cache" / CACHE_NAME)
            for problem in self._tree.problems:
                _warn_once(problem)
        return self._tree

    @property
    def problems(self) -> tuple[str, ...]:
        """One line per SKILL.md left out (malformed, unreadable)."""
        return self.tree.problems

    def is_disabled(self, name: str, folder: str = "") -> bool:
        return name in self.disabled or bool(folder) and folder in self.disabled

    def _offered(self, skill: LocalSkill) -> bool:
        return not self.is_disabled(skill.name, skill.folder.name) and frontmatter.matches_platform(
            list(skill.platforms))

    def local(self) -> list[LocalSkill]:
        """The home's skills offered here: enabled, and for this operating system."""
        return [skill for skill in self.tree.skills if self._offered(skill)]

    def plugin_skills(self) -> list[PluginSkill]:
        """The plugins' skills offered here (enabled), by name."""
        return [self._plugin_skills[name] for name in sorted(self._plugin_skills) if name not in self.disabled]

    def index_prompt(self, tools: Collection[str] | None = None) -> str:
        """The system prompt's skills index ("" when no skill is offered); `tools`: the offered tools' names."""
        return index_text(self.local(), self.tree.category_descriptions, tools)

    # -- skills_list -----------------------------------------------------------------------

    def skills_list(self, category: str | None = None) -> dict[str, Any]:
        """Hermes' `skills_list` result: name, description and category of each offered skill."""
        skills: list[dict[str, Any]] = [{"name": s.name, "description": s.description, "category": s.category}
                                        for s in self.local()]
        skills += [{"name": s.name, "description": str(s.description), "category": "plugin"}
                   for s in self.plugin_skills()]
        if not skills:
            return {"success": True, "skills": [], "categories": [], "message": "No skills found in skills/ directory."}
        skills.sort(key=lambda s: (s["category"] or "", s["name"]))
        categories = sorted({s["category"] for s in skills if s["category"]})
        if category:
            skills = [s for s in skills if s["category"] == category]
        return {"success": True, "skills": skills, "categories": categories, "count": len(skills),
                "hint": "Use skill_view(name) to see full content, tags, and linked files"}

    # -- skill_view ------------------------------------------------------------------------

    def skill_view(self, name: Any, file_path: str | None = None) -> dict[str, Any]:
        """Hermes' `skill_view` result: the skill's SKILL.md, or one of its files (`file_path`)."""
        if not isinstance(name, str) or not name.strip():
            return _fail("Skill name must be a string.", hint=NAME_HINT)
        name = name.strip()
        if PurePosixPath(name).is_absolute() or PureWindowsPath(name).is_absolute() or PureWindowsPath(name).drive:
            return _fail("Skill name must be a relative path within the skills directory.", hint=NAME_HINT)
        if ".." in PurePosixPath(name).parts or ".." in PureWindowsPath(name).parts:
            return _fail("Skill name cannot contain '..' path traversal components.", hint=NAME_HINT)
        if ":" in name:
            namespace, _, bare = name.partition(":")
            if any(known.startswith(namespace + ":") for known in self._plugin_skills):
                return self._view_plugin(name, namespace, bare, file_path)
            name = f"{namespace}/{bare}"  # a categorised local skill named `category:skill`
        return self._view_local(name, file_path)

    def _find_local(self, name: str) -> list[LocalSkill]:
        found: dict[Path, LocalSkill] = {}
        for skill in self.tree.skills:
            folder = skill.folder.relative_to(skill.root).as_posix()
            if name in (skill.name, skill.folder.name, folder):
                found.setdefault(skill.folder.resolve(), skill)
        return list(found.values())

    def _view_local(self, name: str, file_path: str | None) -> dict[str, Any]:
        if not any(root.is_dir() for root in self.roots):
            return _fail("Skills directory does not exist yet. It will be created on first install.")
        matches = self._find_local(name)
        if len(matches) > 1:
            return _fail(f"Ambiguous skill name '{name}': {len(matches)} skills match across your local skills dir "
                         "and external_dirs. Refusing to guess — load one explicitly by its categorized path.",
                         matches=[str(skill.path) for skill in matches],
                         hint="Pass the full relative path instead of the bare name (e.g., 'category/skill-name'), "
                              "or rename one of the colliding skills so each name is unique.")
        if not matches:
            available = sorted(skill.name for skill in self.local())[:20]
            return _fail(f"Skill '{name}' not found.", available_skills=available,
                         hint="Use skills_list to see all available skills")
        skill = matches[0]
        if not frontmatter.matches_platform(list(skill.platforms)):
            return _fail(f"Skill '{name}' is not supported on this platform.", readiness_status="unsupported")
        if self.is_disabled(skill.name, skill.folder.name):
            return _fail(f"Skill '{skill.name}' is disabled. Enable it with `hermes skills` or inspect the files "
                         "directly on disk.")
        if file_path:
            return serve_file(skill.folder, file_path, name, hint=FILE_HINT)
        try:
            text = skill.path.read_text(encoding="utf-8-sig", errors="replace")
            data, _ = frontmatter.split(text)
        except (OSError, frontmatter.SkillFileError) as exc:
            return _fail(f"Failed to read skill '{name}': {exc}")
        linked = linked_files(skill.folder)
        result: dict[str, Any] = {
            "success": True, "name": skill.name, "description": skill.description,
            "tags": _hermes_field(data, "tags"), "related_skills": _hermes_field(data, "related_skills"),
            "content": text, "path": skill.relative, "skill_dir": str(skill.folder),
            "linked_files": linked or None, "usage_hint": USAGE_HINT if linked else None,
            "readiness_status": "available", "_source_path": str(skill.path),
        }
        if "compatibility" in data:
            result["compatibility"] = data["compatibility"]
        if isinstance(data.get("metadata"), dict):
            result["metadata"] = data["metadata"]
        return result

    def _view_plugin(self, name: str, namespace: str, bare: str, file_path: str | None) -> dict[str, Any]:
        skill = self._plugin_skills.get(name)
        if skill is None:
            siblings = sorted(known for known in self._plugin_skills if known.startswith(namespace + ":"))
            return _fail(f"Skill '{bare}' not found in plugin '{namespace}'.", available_skills=siblings,
                         hint=f"The '{namespace}' plugin provides {len(siblings)} skill(s).")
        path = Path(skill.path)
        if not path.is_file():
            return _fail(f"Skill '{name}' file no longer exists at {path}.")
        if name in self.disabled:
            return _fail(f"Skill '{name}' is disabled.")
        try:
            text = path.read_text(encoding="utf-8-sig", errors="replace")
            data, _ = frontmatter.split(text)
        except (OSError, frontmatter.SkillFileError) as exc:
            return _fail(f"Failed to read skill '{name}': {exc}")
        if not frontmatter.matches_platform(frontmatter.platforms(data)):
            return _fail(f"Skill '{name}' is not supported on this platform.", readiness_status="unsupported")
        if file_path:
            return serve_file(path.parent, file_path, name, listing=False)
        siblings = sorted(known.partition(":")[2] for known in self._plugin_skills
                          if known.startswith(namespace + ":") and known != name)
        banner = f"[Bundle context: This skill is part of the '{namespace}' plugin."
        if siblings:
            banner += (f"\nSibling skills: {', '.join(siblings)}.\nUse qualified form to invoke siblings "
                       f"(e.g. {namespace}:{siblings[0]}).")
        description = data.get("description") if isinstance(data.get("description"), str) else skill.description
        return {"success": True, "name": name, "content": banner + "]\n\n" + text,
                "description": str(description)[:frontmatter.MAX_DESCRIPTION], "linked_files": linked_files(path.parent)
                or None, "readiness_status": "available", "skill_dir": str(path.parent), "_source_path": str(path)}

    # -- for hosts and the CLI ---------------------------------------------------------------

    def entries(self) -> list[dict[str, Any]]:
        """Every skill found, enabled or not: name, category, source (`local`, `plugin`), plugin,
        enabled, description, path."""
        rows = [{"name": s.name, "category": s.category, "source": "local", "plugin": None,
                 "enabled": self._offered(s), "description": s.description, "path": str(s.path)}
                for s in self.tree.skills]
        rows += [{"name": s.name, "category": "plugin", "source": "plugin", "plugin": s.plugin_id,
                  "enabled": s.name not in self.disabled, "description": str(s.description), "path": str(s.path)}
                 for s in sorted(self._plugin_skills.values(), key=lambda s: s.name)]
        return rows

    def content(self, name: str) -> str | None:
        """The SKILL.md of the offered skill `name` (a plugin's `<plugin>:<name>` too), or None."""
        found = self.skill_view(name)
        return str(found["content"]) if found.get("success") else None

    def invoke(self, names: Iterable[str], instruction: str = "") -> str:
        """A user message invoking the skills `names` as Hermes does (each loaded in full, the ones not
        offered named first), with `instruction` after them; `instruction` alone when `names` is empty."""
        parts, missing = [], []
        for name in names:
            text = self.content(name)
            if text is None:
                missing.append(name)
                continue
            parts.append(f'[IMPORTANT: The user has invoked the "{name}" skill, indicating they want you to follow '
                         f"its instructions. The full skill content is loaded below.]\n\n{text.strip()}")
        if missing:
            parts.insert(0, "[IMPORTANT: The following skill(s) were listed for this job but could not be found "
                            f"and were skipped: {', '.join(missing)}]")
        instruction = instruction.strip()
        if instruction:
            parts.append("The user has provided the following instruction alongside the skill invocation: "
                         + instruction if parts else instruction)
        return "\n\n".join(parts)
