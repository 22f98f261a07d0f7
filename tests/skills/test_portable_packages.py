"""Reading a Portable Agent Plugins v1 package (`plugin.json`, `skills/`) with the format's safety
rules: fatal manifest problems refuse the package, a bad skill is a diagnostic and is skipped,
paths stay inside the package. (Discovery of packages as plugins is not wired in yet.)"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from hermes_core._skills.portable import SCHEMA, AgentPluginError, load_agent_plugin, skill_namespace
from tests.helpers.skills import make_skill


def package(root: Path, manifest: object = None, **fields: object) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    data = manifest if manifest is not None else {"$schema": SCHEMA, "name": "acme.tools", **fields}
    (root / "plugin.json").write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return root


def test_a_package_with_skills_is_read_and_bad_skills_are_skipped_with_a_line_each(tmp_path: Path) -> None:
    root = package(tmp_path / "acme", version="1.0.0", author={"name": "Acme"}, color="blue")
    make_skill(root / "skills", "deploy", description="Deploy the app", files={"references/a.md": "a"})
    make_skill(root / "skills", "Bad_Name", name="Bad_Name")
    make_skill(root / "skills", "nested-meta", head="---\nname: nested-meta\ndescription: x\nmetadata:\n"
                                                    "  hermes: {tags: [a]}\n---\n")
    make_skill(root / "skills", "no-head", head="")
    (tmp_path / "outside.md").write_text("---\nname: linked\ndescription: out\n---\n")
    (root / "skills" / "linked").mkdir()
    os.symlink(tmp_path / "outside.md", root / "skills" / "linked" / "SKILL.md")
    plugin = load_agent_plugin(root)
    assert plugin.name == "acme.tools" and "color" not in plugin.manifest
    assert [skill.name for skill in plugin.skills] == ["deploy"]
    assert plugin.skills[0].skill_md == (root / "skills" / "deploy" / "SKILL.md").resolve()
    assert plugin.diagnostics == (
        "[manifest] ignored unknown top-level field: color",
        "[skill:Bad_Name] name must match the directory and satisfy Agent Skills constraints",
        "[skill:linked] SKILL.md must be a regular in-root file",
        "[skill:nested-meta] metadata must map string keys to string values",
        "[skill:no-head] invalid SKILL.md: missing YAML frontmatter",
    )


@pytest.mark.parametrize("manifest, error", [
    ("not json", "plugin.json is not valid readable JSON"),
    ([1, 2], "plugin.json must contain a JSON object"),
    ({"name": "acme"}, "plugin.json declares an unsupported or missing Agent Plugins schema"),
    ({"$schema": SCHEMA, "name": "Acme--Tools"}, "plugin.json name does not satisfy v1 constraints"),
    ({"$schema": SCHEMA, "name": "acme", "version": 1}, "plugin.json version must be a string"),
    ({"$schema": SCHEMA, "name": "acme", "author": {"name": "A", "phone": "1"}},
     "plugin.json author may contain only string name, email, and url fields"),
    ({"$schema": SCHEMA, "name": "acme", "extensions": {"com.example": 3}},
     "plugin.json extension namespace values must be objects"),
])
def test_a_manifest_that_breaks_the_format_refuses_the_package(tmp_path: Path, manifest: object, error: str) -> None:
    with pytest.raises(AgentPluginError, match=error.replace(".", r"\.")):
        load_agent_plugin(package(tmp_path / "p", manifest))


def test_a_manifest_linked_from_outside_and_skills_out_of_the_root_are_refused(tmp_path: Path) -> None:
    elsewhere = package(tmp_path / "elsewhere")
    root = tmp_path / "p"
    root.mkdir()
    os.symlink(elsewhere / "plugin.json", root / "plugin.json")
    with pytest.raises(AgentPluginError, match="plugin.json must be a regular file within the plugin root"):
        load_agent_plugin(root)
    inside = package(tmp_path / "q")
    make_skill(tmp_path / "shared-skills", "deploy", description="Deploy")
    os.symlink(tmp_path / "shared-skills", inside / "skills")
    assert load_agent_plugin(inside).diagnostics == ("[skills] skills must be an in-root directory",)


def test_the_skill_namespace_is_hermes_slug_and_hash() -> None:
    assert skill_namespace("acme.tools") == f"agent-plugin-acme-tools-{hashlib.sha256(b'acme.tools').hexdigest()[:8]}"
    assert skill_namespace("__").startswith("agent-plugin-plugin-")
