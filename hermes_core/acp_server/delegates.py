"""Other ACP agents as delegates (`acp_agents:` in config.yaml): the agent hands one a task and
gets its answer, as a tool (`acp__<name>`, the built-in plugin `acp_agents`), so a plugin reaches
it too (`ctx.dispatch_tool`).

Each task is a fresh session of a fresh process of that agent (the command, over stdio, with the
official SDK's client side): `initialize`, `session/new` in its folder, one `session/prompt`. Its
answer is the text it streamed; its tool calls are summed up after it. It is cancelled
(`session/cancel`) when the turn that asked is stopped or its `timeout` passes, and its answer so
far is returned. When it asks permission for something, the turn's approver is asked (the
gateway's chat, the editor, `hermes chat`'s prompt); where there is none, it is refused.
"""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from hermes_core import Config
from hermes_core import config_keys as keys
from hermes_core.hosting import ApprovalRequest, Cancelled, cancel_check, report_progress, trace_headers

__all__ = ["DelegateConfig", "delegate", "read_agents", "tool_name"]


@attrs.frozen
class DelegateConfig:
    """One ACP agent of `acp_agents:`."""

    name: str
    command: str
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = attrs.field(factory=dict)
    cwd: str = ""
    description: str = ""
    timeout: float = 600.0


def tool_name(name: str) -> str:
    """`acp__<name>`, every character outside `[A-Za-z0-9_]` made `_`."""
    return "acp__" + re.sub(r"[^A-Za-z0-9_]", "_", name)[:59]


def read_agents(config: Config) -> tuple[list[DelegateConfig], list[str]]:
    """The enabled agents of `acp_agents:`, and one line per entry left out."""
    agents, problems = [], []
    for name in config.read(keys.ACP_AGENTS):
        name = str(name)
        if not config.read(keys.ACP_AGENT_ENABLED, name):
            continue
        command = config.read(keys.ACP_AGENT_COMMAND, name)
        if not command:
            problems.append(f"config.yaml: acp_agents.{name} has no command; it is not offered")
            continue
        args: list[str] = config.read(keys.ACP_AGENT_ARGS, name)
        agents.append(DelegateConfig(
            name, command, tuple(args),
            {str(k): str(v) for k, v in config.read(keys.ACP_AGENT_ENV, name).items()},
            config.read(keys.ACP_AGENT_CWD, name), config.read(keys.ACP_AGENT_DESCRIPTION, name),
            config.read(keys.ACP_AGENT_TIMEOUT, name) or 600.0))
    return agents, problems


def delegate(agent: DelegateConfig, task: str) -> str:
    """Hand `task` to `agent` and wait for its answer (see the module); raises `Cancelled` when
    the turn that asked is stopped, `RuntimeError` when the agent cannot be reached."""
    return asyncio.run(_delegate(agent, task))


class _Listener:
    """The client side of one delegated task: the text the agent streams, its tool calls, and
    its permission requests put to the turn's approver."""

    def __init__(self, agent: DelegateConfig, approver: Any) -> None:
        self.agent, self.approver = agent, approver
        self.text: list[str] = []
        self.tools: dict[str, tuple[str, str]] = {}  # tool call id: (title, status)

    async def session_update(self, session_id: str, update: Any, **_: Any) -> None:
        kind = getattr(update, "session_update", "")
        if kind == "agent_message_chunk" and getattr(update.content, "type", "") == "text":
            self.text.append(update.content.text)
            report_progress(len(self.text), None, "".join(self.text))  # its text so far, to whoever shows the call
        elif kind in ("tool_call", "tool_call_update"):
            title, status = self.tools.get(update.tool_call_id, ("", ""))
            self.tools[update.tool_call_id] = (update.title or title, update.status or status)

    async def request_permission(self, session_id: str, tool_call: Any, options: list[Any], **_: Any) -> Any:
        from acp.schema import AllowedOutcome, DeniedOutcome, RequestPermissionResponse

        kinds = {option.kind: option.option_id for option in options}
        choice = "deny"
        if self.approver is not None:
            title = tool_call.title or tool_call.tool_call_id
            request = ApprovalRequest(f"{tool_name(self.agent.name)}: {title}", dict(tool_call.raw_input or {})
                                      if isinstance(tool_call.raw_input, dict) else {},
                                      f"the ACP agent {self.agent.name!r} asks permission",
                                      f"acp_agent:{self.agent.name}:{title}")
            choice = await asyncio.to_thread(self.approver, request)
        wanted = {"once": "allow_once", "session": "allow_always", "always": "allow_always"}.get(choice)
        if wanted in kinds or (wanted == "allow_always" and "allow_once" in kinds):
            return RequestPermissionResponse(outcome=AllowedOutcome(
                outcome="selected", option_id=kinds.get(wanted) or kinds["allow_once"]))
        refusal = kinds.get("reject_once") or kinds.get("reject_always")
        outcome = AllowedOutcome(outcome="selected", option_id=refusal) if refusal else DeniedOutcome(outcome="cancelled")
        return RequestPermissionResponse(outcome=outcome)

    async def read_text_file(self, *args: Any, **kwargs: Any) -> Any:
        from acp import RequestError

        raise RequestError.method_not_found("fs/read_text_file")

    async def write_text_file(self, *args: Any, **kwargs: Any) -> Any:
        from acp import RequestError

        raise RequestError.method_not_found("fs/write_text_file")

    def answer(self, stop: str) -> str:
        text = "".join(self.text).strip() or "(no text)"
        calls = [f"{title or call_id} ({status or 'started'})" for call_id, (title, status) in self.tools.items()]
        ending = "" if stop == "end_turn" else f"\n[{self.agent.name} stopped: {stop}]"
        return text + (f"\n[its tool calls: {', '.join(calls)}]" if calls else "") + ending


async def _delegate(agent: DelegateConfig, task: str) -> str:
    from acp import PROTOCOL_VERSION, spawn_agent_process, text_block

    from hermes_core.hosting import current_approver

    listener = _Listener(agent, current_approver())
    cwd = str(Path(agent.cwd).expanduser()) if agent.cwd else os.getcwd()
    try:
        async with spawn_agent_process(listener, agent.command, *agent.args,  # type: ignore[arg-type] # a plain class
                                       env=dict(agent.env), cwd=cwd,
                                       transport_kwargs={"stderr": subprocess.DEVNULL}) as (conn, _process):
            await conn.initialize(protocol_version=PROTOCOL_VERSION)
            session = await conn.new_session(cwd=cwd, mcp_servers=[])
            asked = asyncio.ensure_future(conn.prompt(session_id=session.session_id, prompt=[text_block(task)],
                                                      **trace_headers()))  # `_meta.traceparent`: the turn's trace goes on
            deadline = time.monotonic() + agent.timeout
            stopped: str | None = None
            while not asked.done():
                await asyncio.wait([asked], timeout=0.1)
                try:
                    cancel_check()
                except Cancelled:
                    stopped = "cancelled"
                if stopped is None and time.monotonic() > deadline:
                    stopped = f"timed out after {agent.timeout:.0f} s"
                if stopped is not None and not asked.done():
                    await conn.cancel(session_id=session.session_id)
                    await asyncio.wait([asked], timeout=5)
                    break
            for _ in range(3):  # updates the agent sent before its answer, still in their tasks, are heard first
                await asyncio.sleep(0)
            if stopped == "cancelled":
                raise Cancelled
            stop = asked.result().stop_reason if asked.done() and not asked.exception() else stopped or "error"
            return listener.answer(stopped or stop)
    except (OSError, ConnectionError) as exc:
        raise RuntimeError(f"the ACP agent {agent.name!r} ({agent.command}) could not be reached: {exc}") from None
