"""`hermes prompt show`: the system prompt a conversation started here would get, part by part, or
the one a stored session was started with (and sends again when it is resumed)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from ._common import echo_json, manager


@click.group()
def prompt() -> None:
    """The agent's system prompt: what the model is told before the conversation."""


@prompt.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON: the text, and each part with its source and size.")
@click.option("--platform", default="cli", show_default=True,
              help="The platform the conversation is on (its skills and sections differ).")
@click.option("--cwd", "cwd", type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="The conversation's working folder, where the project context is found (default: this one).")
@click.option("--session", "session_id", metavar="ID",
              help="The prompt kept with stored session ID (what resuming it sends) instead of a new one.")
def show(as_json: bool, platform: str, cwd: Path | None, session_id: str | None) -> None:
    """The assembled system prompt, each part with where it came from (a file, a plugin's section,
    the memory provider, the skills index) and its size; files left out say why. Nothing is sent,
    stored or started: no session hook fires."""
    from ..agent.system_prompt import SystemPrompt, build_system_prompt

    loaded = manager(click.get_current_context())
    if session_id is not None:
        built = SystemPrompt.from_stored(_kept(loaded.home, session_id))
    else:
        session = loaded.open_session(platform=platform, announce=False)
        try:
            offered = [schema["function"]["name"] for schema in session.tool_schemas()]
            built = build_system_prompt(loaded, session, platform=platform, cwd=cwd, offered=offered)
        finally:
            session.close()
    if as_json:
        echo_json(built.as_json())
        return
    for part in built.parts:
        where = f" ({part.path})" if part.path else ""
        cut = ", truncated" if part.truncated else ""
        click.echo(f"──── {part.kind}: {part.source}{where} · {part.chars:,} chars{cut}")
        click.echo(part.text)
        click.echo()
    click.echo(f"──── {len(built.parts)} parts, {len(built.text):,} chars in all (each file capped at "
               f"{built.max_chars:,})")
    for left in built.left_out:
        click.echo(f"left out: {left.source} ({left.path}): {left.reason}")


def _kept(home: Path, session_id: str) -> dict[str, Any]:
    """The prompt kept with stored session `session_id`; one line saying why when there is none."""
    from .._errors import SessionNotFoundError
    from ..agent import SessionStore
    from ..hosting import state_url

    store = SessionStore(home, url=state_url(home))
    try:
        found = store.resumed(session_id)
    finally:
        store.close()
    if found is None:
        raise SessionNotFoundError(f"no session {session_id!r}; see `hermes sessions list`")
    if found[1] is None:
        raise click.ClickException(f"session {session_id} keeps no system prompt (it was started by an earlier "
                                   "hermes-core, or has no message yet): resuming it assembles one")
    return found[1]
