"""The home's skill tree (`$HERMES_HOME/skills/`, then `skills.external_dirs`), found as Hermes finds it.

A folder holding a `SKILL.md` is a skill; a folder without one is a category, searched further
(`<category>/<skill>/SKILL.md`, `<a>/<b>/<skill>/SKILL.md`). Hidden folders and Hermes' excluded
ones (`node_modules`, `.venv`, ...) are not searched, nor is anything inside a skill. A skill's
index entry comes from its frontmatter alone, remembered in `$HERMES_HOME/.cache/skills.json` by
the file's modification time and size, so a start with 200 unchanged skills reads no SKILL.md.
A malformed SKILL.md is left out with a problem naming the file; the first skill of a name wins.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import attrs

from .._files import read_json, write_atomic
from . import frontmatter

__all__ = ["LocalSkill", "Tree", "scan", "EXCLUDED", "CACHE_NAME"]

EXCLUDED = frozenset({".git", ".github", ".hub", ".archive", ".venv", "venv", "node_modules", "site-packages",
                      "__pycache__", ".tox", ".nox", ".pytest_cache", ".mypy_cache", ".ruff_cache"})
CACHE_NAME = "skills.json"
_VERSION = 1
_DEPTH = 8


@attrs.frozen
class LocalSkill:
    """A skill of the home's tree: its frontmatter's name and description, where its SKILL.md is,
    its category as the index groups it (`index_category`) and as `skills_list` names it (`category`)."""

    name: str
    description: str
    path: Path  # the SKILL.md
    root: Path  # the skills folder it was found in
    index_category: str
    category: str | None
    platforms: tuple[str, ...] = ()

    @property
    def folder(self) -> Path:
        return self.path.parent

    @property
    def relative(self) -> str:
        return self.path.relative_to(self.root).as_posix()


@attrs.frozen
class Tree:
    """What a scan found: the skills (first of each name), category descriptions, problems (one line each)."""

    skills: tuple[LocalSkill, ...]
    category_descriptions: dict[str, str]
    problems: tuple[str, ...]
    roots: tuple[Path, ...]


def _skill_files(root: Path) -> Iterator[tuple[str, tuple[str, ...]]]:
    """Every SKILL.md under `root` with its path's parts below `root`, in name order, not searching
    inside a skill or an excluded folder; a linked folder is followed once (and no deeper than 8)."""
    followed: set[str] = set()

    def walk(folder: str, parts: tuple[str, ...]) -> Iterator[tuple[str, tuple[str, ...]]]:
        try:
            with os.scandir(folder) as entries:
                children = list(entries)
        except OSError:
            return
        if any(entry.name == "SKILL.md" and entry.is_file() for entry in children):
            yield os.path.join(folder, "SKILL.md"), (*parts, "SKILL.md")
            return
        for entry in sorted(children, key=lambda entry: entry.name):
            if entry.name.startswith(".") or entry.name in EXCLUDED or len(parts) >= _DEPTH:
                continue
            try:
                if not entry.is_dir():
                    continue
                if entry.is_symlink():
                    real = os.path.realpath(entry.path)
                    if real in followed:
                        continue
                    followed.add(real)
            except OSError:
                continue
            yield from walk(entry.path, (*parts, entry.name))

    yield from walk(str(root), ())


def categories(parts: tuple[str, ...]) -> tuple[str, str | None]:
    """Hermes' two categories of a SKILL.md at `relative` to its root: the index's (`general` for one
    at the root, the folder's own name for `<skill>/SKILL.md`, else every folder above the skill's)
    and `skills_list`'s (the first folder, for `<category>/<skill>/SKILL.md` and deeper; else None)."""
    index = "general" if len(parts) < 2 else parts[0] if len(parts) == 2 else "/".join(parts[:-2])
    return index, parts[0] if len(parts) >= 3 else None


class _Cache:
    """Frontmatter already read, by file: `[mtime_ns, size, entry or {"error": line}]`."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.old: dict[str, Any] = {}
        self.new: dict[str, Any] = {}
        if path is not None:
            try:
                data = read_json(path)
                if isinstance(data, dict) and data.get("version") == _VERSION and isinstance(data.get("files"), dict):
                    self.old = data["files"]
            except (OSError, ValueError):
                pass

    def entry(self, key: str, read: Callable[[Path], dict[str, Any]]) -> dict[str, Any]:
        try:
            stat = os.stat(key)
        except OSError as exc:
            return {"error": f"cannot be read: {exc.strerror or exc}"}
        signature = [stat.st_mtime_ns, stat.st_size]
        cached = self.old.get(key)
        if isinstance(cached, list) and len(cached) == 3 and cached[:2] == signature and isinstance(cached[2], dict):
            entry: dict[str, Any] = cached[2]
        else:
            entry = read(Path(key))
        self.new[key] = [*signature, entry]
        return entry

    def save(self) -> None:
        if self.path is None or self.new == self.old:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(self.path, json.dumps({"version": _VERSION, "files": self.new}), durable=False)
        except OSError:
            pass  # a cache that cannot be written is read again next time


def _read_skill(path: Path) -> dict[str, Any]:
    try:
        data = frontmatter.parse(frontmatter.read_head(path))
        name, description = frontmatter.fields(data)
    except frontmatter.SkillFileError as exc:
        return {"error": str(exc)}
    except OSError as exc:
        return {"error": f"cannot be read: {exc.strerror or exc}"}
    return {"name": name, "description": description, "platforms": frontmatter.platforms(data)}


def _read_description(path: Path) -> dict[str, Any]:
    try:
        data = frontmatter.parse(frontmatter.read_head(path))
    except (frontmatter.SkillFileError, OSError):
        return {"description": ""}
    description = data.get("description")
    return {"description": description.strip() if isinstance(description, str) else ""}


def scan(roots: Iterable[Path], cache: Path | None) -> Tree:
    """The skills of `roots` (earlier roots win a name), their frontmatter remembered in `cache`."""
    existing = tuple(root for root in roots if root.is_dir())
    if not existing:  # no skills folder: no file to read, nothing to remember
        return Tree((), {}, (), existing)
    memo = _Cache(cache)
    skills: list[LocalSkill] = []
    names: set[str] = set()
    problems: list[str] = []
    descriptions: dict[str, str] = {}
    for root in existing:
        for path, parts in _skill_files(root):
            entry = memo.entry(path, _read_skill)
            if "error" in entry:
                problems.append(f"skill {path} skipped: {entry['error']}")
                continue
            index_category, category = categories(parts)
            if entry["name"] in names:
                continue
            names.add(entry["name"])
            skills.append(LocalSkill(entry["name"], entry["description"], Path(path), root, index_category, category,
                                     tuple(entry.get("platforms") or ())))
            if index_category not in descriptions:
                described = os.path.join(root, *(() if index_category == "general" else (index_category,)),
                                         "DESCRIPTION.md")
                descriptions[index_category] = memo.entry(described, _read_description).get("description", "") \
                    if os.path.isfile(described) else ""
    memo.save()
    return Tree(tuple(skills), {k: v for k, v in descriptions.items() if v}, tuple(problems), existing)
