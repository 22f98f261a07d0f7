"""The plugins that ship with hermes-core.

They are exposed through the `hermes_agent.plugins` entry-point group like any third-party
plugin, and load unless `plugins.disabled` names them.
"""

# Shown by `hermes plugins list`, which must not import the plugin modules themselves.
DESCRIPTIONS = {
    "clock": "The current_time tool: the date and time in UTC or any IANA time zone.",
    "context_engine/compressor": "Keeps the head and tail of a long conversation and summarises the middle "
    "(the default context engine).",
    "context_engine/lcm": "Lossless context: old messages stored whole in SQLite behind summary nodes; "
    "lcm_grep and lcm_expand bring them back.",
    "webhook": "The webhook messaging platform: the agent behind a loopback HTTP endpoint with a shared secret "
    "(hermes gateway run).",
    "api_server": "The api_server platform: hermes serve's OpenAI-compatible API, served by hermes gateway run "
    "when platforms.api_server is enabled.",
    "acp_agents": "Other ACP agents (acp_agents: in config.yaml) as tools acp__<name> the agent hands a task to.",
    "cron": "The cronjob tool: the agent schedules, lists and manages cron jobs (hermes cron).",
    "files": "read_file and write_file on the turn's workspace, where the host opened one (hermes acp: the "
    "editor's project, through the editor).",
    "todo": "The todo_list tool: the agent's task list for multi-step work (an editor shows it as the plan).",
    "skills": "Hermes' skills_list and skill_view: the agent loads a skill's instructions and files ($HERMES_HOME/skills, "
    "the plugins' skills) when a task needs them.",
    "memory/builtin": "Long-term memory in SQLite with FTS5 under $HERMES_HOME: memory_save, memory_search, "
    "memory_forget (the default memory provider).",
}
