"""Portable Agent Plugins v1 (agent-plugins.org, spec 1.0.0): a package's `plugin.json` and its
`skills/`, read with the format's safety rules as Hermes reads them (`plugin_runtime/portable.py`).

Discovery reads only `plugin.json` (`read_manifest`); loading reads the skills (`load_agent_plugin`)
and registers each as `agent-plugin-<slug>-<hash>:<skill>`, no Python imported. A fatal problem
of `plugin.json` is an `AgentPluginError` (the package is refused); anything else is a diagnostic
line (`[scope] message`) and the rest of the package stands: an unknown top-level field is dropped,
a skill that breaks a rule is skipped. Every path is resolved and must stay inside the package.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Any

import attrs

from .._files import MAX_SMALL_JSON, read_json
from . import frontmatter

__all__ = ["AgentPluginError", "PortableSkill", "AgentPlugin", "read_manifest", "load_agent_plugin",
           "skill_namespace", "slug", "within_root", "SCHEMA"]

SCHEMA = "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json"
FIELDS = ("$schema", "name", "version", "description", "author", "homepage", "repository", "license", "keywords",
          "extensions")
NAME = re.compile(r"(?!.*(?:--|\.\.))[a-z0-9](?:[a-z0-9.-]*[a-z0-9])?")
STRINGS = ("version", "description", "homepage", "repository", "license")


class AgentPluginError(ValueError):
    """A package that cannot be loaded at all: what is wrong with its `plugin.json` or its root."""


@attrs.frozen
class PortableSkill:
    """A valid skill of a package: `skills/<name>/SKILL.md`, resolved inside the package."""

    name: str
    description: str
    root: Path
    skill_md: Path
    frontmatter: dict[str, Any]


@attrs.frozen
class AgentPlugin:
    """A package read: its root, its manifest (known fields only), its valid skills, the diagnostics."""

    root: Path
    manifest: dict[str, Any]
    skills: tuple[PortableSkill, ...]
    diagnostics: tuple[str, ...]

    @property
    def name(self) -> str:
        return str(self.manifest["name"])


def slug(key: str) -> str:
    """Hermes' `_portable_slug`: lower case, anything but ASCII letters, digits, `_` and `-` as `-`."""
    text = re.sub(r"[^a-z0-9_-]", "-", key.lower()).strip("-_")
    return text or "plugin"


def skill_namespace(key: str) -> str:
    """The namespace of a package's skills: `agent-plugin-<slug>-<first 8 hex of sha256(key)>`."""
    return f"agent-plugin-{slug(key)}-{hashlib.sha256(key.encode()).hexdigest()[:8]}"


def within_root(root: Path, path: Path) -> bool:
    try:
        path.resolve().relative_to(root)
    except (ValueError, OSError):
        return False
    return True


def _manifest(root: Path, notes: list[str]) -> dict[str, Any]:
    path = root / "plugin.json"
    if not path.is_file() or not within_root(root, path):
        raise AgentPluginError("plugin.json must be a regular file within the plugin root")
    try:
        data = read_json(path, MAX_SMALL_JSON)  # a BOM read past; too large, not UTF-8 or JSON, too deep: ValueError
    except (OSError, ValueError) as exc:
        raise AgentPluginError(f"plugin.json is not valid readable JSON: {exc}") from None
    if not isinstance(data, dict):
        raise AgentPluginError("plugin.json must contain a JSON object")
    for field in [key for key in data if key not in FIELDS]:
        notes.append(f"[manifest] ignored unknown top-level field: {field}")
        del data[field]
    if data.get("$schema") != SCHEMA:
        raise AgentPluginError("plugin.json declares an unsupported or missing Agent Plugins schema")
    name = data.get("name")
    if not isinstance(name, str) or not 0 < len(name) <= 64 or not NAME.fullmatch(name):
        raise AgentPluginError("plugin.json name does not satisfy v1 constraints")
    for field in STRINGS:
        if field in data and not isinstance(data[field], str):
            raise AgentPluginError(f"plugin.json {field} must be a string")
    keywords = data.get("keywords")
    if "keywords" in data and not (isinstance(keywords, list) and all(isinstance(k, str) for k in keywords)):
        raise AgentPluginError("plugin.json keywords must be an array of strings")
    author = data.get("author")
    if "author" in data:
        if not isinstance(author, dict):
            raise AgentPluginError("plugin.json author must be an object")
        if any(key not in ("name", "email", "url") or not isinstance(value, str) for key, value in author.items()):
            raise AgentPluginError("plugin.json author may contain only string name, email, and url fields")
    extensions = data.get("extensions")
    if "extensions" in data:
        if not isinstance(extensions, dict):
            notes.append("[manifest] ignored non-object extensions field")
            del data["extensions"]
        elif any(not isinstance(value, dict) for value in extensions.values()):
            raise AgentPluginError("plugin.json extension namespace values must be objects")
    return data


def _skills(root: Path, notes: list[str]) -> list[PortableSkill]:
    folder = root / "skills"
    if not folder.exists() and not folder.is_symlink():
        return []
    if not folder.is_dir() or not within_root(root, folder):
        notes.append("[skills] skills must be an in-root directory")
        return []
    try:
        children = sorted(folder.iterdir(), key=lambda child: child.name)
    except OSError as exc:
        notes.append(f"[skills] cannot list skills: {exc}")
        return []
    found = []
    for child in children:
        skill_md = child / "SKILL.md"
        if not child.is_dir() or not (skill_md.exists() or skill_md.is_symlink()):
            continue
        scope = f"[skill:{child.name}]"
        if not skill_md.is_file() or not within_root(root, skill_md):
            notes.append(f"{scope} SKILL.md must be a regular in-root file")
            continue
        try:
            data, _ = frontmatter.split(skill_md.read_text(encoding="utf-8-sig"))
        except (OSError, UnicodeDecodeError, frontmatter.SkillFileError) as exc:
            notes.append(f"{scope} invalid SKILL.md: {exc}")
            continue
        if not data:
            notes.append(f"{scope} invalid SKILL.md: missing YAML frontmatter")
            continue
        problems = frontmatter.agent_skills_problems(data, child.name)
        if problems:
            notes.extend(f"{scope} {problem}" for problem in problems)
            continue
        found.append(PortableSkill(child.name, str(data["description"]), child.resolve(), skill_md.resolve(), data))
    return found


def _root(root: Path) -> Path:
    try:
        resolved = Path(root).resolve(strict=True)
    except OSError:
        raise AgentPluginError("plugin root must be a directory") from None
    if not resolved.is_dir():
        raise AgentPluginError("plugin root must be a directory")
    return resolved


def read_manifest(root: Path) -> tuple[dict[str, Any], tuple[str, ...]]:
    """The package's checked `plugin.json` and its diagnostics; `AgentPluginError` when it is refused."""
    notes: list[str] = []
    return _manifest(_root(root), notes), tuple(notes)


def load_agent_plugin(root: Path) -> AgentPlugin:
    """The package at `root`: its manifest and valid skills; `AgentPluginError` when it is refused."""
    resolved = _root(root)
    notes: list[str] = []
    manifest = _manifest(resolved, notes)
    skills = _skills(resolved, notes)
    return AgentPlugin(resolved, manifest, tuple(skills), tuple(notes))
