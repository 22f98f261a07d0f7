"""Consent before a plugin is enabled (docs/trust.md): what it will be able to do (a dry run of its
`register()` in a process of its own, the capabilities its plugin.yaml asks for), and the grant,
stored with the hash of the capability set it answered (`plugins.entries.<id>.capabilities_consent`,
Hermes' shape), so that an update asking for other capabilities is asked about again and an
unchanged one is not."""

from __future__ import annotations

import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import click

from .._errors import HermesError
from .._paths import hermes_home

__all__ = ["CONSENT_KEY", "LLM_USE", "asks_of", "consent_of", "consent_to_enable", "dry_run", "record_consent"]

CONSENT_KEY = "capabilities_consent"  # under plugins.entries.<id>: {hash, granted_at}, as Hermes keeps it

LLM_USE = "ctx.llm"  # not a capability to grant: shown, since the model calls it makes cost money

# What a hook lets a plugin do to every conversation, said when it registers one.
HOOK_REACH = {"pre_tool_call": "can block or change any tool call", "post_tool_call": "sees every tool call and result",
              "transform_tool_result": "can change any tool's result", "pre_llm_call": "sees every prompt",
              "post_llm_call": "sees every answer", "transform_llm_output": "can change every answer",
              "pre_command": "sees every slash command", "pre_gateway_dispatch": "sees every platform message"}


def dry_run(spec: Any, python: Path | None) -> list[str]:
    """What the plugin `spec` registers, from its `register()` run in a process of its own (never
    in this one; no LLM keys in its environment), one line per kind; the failure when it fails."""
    from .._config.file import load_config
    from .._standins.isolated import ChildProcess

    child = ChildProcess(spec, home=hermes_home(), config=load_config().section(),
                         python=str(python) if python is not None else None)
    try:
        loaded = child.start()
    except HermesError as exc:
        return [f"its register() could not be run in a process of its own: {exc}"]
    finally:
        child.close()
    if loaded["status"] != "ok":
        return [f"its register() failed in a process of its own: {loaded['failure']}"]
    lines = []
    for kind, names in sorted(loaded["registered"].items()):
        shown = [f"{name} ({HOOK_REACH[name]})" if kind == "hooks" and name in HOOK_REACH else str(name)
                 for name in dict.fromkeys(names)]
        lines.append(f"{kind.replace('_', ' ')}: {', '.join(shown)}")
    return lines or ["registers nothing"]


def asks_of(declared: dict[str, list[str]], spec: Any) -> list[str]:
    """What the plugin `spec` asks for: its package folder's plugin.yaml capabilities, and `ctx.llm`
    when its top-level package uses it."""
    module = (spec.entry_point or "").split(":")[0]
    folder, top = module.replace(".", "/"), module.split(".")[0]
    asked = list(declared.get(folder, []))
    return asked + [LLM_USE] if LLM_USE in declared.get(top, []) and LLM_USE not in asked else asked


def consent_of(config: Any, plugin_id: str) -> dict[str, str] | None:
    """The consent recorded for `plugin_id` ({hash, granted_at}); None when there is none or it is not
    one (a consent that cannot be read counts as never given)."""
    from ..config_keys import PLUGIN_ENTRIES

    entry = config.read(PLUGIN_ENTRIES).get(plugin_id)
    consent = entry.get(CONSENT_KEY) if isinstance(entry, dict) else None
    if not isinstance(consent, dict) or not isinstance(consent.get("hash"), str):
        return None
    return {"hash": consent["hash"], "granted_at": str(consent.get("granted_at") or "an earlier install")}


def consent_to_enable(spec: Any, python: Path | None, yes: bool, declared: list[str]) -> bool:
    """Show what `spec` will be able to do (its dry run, the capabilities its plugin.yaml asks for),
    ask whether to enable it, then whether to grant what it asks for that is not granted yet, unless
    the user answered about this very set of capabilities before (the consent's hash). `--yes`
    enables it and grants nothing: a capability is granted only by an answer."""
    from .._config.file import load_config
    from .._ctx.grants import CAPABILITY_REGISTRY, granted
    from .._trust.consent import capability_set_hash

    click.echo(f"{spec.id} will be able to (from a dry run of its register() in a process of its own):", err=True)
    for line in dry_run(spec, python):
        click.echo(f"  {line}", err=True)
    config = load_config()
    known = [c for c in dict.fromkeys(declared) if c in CAPABILITY_REGISTRY]
    pending = [c for c in known if not granted(config, spec.id, c)]
    consent = consent_of(config, spec.id)
    answered = consent is not None and consent["hash"] == capability_set_hash(known)
    if consent is not None and not answered and known:
        click.echo(f"  it asks for other capabilities than when you answered on {consent['granted_at']}: what is "
                   "not granted stays so until you answer", err=True)
    for capability in dict.fromkeys(declared):
        if capability == LLM_USE:
            click.echo(f"  uses ctx.llm: it calls the model, which costs money (plugins.entries.{spec.id}.llm_budget "
                       "caps it)", err=True)
        elif capability not in CAPABILITY_REGISTRY:
            click.echo(f"  asks for {capability}: not a capability hermes-core knows; not granted", err=True)
        elif capability in pending:
            said = (f"not granted; you answered about these same capabilities on {consent['granted_at']}, so it is "
                    "not asked again" if answered and consent else "not granted")
            click.echo(f"  asks for {capability}: {CAPABILITY_REGISTRY[capability].description} ({said})", err=True)
    to_ask = [] if answered else pending
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
    elif known and not answered:  # all granted already (by hand): the consent is now of this set
        record_consent(spec.id, [], known)
    return True


def record_consent(plugin_id: str, granted: Iterable[str], declared: Iterable[str]) -> None:
    """Add `granted` to plugins.entries.<id>.granted_capabilities and record the consent: the hash of
    the `declared` set the user answered about, and when (config.yaml, written atomically)."""
    from datetime import datetime, timezone

    from .._config.file import edit_config
    from .._trust.consent import capability_set_hash

    adding = list(dict.fromkeys(granted))
    stamp = {"hash": capability_set_hash(declared),
             "granted_at": datetime.now(timezone.utc).isoformat(timespec="seconds")}

    def mutate(doc: Any) -> bool:
        entry = doc.setdefault("plugins", {}).setdefault("entries", {}).setdefault(plugin_id, {})
        if adding:
            listed = entry.setdefault("granted_capabilities", [])
            listed.extend(c for c in adding if c not in listed)
        entry[CONSENT_KEY] = stamp
        return True

    edit_config(mutate)


def _answer(question: str) -> bool:
    try:
        answer: bool | None = click.confirm(question, default=False, err=True)
    except click.Abort:
        answer = None
    if not sys.stdin.isatty():
        click.echo({True: "y", False: "n", None: "(no answer)"}[answer], err=True)
    return bool(answer)
