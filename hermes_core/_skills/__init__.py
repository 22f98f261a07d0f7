"""Skills the Hermes way: `SKILL.md` folders offered to the agent as an index plus two tools.

- `frontmatter`: a SKILL.md's frontmatter read without its body, parsed (ruamel's safe loader), checked;
- `tree`: the home's skill tree (`$HERMES_HOME/skills/`, `skills.external_dirs`) with Hermes' category
  rules and excluded folders, each file's frontmatter remembered by modification time and size;
- `index`: the system prompt's skills index, in Hermes' format;
- `files`: a skill's own files, read only from inside its folder;
- `library`: `SkillLibrary` (public as `hermes_core.SkillLibrary`): the skills offered on a platform,
  and the answers of Hermes' `skills_list` and `skill_view`;
- `portable`: a Portable Agent Plugins v1 package (`plugin.json`, `skills/`), read with the format's
  safety rules (discovery reads its `plugin.json` only).

Nothing is imported here: discovery imports `portable` on the `hermes plugins list` path.
"""
