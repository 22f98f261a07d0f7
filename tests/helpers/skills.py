"""Skill folders for the tests: `SKILL.md` with a frontmatter and a body, and files beside it."""

from __future__ import annotations

from pathlib import Path


def make_skill(root: Path, where: str, name: str | None = None, description: str = "Does a thing",
               body: str = "Follow the steps.", *, head: str | None = None,
               files: dict[str, str] | None = None) -> Path:
    """`root/where/SKILL.md` (`where`: `category/skill` or `skill`), its frontmatter `head` (default:
    name and description), and `files` (relative path -> text) in the skill's folder."""
    folder = root / where
    folder.mkdir(parents=True, exist_ok=True)
    if head is None:
        head = f"---\nname: {name or Path(where).name}\ndescription: {description}\n---\n"
    (folder / "SKILL.md").write_text(head + body + "\n", encoding="utf-8")
    for relative, text in (files or {}).items():
        (folder / relative).parent.mkdir(parents=True, exist_ok=True)
        (folder / relative).write_text(text, encoding="utf-8")
    return folder
