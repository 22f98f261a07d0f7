"""Hermes' skill tools over real skill folders: `skills_list` and `skill_view` (through `hermes tools
call`, a subprocess), from the home's tree and from plugins, with Hermes' result shapes; a skill's
files read only from inside its folder; disabled skills; malformed SKILL.md files."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from hermes_core import PluginManager
from tests.helpers import hermes, make_folder_plugin, write_config
from tests.helpers.skills import make_skill


def call(tool: str, **args: object) -> dict:
    return json.loads(hermes("tools", "call", tool, json.dumps(args)).stdout)


@pytest.fixture
def skills(home: Path) -> Path:
    root = home / "skills"
    make_skill(root, "devops/triage", description="Triage failing builds by cause", body="# Triage\nGroup failures.",
               files={"references/api.md": "the API", "scripts/run.sh": "echo hi", "notes/extra.md": "more"})
    make_skill(root, "writing", description="Write plainly")
    return root


def test_skills_list_names_each_skill_with_its_category_as_hermes_does(skills: Path) -> None:
    listed = call("skills_list")
    assert listed == {"success": True, "count": 2, "categories": ["devops"],
                      "hint": "Use skill_view(name) to see full content, tags, and linked files",
                      "skills": [{"name": "writing", "description": "Write plainly", "category": None},
                                 {"name": "triage", "description": "Triage failing builds by cause",
                                  "category": "devops"}]}
    assert call("skills_list", category="devops")["skills"] == [listed["skills"][1]]


def test_an_empty_home_lists_no_skills(home: Path) -> None:
    assert call("skills_list") == {"success": True, "skills": [], "categories": [],
                                   "message": "No skills found in skills/ directory."}


def test_skill_view_loads_the_body_and_names_the_linked_files(skills: Path) -> None:
    shown = call("skill_view", name="triage")
    assert shown["success"] is True and shown["name"] == "triage" and "Group failures." in shown["content"]
    assert shown["path"] == "devops/triage/SKILL.md" and shown["skill_dir"] == str(skills / "devops" / "triage")
    assert shown["linked_files"] == {"references": ["references/api.md"], "scripts": ["scripts/run.sh"]}
    assert call("skill_view", name="devops/triage")["name"] == call("skill_view", name="devops:triage")["name"]
    file = call("skill_view", name="triage", file_path="references/api.md")
    assert file == {"success": True, "name": "triage", "file": "references/api.md", "content": "the API",
                    "file_type": ".md", "_source_path": str(skills / "devops" / "triage" / "references" / "api.md")}


def test_an_unknown_skill_or_file_says_what_there_is(skills: Path) -> None:
    missing = call("skill_view", name="nope")
    assert missing["success"] is False and missing["error"] == "Skill 'nope' not found."
    assert missing["available_skills"] == ["triage", "writing"]
    no_file = call("skill_view", name="triage", file_path="references/other.md")
    assert no_file["error"] == "File 'references/other.md' not found in skill 'triage'."
    assert no_file["available_files"] == {"references": ["references/api.md"], "scripts": ["scripts/run.sh"],
                                          "other": ["notes/extra.md"]}


@pytest.mark.parametrize("file_path", ["../../writing/SKILL.md", "references/../../../config.yaml", "/etc/passwd",
                                       "link-out/secret.txt", "secret-link"])
def test_a_file_outside_the_skills_folder_is_refused(skills: Path, tmp_path: Path, file_path: str) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("SECRET", encoding="utf-8")
    folder = skills / "devops" / "triage"
    os.symlink(outside, folder / "link-out")
    os.symlink(outside / "secret.txt", folder / "secret-link")
    refused = call("skill_view", name="triage", file_path=file_path)
    assert refused["success"] is False and "SECRET" not in json.dumps(refused)
    assert refused["error"].startswith(("Path traversal ('..') is not allowed.", "Path escapes allowed directory"))


@pytest.mark.parametrize("name, error", [
    ("../devops/triage", "Skill name cannot contain '..' path traversal components."),
    ("/etc/passwd", "Skill name must be a relative path within the skills directory."),
])
def test_a_skill_name_that_is_a_path_out_is_refused(skills: Path, name: str, error: str) -> None:
    assert call("skill_view", name=name) == {"success": False, "error": error,
                                             "hint": "Use a skill name or relative path within the skills directory."}


def test_disabled_skills_are_not_offered_globally_or_on_their_platform(home: Path, skills: Path) -> None:
    write_config(home, "skills:\n  disabled: [writing]\n  platform_disabled:\n    telegram: [triage]\n")
    assert [s["name"] for s in call("skills_list")["skills"]] == ["triage"]
    assert call("skill_view", name="writing")["error"].startswith("Skill 'writing' is disabled.")
    manager = PluginManager().load()
    assert [s["name"] for s in manager.skill_library("telegram").skills_list()["skills"]] == []
    assert manager.skill_library("telegram").skill_view("triage")["error"].startswith("Skill 'triage' is disabled")
    assert [s["name"] for s in manager.skill_library("cli").skills_list()["skills"]] == ["triage"]


def test_a_malformed_skill_md_is_one_warning_naming_it_and_the_others_load(home: Path, skills: Path) -> None:
    bad = {"no-head": "just text, no frontmatter\n", "open-head": "---\nname: open-head\n",
           "bad-yaml": "---\nname: [bad\n---\n", "no-description": "---\nname: no-description\n---\n",
           "list-head": "---\n- a\n- b\n---\n", "bad-name": "---\nname: a b/c\ndescription: x\n---\n"}
    for name, head in bad.items():
        make_skill(skills, f"broken/{name}", head=head, body="")
    result = hermes("tools", "call", "skills_list", "{}")
    assert [s["name"] for s in json.loads(result.stdout)["skills"]] == ["writing", "triage"]
    warnings = [line for line in result.stderr.splitlines() if "SKILL.md" in line]
    assert len(warnings) == len(bad)
    for name in bad:
        (line,) = [w for w in warnings if f"/broken/{name}/SKILL.md" in w]
        assert line.startswith("hermes: warning: skill ") and "skipped: " in line
    assert any("line 3" in w and "bad-yaml" in w for w in warnings)  # where the YAML is wrong


def test_excluded_and_hidden_folders_and_a_skills_own_files_hold_no_skills(home: Path, skills: Path) -> None:
    make_skill(skills, "node_modules/pkg/inner", description="not a skill")
    make_skill(skills, ".hub/cached", description="not a skill")
    make_skill(skills, "devops/triage/templates/nested", description="inside a skill")
    assert [s["name"] for s in call("skills_list")["skills"]] == ["writing", "triage"]


PLUGIN = """
from pathlib import Path

def register(ctx):
    here = Path(__file__).parent / "skills"
    ctx.register_skill("deploy", here / "deploy" / "SKILL.md", "Deploy the app")
    ctx.register_skill("rollback", here / "rollback" / "SKILL.md", "Roll back")
"""


def test_plugin_skills_are_listed_and_viewed_by_their_qualified_name(home: Path, skills: Path) -> None:
    folder = make_folder_plugin(home / "plugins", "shipit", PLUGIN, "name: shipit\n")
    make_skill(folder / "skills", "deploy", description="Deploy the app", body="Run deploy.",
               files={"references/env.md": "envs"})
    make_skill(folder / "skills", "rollback", description="Roll back")
    write_config(home, "plugins:\n  enabled: [shipit]\nskills:\n  disabled: ['shipit:rollback']\n")
    listed = call("skills_list")
    assert {"name": "shipit:deploy", "description": "Deploy the app", "category": "plugin"} in listed["skills"]
    assert "shipit:rollback" not in json.dumps(listed) and listed["categories"] == ["devops", "plugin"]
    shown = call("skill_view", name="shipit:deploy")
    assert shown["success"] is True and "Run deploy." in shown["content"]
    assert shown["content"].startswith("[Bundle context: This skill is part of the 'shipit' plugin.")
    assert shown["linked_files"] == {"references": ["references/env.md"]}
    assert call("skill_view", name="shipit:deploy", file_path="references/env.md")["content"] == "envs"
    assert call("skill_view", name="shipit:deploy", file_path="../rollback/SKILL.md")["success"] is False
    assert call("skill_view", name="shipit:rollback")["error"] == "Skill 'shipit:rollback' is disabled."
    assert call("skill_view", name="shipit:other")["available_skills"] == ["shipit:deploy", "shipit:rollback"]


def test_external_dirs_add_skills_after_the_homes_own(home: Path, skills: Path, tmp_path: Path) -> None:
    team = tmp_path / "team-skills"
    make_skill(team, "ops/pager", description="Answer the pager")
    make_skill(team, "ops/triage", description="The team's triage, shadowed by the home's")
    write_config(home, f"skills:\n  external_dirs: ['{team}', missing-folder]\n")
    listed = {s["name"]: s for s in call("skills_list")["skills"]}
    assert listed["pager"] == {"name": "pager", "description": "Answer the pager", "category": "ops"}
    assert listed["triage"]["description"] == "Triage failing builds by cause"
    assert call("skill_view", name="pager")["skill_dir"] == str(team / "ops" / "pager")


def test_a_folder_name_two_skills_share_is_ambiguous_and_their_paths_are_not(home: Path, skills: Path) -> None:
    make_skill(skills, "writing-team/triage", name="team-triage", description="Another triage")
    ambiguous = call("skill_view", name="triage")
    assert ambiguous["success"] is False and ambiguous["error"].startswith("Ambiguous skill name 'triage': 2 skills")
    assert sorted(ambiguous["matches"]) == [str(skills / "devops/triage/SKILL.md"),
                                            str(skills / "writing-team/triage/SKILL.md")]
    assert call("skill_view", name="writing-team/triage")["name"] == "team-triage"
    assert call("skill_view", name="team-triage")["name"] == "team-triage"


def test_a_skill_for_another_operating_system_is_not_offered(home: Path, skills: Path) -> None:
    other = "windows" if sys.platform != "win32" else "linux"
    make_skill(skills, "other-os", head=f"---\nname: other-os\ndescription: Elsewhere\nplatforms: [{other}]\n---\n")
    assert "other-os" not in [s["name"] for s in call("skills_list")["skills"]]
    refused = call("skill_view", name="other-os")
    assert refused == {"success": False, "error": "Skill 'other-os' is not supported on this platform.",
                       "readiness_status": "unsupported"}
