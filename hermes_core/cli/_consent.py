"""Consent before a plugin is enabled, at a terminal (docs/trust.md): what it will be able to do
and the questions, for `hermes plugins install` and `hermes plugins enable`. What is shown and
stored is `hermes_core._consent`'s, which the dashboard shows too."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from .._consent import asked, asks_before_enabling, record_consent

__all__ = ["ask_before_enabling", "consent_to_enable"]


def consent_to_enable(spec: Any, python: Path | None, yes: bool, declared: list[str]) -> bool:
    """Show what `spec` will be able to do (its dry run, the capabilities its plugin.yaml asks for),
    ask whether to enable it, then whether to grant what it asks for that is not granted yet, unless
    the user answered about this very set of capabilities before (the consent's hash). `--yes`
    enables it and grants nothing: a capability is granted only by an answer."""
    click.echo(f"{spec.id} will be able to (from a dry run of its register() in a process of its own):", err=True)
    shown = asked(spec, python, declared)
    for line in shown.lines:
        click.echo(f"  {line}", err=True)
    pending, known = shown.pending, shown.known
    to_ask = [] if shown.answered else pending
    if yes:
        if pending:
            click.echo(f"  --yes grants no capability: answer at a terminal, or add {', '.join(pending)} to "
                       f"plugins.entries.{spec.id}.granted_capabilities", err=True)
        return True
    if not _answer(f"Enable {spec.id}?"):
        return False
    if to_ask:
        if _answer(f"Grant {', '.join(to_ask)} to {spec.id}?"):
            record_consent(spec.id, to_ask, known)
            click.echo(f"granted {', '.join(to_ask)} to {spec.id}")
        else:
            record_consent(spec.id, [], known)
            click.echo(f"{spec.id} runs without {', '.join(to_ask)}", err=True)
    elif not shown.answered:  # nothing to grant (or all granted by hand): the consent is now of this set
        record_consent(spec.id, [], known)
    return True


def ask_before_enabling(spec: Any, config: Any, yes: bool) -> bool:
    """`hermes plugins enable`: whether to go on enabling `spec`. A built-in plugin, one config.yaml
    enables already and one whose capabilities the user answered about (the consent's hash) go on at
    once; any other is shown and asked about (`consent_to_enable`). With no terminal to ask at (a
    script, a provisioning run), as with --yes: it is enabled, granted no capability, and the
    output says so and how to grant them. Refused first when a list the administrator manages would
    keep it from being enabled (`refuse_to_toggle`)."""
    from .._config.plugin_lists import refuse_to_toggle

    refuse_to_toggle(spec, config, "enabled")
    declared = asks_before_enabling(config, spec)
    if declared is None:
        return True
    if not yes and not sys.stdin.isatty():
        click.echo(f"hermes: no terminal to ask at: {spec.id} is enabled as with --yes, granted no capability; "
                   f"run `hermes plugins enable {spec.id}` in a terminal to grant them", err=True)
        yes = True
    if consent_to_enable(spec, Path(spec.python) if spec.python else None, yes, declared):
        return True
    click.echo(f"{spec.id} was not enabled")
    return False


def _answer(question: str) -> bool:
    try:
        answer: bool | None = click.confirm(question, default=False, err=True)
    except click.Abort:
        answer = None
    if not sys.stdin.isatty():
        click.echo({True: "y", False: "n", None: "(no answer)"}[answer], err=True)
    return bool(answer)
