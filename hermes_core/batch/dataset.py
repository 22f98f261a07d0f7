"""A batch's dataset: JSONL, one object per line with a `prompt` and optional `id`, `system`,
`max_turns`, `model`, `skills` (names of skills loaded into the item's prompt, as a cron job's are) and
`prompt_files` (false: no SOUL.md, project context or memory file in its system prompt). A line
that is not such an object is reported with its number and skipped."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import attrs

from hermes_core.hosting import BadLine, json_lines

__all__ = ["Item", "read_dataset"]


@attrs.frozen
class Item:
    """One task of a batch: its id (given, else `sha256:` and the start of its line's hash), the line it
    came from, and what the agent runs."""

    id: str
    line: int
    prompt: str
    system: str | None = None
    max_turns: int | None = None
    model: str | None = None
    skills: tuple[str, ...] = ()
    prompt_files: bool = True


def _item(number: int, line: bytes, data: Any) -> Item | str:
    """The item of one line, or what is wrong with it."""
    if not isinstance(data, dict):
        return f"line {number}: a JSON object is expected, not {type(data).__name__}; skipped"
    prompt = data.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        return f"line {number}: no prompt (a non-empty string under \"prompt\"); skipped"
    given = data.get("id")
    if given is not None and not isinstance(given, (str, int)) or isinstance(given, bool):
        return f"line {number}: id must be a string or a number; skipped"
    item_id = str(given) if given is not None else "sha256:" + hashlib.sha256(line).hexdigest()[:16]
    for key, kind in (("system", str), ("model", str)):
        if data.get(key) is not None and not isinstance(data[key], kind):
            return f"line {number}: {key} must be a string; skipped"
    turns = data.get("max_turns")
    if turns is not None and (not isinstance(turns, int) or isinstance(turns, bool) or turns < 1):
        return f"line {number}: max_turns must be a whole number, 1 or more; skipped"
    skills = data.get("skills")
    if skills is not None and (not isinstance(skills, list) or not all(isinstance(s, str) and s for s in skills)):
        return f"line {number}: skills must be a list of skill names; skipped"
    files = data.get("prompt_files", True)
    if not isinstance(files, bool):
        return f"line {number}: prompt_files must be true or false; skipped"
    return Item(item_id, number, prompt, data.get("system"), turns, data.get("model"), tuple(skills or ()), files)


def read_dataset(path: Path) -> tuple[list[Item], list[str]]:
    """The items of the JSONL file at `path`, and one line per line skipped (blank lines are not)."""
    items: list[Item] = []
    problems: list[str] = []
    seen: dict[str, int] = {}
    for number, value, line in json_lines(path):
        found = f"line {number}: {value.why}; skipped" if isinstance(value, BadLine) else _item(number, line, value)
        if isinstance(found, str):
            problems.append(found)
        elif found.id in seen:
            problems.append(f"line {number}: id {found.id!r} is line {seen[found.id]}'s too; skipped")
        else:
            seen[found.id] = number
            items.append(found)
    return items, problems
