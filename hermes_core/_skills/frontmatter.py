"""A SKILL.md's frontmatter: read without the body, parsed with ruamel's safe loader, checked.

The index needs only the frontmatter, so `read_head` stops at the closing `---` and never reads
the body. Hermes' rules for a skill in `$HERMES_HOME/skills/` are checked by `fields`: a `name`
(letters, digits, `.`, `_`, `-`, at most 64 characters) and a non-empty `description` of at most
1,024 characters; `agent_skills_problems` adds the Agent Skills standard's stricter rules (the
name lower-case and equal to its folder's, the optional fields' types), which the contract kit
holds a plugin's skills to.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["SkillFileError", "read_head", "parse", "split", "fields", "agent_skills_problems", "matches_platform",
           "MAX_NAME", "MAX_DESCRIPTION"]

MAX_NAME, MAX_DESCRIPTION, MAX_COMPATIBILITY = 64, 1024, 500
MAX_HEAD = 64 * 1024  # a frontmatter longer than this is not closed
MAX_DEPTH, MAX_VALUES = 32, 10_000  # nesting, and values with aliases spelt out (see `_bounded`)
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")  # Hermes' skill names (skill_manage's, in any case)
AGENT_SKILLS_NAME = re.compile(r"(?!.*--)[a-z0-9]+(?:-[a-z0-9]+)*")
_FENCE = re.compile(r"---[ \t]*\r?\n?")
_PLATFORMS = {"macos": "darwin", "linux": "linux", "windows": "win32"}


class SkillFileError(ValueError):
    """What is wrong with a SKILL.md, in a few words (the caller names the file)."""


def _is_fence(line: str) -> bool:
    return _FENCE.fullmatch(line) is not None


def read_head(path: Path) -> str:
    """The YAML between the opening and the closing `---` of `path`; the body is not read."""
    with open(path, encoding="utf-8-sig", errors="replace", newline="") as file:
        first = file.readline(MAX_HEAD)
        if not _is_fence(first):
            raise SkillFileError("no YAML frontmatter (the file must start with a '---' line)")
        lines: list[str] = []
        size = 0
        for line in file:
            if _is_fence(line):
                return "".join(lines)
            lines.append(line)
            size += len(line)
            if size > MAX_HEAD:
                break
    raise SkillFileError("the YAML frontmatter is not closed by a '---' line")


def parse(text: str) -> dict[str, Any]:
    """The frontmatter `text` as plain data (a mapping); `SkillFileError` saying where it is wrong."""
    from ruamel.yaml import YAML
    from ruamel.yaml.error import MarkedYAMLError, YAMLError

    if len(text) > MAX_HEAD:
        raise SkillFileError(f"the YAML frontmatter is longer than {MAX_HEAD // 1024} KB")
    try:
        data = YAML(typ="safe", pure=True).load(text)
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f" at line {mark.line + 2}, column {mark.column + 1}" if mark is not None else ""
        raise SkillFileError(f"invalid YAML frontmatter{where}: {exc.problem or exc.context or 'invalid YAML'}") \
            from None
    except YAMLError as exc:
        raise SkillFileError(f"invalid YAML frontmatter: {exc}") from None
    except RecursionError:
        raise SkillFileError("invalid YAML frontmatter: nested too deeply") from None
    if not isinstance(data, dict):
        raise SkillFileError("the YAML frontmatter is not a mapping of fields")
    _bounded(data)
    return {str(key): value for key, value in data.items()}


def _bounded(data: Any) -> None:
    """`SkillFileError` when `data` nests deeper than `MAX_DEPTH` or, with its aliases spelt out, holds
    more than `MAX_VALUES` values: an alias bomb ("billion laughs") is a few lines that expand to
    billions of values for whoever walks them (listing the tags, the JSON of `skill_view`)."""
    sizes: dict[int, int] = {}  # an alias is the same object: each is counted once, then by its size

    def size(value: Any, depth: int) -> int:
        if not isinstance(value, (dict, list)):
            return 1
        if depth > MAX_DEPTH:
            raise SkillFileError(f"the YAML frontmatter nests deeper than {MAX_DEPTH} levels")
        known = sizes.get(id(value))
        if known is not None:
            if known < 0:
                raise SkillFileError("the YAML frontmatter holds an alias inside the value it names")
            return known
        sizes[id(value)] = -1
        items = [*value.keys(), *value.values()] if isinstance(value, dict) else value
        total = 1
        for item in items:
            total += size(item, depth + 1)
            if total > MAX_VALUES:
                raise SkillFileError(f"the YAML frontmatter holds more than {MAX_VALUES} values with its aliases "
                                     "spelt out (an alias bomb?)")
        sizes[id(value)] = total
        return total

    size(data, 0)


def split(text: str) -> tuple[dict[str, Any], str]:
    """A whole SKILL.md's frontmatter (parsed; `{}` when it has none) and its body."""
    text = text.removeprefix("\ufeff")
    lines = text.splitlines(keepends=True)
    if not lines or not _is_fence(lines[0]):
        return {}, text
    for index, line in enumerate(lines[1:], start=1):
        if _is_fence(line):
            return parse("".join(lines[1:index])), "".join(lines[index + 1:])
    raise SkillFileError("the YAML frontmatter is not closed by a '---' line")


def fields(data: Mapping[str, Any]) -> tuple[str, str]:
    """The skill's `name` and `description`, checked; `SkillFileError` naming the field that is wrong."""
    name, description = data.get("name"), data.get("description")
    if name is None or (isinstance(name, str) and not name.strip()):
        raise SkillFileError("the frontmatter has no name")
    if not isinstance(name, str) or len(name) > MAX_NAME or not NAME.fullmatch(name):
        raise SkillFileError(f"name {str(name)[:80]!r} is not a skill name (letters, digits, '.', '_' or '-', "
                             f"at most {MAX_NAME} characters)")
    if description is None or (isinstance(description, str) and not description.strip()):
        raise SkillFileError("the frontmatter has no description")
    if not isinstance(description, str):
        raise SkillFileError(f"description is a {type(description).__name__}, not a string")
    if len(description) > MAX_DESCRIPTION:
        raise SkillFileError(f"description is {len(description)} characters, over {MAX_DESCRIPTION}")
    return name, description.strip()


def agent_skills_problems(data: Mapping[str, Any], folder: str) -> list[str]:
    """What keeps the frontmatter `data` of the skill in folder `folder` from the Agent Skills standard
    (agentskills.io/specification), in the words of Hermes' portable-package check."""
    problems = []
    name, description = data.get("name"), data.get("description")
    if not (isinstance(name, str) and name == folder and 0 < len(name) <= MAX_NAME
            and AGENT_SKILLS_NAME.fullmatch(name)):
        problems.append("name must match the directory and satisfy Agent Skills constraints")
    if not (isinstance(description, str) and 0 < len(description) <= MAX_DESCRIPTION and description.strip()):
        problems.append(f"description must be a non-empty string of at most {MAX_DESCRIPTION} characters")
    if "license" in data and not isinstance(data["license"], str):
        problems.append("license must be a string")
    compatibility = data.get("compatibility")
    if "compatibility" in data and not (isinstance(compatibility, str)
                                        and 0 < len(compatibility) <= MAX_COMPATIBILITY):
        problems.append(f"compatibility must be a string of 1 to {MAX_COMPATIBILITY} characters")
    metadata = data.get("metadata")
    if "metadata" in data and not (isinstance(metadata, dict)
                                   and all(isinstance(k, str) and isinstance(v, str) for k, v in metadata.items())):
        problems.append("metadata must map string keys to string values")
    if "allowed-tools" in data and not isinstance(data["allowed-tools"], str):
        problems.append("allowed-tools must be a string")
    return problems


def platforms(data: Mapping[str, Any]) -> list[str]:
    """The operating systems the skill is for (`platforms:`, a string or a list; empty: any)."""
    value = data.get("platforms")
    items = [value] if isinstance(value, str) else value if isinstance(value, list) else []
    return [str(item).strip().lower() for item in items if str(item).strip()]


def matches_platform(wanted: list[str]) -> bool:
    """Whether this machine is one of `wanted` (`macos`, `linux`, `windows` or a `sys.platform` prefix)."""
    return not wanted or any(sys.platform.startswith(_PLATFORMS.get(name, name)) for name in wanted)
