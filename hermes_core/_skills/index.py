"""The skills index of the system prompt, in Hermes' words and format (`build_skills_system_prompt`).

Skills grouped by category (sorted), each `    - <name>: <description>` with the description cut
to 60 characters; a category's `DESCRIPTION.md` gives its line. Plugin skills are not listed: the
model finds them with `skills_list`. Built from frontmatter only, so the text is the same for the
same skills, disabled names and tools: the agent builds it once per conversation.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable

from .tree import LocalSkill

__all__ = ["index_text", "short_description"]

INDEX_DESCRIPTION = 60


def short_description(description: str) -> str:
    """A description as the index shows it: stripped of whitespace and quotes, at most 60 characters."""
    text = description.strip().strip("'\"").strip()
    return text if len(text) <= INDEX_DESCRIPTION else text[:INDEX_DESCRIPTION - 3] + "..."


def index_text(skills: Iterable[LocalSkill], category_descriptions: dict[str, str],
               tools: Collection[str] | None = None) -> str:
    """The `## Skills` section listing `skills`; "" when there are none. `tools`: the names of the
    tools the model is offered (Hermes names `terminal` or `web_search or terminal` as the basic tools)."""
    by_category: dict[str, dict[str, str]] = {}
    for skill in skills:
        by_category.setdefault(skill.index_category, {}).setdefault(skill.name, short_description(skill.description))
    if not by_category:
        return ""
    lines = []
    for category in sorted(by_category):
        described = category_descriptions.get(category, "")
        lines.append(f"  {category}: {described}" if described else f"  {category}:")
        for name, description in sorted(by_category[category].items()):
            lines.append(f"    - {name}: {description}" if description else f"    - {name}")
    basic_tools = "terminal" if tools is not None and "web_search" not in tools else "web_search or terminal"
    return (
        "## Skills\n"
        "Before replying, scan the skills below. If a skill matches or is even partially relevant to your "
        "task, you MUST load it with skill_view(name) and follow its instructions. Err on the side of "
        "loading — it is always better to have context you don't need than to miss critical steps, pitfalls, "
        "or established workflows. Skills contain specialized knowledge — API endpoints, tool-specific "
        "commands, and proven workflows that outperform general-purpose approaches. Load the skill "
        f"even if you think you could handle the task with basic tools like {basic_tools}. "
        "Skills also encode the user's preferred approach, conventions, and quality standards for tasks like "
        "code review, planning, and testing — load them even for tasks you already know how to do, because "
        "the skill defines how it should be done here.\n"
        "If a skill has issues, fix it with skill_manage(action='patch').\n"
        "After difficult/iterative tasks, offer to save as a skill. If a skill you loaded was missing steps, "
        "had wrong commands, or needed pitfalls you discovered, update it before finishing.\n"
        "\n"
        "<available_skills>\n"
        + "\n".join(lines) + "\n"
        "</available_skills>\n\n"
        "Only proceed without loading a skill if genuinely none are relevant to the task."
    )
