"""Built-in plugin `acp_agents`: each agent of `acp_agents:` in config.yaml (any command that
speaks the Agent Client Protocol: another `hermes acp`, a coding agent with an ACP mode) as a
tool `acp__<name>` the model hands a task to, and gets the answer of (see
`hermes_core.acp_server.delegates`). Needs the `acp` extra; registers nothing when no agent is
configured."""

from __future__ import annotations

import json
from typing import Any


def _tool(agent: Any) -> Any:
    from hermes_core.acp_server import delegate
    from hermes_core.hosting import keeping_own_limit

    def handler(args: dict[str, Any], **_: Any) -> str:
        task = str(args.get("task") or "").strip()
        if not task:
            return json.dumps({"error": "give the task to hand over in `task`"})
        try:
            return delegate(agent, task)
        except RuntimeError as exc:
            return json.dumps({"error": str(exc)})

    # Its limit is the agent's own `timeout`, at which it cancels the agent's turn and returns what it
    # said so far: the tool driver waits for it rather than abandoning it at tools.timeout.
    return keeping_own_limit(handler)


def register(ctx: Any) -> None:
    import importlib.util

    from hermes_core import load_config
    from hermes_core.acp_server import read_agents, tool_name

    agents, problems = read_agents(load_config(ctx.hermes_home))
    for problem in problems:
        ctx.logger.warning("%s", problem)
    if agents and importlib.util.find_spec("acp") is None:
        ctx.logger.warning("acp_agents in config.yaml need the Agent Client Protocol SDK: pip install "
                           "'hermes-core[acp]'; none is offered")
        return
    for agent in agents:
        about = f" ({agent.description})" if agent.description else ""
        schema = {
            "name": tool_name(agent.name),
            "description": (f"Hand a task to the agent {agent.name!r}{about} and get its answer. It works on its "
                            "own in a fresh session: say everything it needs in the task."),
            "parameters": {"type": "object", "properties": {"task": {"type": "string", "description": "The task."}},
                           "required": ["task"]},
        }
        ctx.register_tool(schema["name"], "acp_agents", schema, _tool(agent))
