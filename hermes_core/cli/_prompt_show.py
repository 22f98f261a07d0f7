"""`hermes prompt show`: the system prompt a conversation started here would get, part by part."""

from __future__ import annotations

from pathlib import Path

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
def show(as_json: bool, platform: str, cwd: Path | None) -> None:
    """The assembled system prompt, each part with where it came from (a file, a plugin's section,
    the memory provider, the skills index) and its size; files left out say why. Nothing is sent,
    stored or started: no session hook fires."""
    from ..agent.system_prompt import build_system_prompt

    loaded = manager(click.get_current_context())
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
