"""`hermes skills list|show|enable|disable` as a subprocess, over real skill folders and a real
config.yaml (edits keep the operator's comments)."""

from __future__ import annotations

import json
import resource
import subprocess
from pathlib import Path

import pytest

from tests.helpers import HERMES, hermes, hermes_json, make_folder_plugin, write_config
from tests.helpers.skills import make_skill


def test_a_home_without_skills_lists_none_honestly(home: Path) -> None:
    result = hermes("skills", "list")
    assert result.stdout.startswith("no skills") and result.stderr == ""
    assert hermes_json("skills", "list") == []
    assert not (home / "skills").exists()


def test_list_shows_every_skill_with_its_source_and_status(home: Path) -> None:
    make_skill(home / "skills", "devops/triage", description="Triage builds")
    make_skill(home / "skills", "writing", description="Write plainly")
    folder = make_folder_plugin(home / "plugins", "shipit", "from pathlib import Path\n\ndef register(ctx):\n"
                                "    ctx.register_skill('deploy', Path(__file__).parent / 'SKILL.md', 'Deploy it')\n",
                                "name: shipit\n")
    (folder / "SKILL.md").write_text("---\nname: deploy\ndescription: Deploy it\n---\nDeploy.\n")
    write_config(home, "plugins:\n  enabled: [shipit]\nskills:\n  disabled: [writing]\n")
    rows = {row["name"]: row for row in hermes_json("skills", "list")}
    assert set(rows) == {"triage", "writing", "shipit:deploy"}
    assert rows["triage"] == {"name": "triage", "category": "devops", "source": "local", "plugin": None,
                              "enabled": True, "description": "Triage builds",
                              "path": str(home / "skills" / "devops" / "triage" / "SKILL.md")}
    assert rows["writing"]["enabled"] is False
    assert rows["shipit:deploy"]["source"] == "plugin" and rows["shipit:deploy"]["plugin"] == "shipit"
    text = hermes("skills", "list").stdout
    assert "3 skills: 2 enabled, 1 disabled" in text and "shipit:deploy" in text


def test_disable_and_enable_edit_config_yaml_keeping_comments(home: Path) -> None:
    make_skill(home / "skills", "devops/triage", description="Triage builds")
    write_config(home, "# my settings\nskills:\n  disabled: []  # none yet\n")
    assert hermes("skills", "disable", "triage").stdout.strip() == "disabled triage"
    assert hermes("skills", "disable", "triage", "--platform", "telegram").stdout.strip() == \
        "disabled triage on telegram"
    text = (home / "config.yaml").read_text()
    assert text.startswith("# my settings") and "# none yet" in text
    assert hermes_json("skills", "list")[0]["enabled"] is False
    assert hermes("skills", "enable", "triage", "--platform", "telegram").stdout.strip() == "enabled triage on telegram"
    assert hermes_json("skills", "list", "--platform", "telegram")[0]["enabled"] is False  # still off everywhere
    hermes("skills", "disable", "triage", "--platform", "telegram")
    assert hermes("skills", "enable", "triage").stdout.strip() == "enabled triage"  # everywhere
    assert hermes_json("skills", "list", "--platform", "telegram")[0]["enabled"] is True
    assert hermes("skills", "enable", "triage").stdout.strip() == "triage was already enabled"


def test_hermes_string_forms_of_the_disabled_list_are_read_and_edited(home: Path) -> None:
    make_skill(home / "skills", "one", description="One")
    make_skill(home / "skills", "two", description="Two")
    write_config(home, "skills:\n  disabled: '[\"one\"]'\n")
    assert [row["enabled"] for row in hermes_json("skills", "list")] == [False, True]
    hermes("skills", "disable", "two")
    assert [row["enabled"] for row in hermes_json("skills", "list")] == [False, False]


def test_show_prints_the_skill_and_an_unknown_name_is_one_line(home: Path) -> None:
    make_skill(home / "skills", "devops/triage", description="Triage builds", body="# Triage\nGroup failures.",
               files={"references/api.md": "api"})
    shown = hermes("skills", "show", "triage").stdout
    assert "description:  Triage builds" in shown and "references:   references/api.md" in shown
    assert shown.rstrip().endswith("Group failures.")
    data = hermes_json("skills", "show", "triage")
    assert data["linked_files"] == {"references": ["references/api.md"]} and "Group failures." in data["content"]
    missing = hermes("skills", "show", "nope", check=1)
    assert missing.stderr.strip().splitlines() == ["hermes: error: no skill 'nope'; known: triage"]
    assert hermes("skills", "disable", "nope", check=1).stderr.count("\n") == 1


def test_a_malformed_skill_is_one_warning_and_the_listing_goes_on(home: Path) -> None:
    make_skill(home / "skills", "good", description="Good")
    make_skill(home / "skills", "bad", head="---\nname: bad\n---\n", body="")
    result = hermes("skills", "list", "--json")
    assert result.stderr.strip().splitlines() == [
        f"hermes: warning: skill {home / 'skills' / 'bad' / 'SKILL.md'} skipped: the frontmatter has no description"]
    assert "good" in result.stdout


def test_a_skill_nested_past_the_parser_is_one_warning_too(home: Path) -> None:
    make_skill(home / "skills", "good", description="Good")
    make_skill(home / "skills", "deep", head="---\nname: deep\ndescription: " + "[" * 20_000 + "\n---\n", body="")
    result = hermes("skills", "list", "--json")
    assert result.stderr.strip().splitlines() == [
        f"hermes: warning: skill {home / 'skills' / 'deep' / 'SKILL.md'} skipped: invalid YAML frontmatter: "
        "nested too deeply"]
    assert [row["name"] for row in json.loads(result.stdout)] == ["good"]


LAUGHS = "".join(f"{b}: &{b} [{', '.join([f'*{a}'] * 9)}]\n" for a, b in zip("abcdefgh", "bcdefghi"))
BOMB = f"---\nname: bomb\ndescription: laughs\na: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n{LAUGHS}" \
       "platforms: *i\nmetadata: {hermes: {tags: *i}}\n---\n"


def limited(*args: str) -> subprocess.CompletedProcess[str]:
    """`hermes *args` with at most 1 GiB of address space (a skill that takes more fails at once, not in a minute)."""
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (2**30, 2**30))

    return subprocess.run([str(HERMES), *args], capture_output=True, text=True, timeout=120, preexec_fn=limit)


@pytest.mark.parametrize("head", [BOMB, "---\nname: deep\ndescription: x\ntags: " + "[" * 40 + "]" * 40 + "\n---\n",
                                  "---\nname: self\ndescription: x\ntags: &t [a, *t]\n---\n"],
                         ids=["alias-bomb", "deep", "recursive"])
def test_a_frontmatter_past_its_bounds_is_one_warning_and_costs_nothing(home: Path, head: str) -> None:
    make_skill(home / "skills", "good", description="Good")
    make_skill(home / "skills", "bad", head=head, body="")
    result = limited("skills", "list", "--json")
    assert result.returncode == 0, result.stderr
    (warning,) = result.stderr.strip().splitlines()
    assert warning.startswith(f"hermes: warning: skill {home / 'skills' / 'bad' / 'SKILL.md'} skipped: the YAML "
                              "frontmatter ")
    assert [row["name"] for row in json.loads(result.stdout)] == ["good"]
    viewed = limited("tools", "call", "skill_view", json.dumps({"name": "good"}))
    assert viewed.returncode == 0 and json.loads(viewed.stdout)["success"] is True


def test_a_changed_skill_md_is_read_again_and_a_remembered_problem_still_warns(home: Path) -> None:
    folder = make_skill(home / "skills", "good", description="First words")
    make_skill(home / "skills", "bad", head="---\nname: bad\n---\n", body="")
    assert hermes_json("skills", "list")[0]["description"] == "First words"
    assert (home / ".cache" / "skills.json").is_file()
    (folder / "SKILL.md").write_text("---\nname: good\ndescription: Second words, longer\n---\nbody\n")
    again = hermes("skills", "list", "--json")
    assert json.loads(again.stdout)[0]["description"] == "Second words, longer"
    assert "bad/SKILL.md skipped: the frontmatter has no description" in again.stderr
