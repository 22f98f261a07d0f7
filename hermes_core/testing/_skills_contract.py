"""The contract check of a plugin's skills (`ctx.register_skill`): each SKILL.md has valid Agent
Skills frontmatter (a lower-case `name` equal to its folder's, a `description` of 1 to 1,024
characters, the optional fields' types), and every file of the skill's folder stays inside it (no
link out). Run it in a plugin's own test suite:

    from hermes_core.testing import check_plugin_skills
    import my_plugin

    def test_my_skills_are_valid():
        check_plugin_skills(my_plugin)          # AssertionError listing every problem
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

__all__ = ["plugin_skill_problems", "check_plugin_skills"]


def _folder_problems(label: str, folder: Path) -> list[str]:
    root = folder.resolve()
    problems = []
    for path in sorted(folder.rglob("*")):
        try:
            if not path.resolve().is_relative_to(root):
                problems.append(f"{label}: {path.relative_to(folder).as_posix()} leads out of the skill's folder "
                                f"(to {path.resolve()})")
        except OSError as exc:
            problems.append(f"{label}: {path} cannot be resolved: {exc.strerror or exc}")
    return problems


def _skill_problems(name: str, path: Path, description: str) -> list[str]:
    from .._skills import frontmatter

    label = f"skill {name} ({path})"
    try:
        data, _ = frontmatter.split(path.read_text(encoding="utf-8-sig"))
    except (OSError, UnicodeDecodeError, frontmatter.SkillFileError) as exc:
        return [f"{label}: {exc}"]
    if not data:
        return [f"{label}: no YAML frontmatter (the file must start with a '---' line)"]
    problems = [f"{label}: {problem}" for problem in frontmatter.agent_skills_problems(data, path.parent.name)]
    if not str(description).strip():
        problems.append(f"{label}: registered without a description (skills_list shows the registered one)")
    return problems + _folder_problems(label, path.parent)


def plugin_skill_problems(plugin: Any, plugin_id: str = "plugin") -> list[str]:
    """Load `plugin` (a module, a namespace or a `register(ctx)`) as `plugin_id` into a fresh manager
    with an empty home and return one line per problem of the skills it registers ([]: none)."""
    from .._manager import PluginManager

    with tempfile.TemporaryDirectory(prefix="hermes-skills-contract-") as home:
        manager = PluginManager(home=Path(home), discover_plugins=False).load()
        try:
            record = manager.add_plugin(plugin, plugin_id)
            if record.failure is not None:
                return [f"plugin {plugin_id} failed to load: {record.failure.message}"]
            return [problem for skill in manager.skills.all() if skill.plugin_id == plugin_id
                    for problem in _skill_problems(skill.name, Path(skill.path), skill.description)]
        finally:
            manager.close()


def check_plugin_skills(plugin: Any, plugin_id: str = "plugin") -> None:
    """`plugin_skill_problems`, as an `AssertionError` listing them all when there is any."""
    problems = plugin_skill_problems(plugin, plugin_id)
    if problems:
        raise AssertionError("the plugin's skills break the contract:\n" + "\n".join(f"- {p}" for p in problems))
