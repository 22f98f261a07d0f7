"""Built-in plugin `skills`: Hermes' `skills_list` and `skill_view` (toolset `skills`).

The agent sees the home's skills as an index in its system prompt (name and description by
category) and loads a skill's body, or one of its files, with `skill_view` when a task needs it;
`skills_list` also names the plugins' skills (`<plugin>:<name>`, category `plugin`), which the
index leaves out. Both answer with Hermes' result shapes, from `ctx.skill_library()`: the skills
offered on the current turn's platform (`skills.disabled`, `skills.platform_disabled.<platform>`).
"""

from __future__ import annotations

import json
from typing import Any

SKILLS_LIST_SCHEMA = {
    "name": "skills_list",
    "description": "List available skills (name + description). Use skill_view(name) to load full content.",
    "parameters": {"type": "object", "properties": {
        "category": {"type": "string", "description": "Optional category filter to narrow results"}},
        "required": []},
}

SKILL_VIEW_SCHEMA = {
    "name": "skill_view",
    "description": "Skills allow for loading information about specific tasks and workflows, as well as scripts and "
                   "templates. Load a skill's full content or access its linked files (references, templates, "
                   "scripts). First call returns SKILL.md content plus a 'linked_files' dict showing available "
                   "references/templates/scripts. To access those, call again with file_path parameter.",
    "parameters": {"type": "object", "properties": {
        "name": {"type": "string", "description": "The skill name (use skills_list to see available skills). For "
                                                  "plugin-provided skills, use the qualified form 'plugin:skill' "
                                                  "(e.g. 'superpowers:writing-plans')."},
        "file_path": {"type": "string", "description": "OPTIONAL: Path to a linked file within the skill (e.g., "
                                                       "'references/api.md', 'templates/config.yaml', "
                                                       "'scripts/validate.py'). Omit to get the main SKILL.md "
                                                       "content."}},
        "required": ["name"]},
}


def _json(payload: dict[str, Any]) -> str:
    return json.dumps(payload, ensure_ascii=False)


def register(ctx: Any) -> None:
    def skills_list(args: dict[str, Any], **_: Any) -> str:
        category = args.get("category")
        return _json(ctx.skill_library().skills_list(category=str(category) if category else None))

    def skill_view(args: dict[str, Any], **_: Any) -> str:
        file_path = args.get("file_path")
        return _json(ctx.skill_library().skill_view(args.get("name"), str(file_path) if file_path else None))

    ctx.register_tool("skills_list", "skills", SKILLS_LIST_SCHEMA, skills_list, emoji="📚")
    ctx.register_tool("skill_view", "skills", SKILL_VIEW_SCHEMA, skill_view, emoji="📚")
