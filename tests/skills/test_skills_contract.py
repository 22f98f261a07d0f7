"""The test kit's check of a plugin's skills (`hermes_core.testing.check_plugin_skills`)."""

from __future__ import annotations

import os
import types
from pathlib import Path

import pytest

from hermes_core.testing import check_plugin_skills, plugin_skill_problems
from tests.helpers.skills import make_skill


def plugin_with(*skills: tuple[str, Path, str]) -> types.SimpleNamespace:
    def register(ctx) -> None:
        for name, path, description in skills:
            ctx.register_skill(name, path, description)

    return types.SimpleNamespace(register=register)


def test_valid_skills_pass(tmp_path: Path) -> None:
    folder = make_skill(tmp_path, "deploy-app", description="Deploy the app", files={"references/a.md": "a"})
    check_plugin_skills(plugin_with(("deploy-app", folder / "SKILL.md", "Deploy the app")))


def test_each_problem_is_named_with_its_skill(tmp_path: Path) -> None:
    wrong_name = make_skill(tmp_path, "deploy", name="Deploy_App")
    no_description = make_skill(tmp_path, "notes", head="---\nname: notes\n---\n")
    no_head = make_skill(tmp_path, "bare", head="")
    leaky = make_skill(tmp_path, "leaky")
    (tmp_path / "secret.txt").write_text("x")
    os.symlink(tmp_path / "secret.txt", leaky / "secret-link")
    problems = plugin_skill_problems(plugin_with(("deploy", wrong_name / "SKILL.md", "Deploys"),
                                                 ("notes", no_description / "SKILL.md", "Notes"),
                                                 ("bare", no_head / "SKILL.md", "Bare"),
                                                 ("leaky", leaky / "SKILL.md", "")), "kit")
    assert problems == [
        f"skill kit:bare ({no_head / 'SKILL.md'}): no YAML frontmatter (the file must start with a '---' line)",
        f"skill kit:deploy ({wrong_name / 'SKILL.md'}): name must match the directory and satisfy Agent Skills "
        "constraints",
        f"skill kit:leaky ({leaky / 'SKILL.md'}): registered without a description (skills_list shows the "
        "registered one)",
        f"skill kit:leaky ({leaky / 'SKILL.md'}): secret-link leads out of the skill's folder "
        f"(to {(tmp_path / 'secret.txt').resolve()})",
        f"skill kit:notes ({no_description / 'SKILL.md'}): description must be a non-empty string of at most "
        "1024 characters",
    ]
    with pytest.raises(AssertionError, match="the plugin's skills break the contract"):
        check_plugin_skills(plugin_with(("bare", no_head / "SKILL.md", "Bare")))
