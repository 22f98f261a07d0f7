"""`hermes skills`: the skills the agent is offered (Hermes' `skills.disabled` and
`skills.platform_disabled.<platform>`). Imported only when asked for."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from .._config.file import edit_config
from .._errors import ConfigError
from ._common import echo_json, echo_table, manager

if TYPE_CHECKING:
    from .._skills.library import SkillLibrary

PLATFORM_HELP = "As offered on this platform (cli, cron, telegram, api_server, acp, ...): skills.platform_disabled.<P>."


@click.group()
def skills() -> None:
    """List, show, enable and disable skills ($HERMES_HOME/skills, the plugins' <plugin>:<name>)."""


def _library(ctx: click.Context, platform: str | None) -> SkillLibrary:
    return manager(ctx).skill_library(platform or "")


def _entry(library: SkillLibrary, name: str) -> dict[str, Any]:
    entries = library.entries()
    found = [e for e in entries if name in (e["name"], e["path"].rsplit("/", 2)[-2] if e["source"] == "local" else "")]
    if not found:
        known = ", ".join(sorted(e["name"] for e in entries)[:20]) or "none (put one in $HERMES_HOME/skills/)"
        raise click.ClickException(f"no skill {name!r}; known: {known}")
    entry: dict[str, Any] = found[0]
    return entry


@skills.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list of objects.")
@click.option("--platform", help=PLATFORM_HELP)
@click.pass_context
def list_(ctx: click.Context, as_json: bool, platform: str | None) -> None:
    """Every skill found, with its category, source and whether it is enabled."""
    library = _library(ctx, platform)
    entries = library.entries()
    if as_json:
        echo_json(entries)
        return
    if not entries:
        click.echo(f"no skills (a skill is a folder with a SKILL.md: {library.home / 'skills'}/<category>/<name>/)")
        return
    echo_table(["name", "category", "source", "status", "description"],
               [[e["name"], e["category"] or "-", e["plugin"] or e["source"], "enabled" if e["enabled"] else "disabled",
                 e["description"]] for e in entries])
    enabled = sum(1 for e in entries if e["enabled"] is True)
    click.echo(f"{len(entries)} skills: {enabled} enabled, {len(entries) - enabled} disabled")


@skills.command()
@click.argument("name")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON object (the entry, its content and files).")
@click.option("--platform", help=PLATFORM_HELP)
@click.pass_context
def show(ctx: click.Context, name: str, as_json: bool, platform: str | None) -> None:
    """A skill's details and its SKILL.md."""
    from pathlib import Path

    from .._skills.files import linked_files

    library = _library(ctx, platform)
    entry = _entry(library, name)
    path = Path(entry["path"])
    content = path.read_text(encoding="utf-8-sig", errors="replace")
    data = {**entry, "linked_files": linked_files(path.parent), "content": content}
    if as_json:
        echo_json(data)
        return
    for key in ("name", "category", "source", "plugin", "enabled", "description", "path"):
        value = data[key]
        if value in (None, ""):
            continue
        click.echo(f"{key + ':':<14}{('yes' if value else 'no') if isinstance(value, bool) else value}")
    for group, files in data["linked_files"].items():
        click.echo(f"{group + ':':<14}{', '.join(files)}")
    click.echo("")
    click.echo(content.rstrip("\n"))


def _edit(name: str, platform: str | None, disable: bool) -> bool:
    """Add `name` to (or take it out of) skills.disabled / skills.platform_disabled.<platform>."""
    from ruamel.yaml.comments import CommentedMap, CommentedSeq

    from .. import config_keys as keys

    def names_at(section: Any, key: str, where: str, create: bool) -> Any:
        value = section.get(key)
        if isinstance(value, str):  # Hermes' string forms: made a list
            value = section[key] = CommentedSeq(keys.SKILLS_DISABLED.convert(value))
        if value is None and create:
            value = section[key] = CommentedSeq()
        if value is not None and not isinstance(value, list):
            raise ConfigError(f"{where} in config.yaml is not a list; fix it by hand first (it was not changed)")
        return value

    def mutate(doc: Any) -> bool:
        section = doc.get("skills")
        if section is None:
            section = doc["skills"] = CommentedMap()
        if not isinstance(section, dict):
            raise ConfigError("skills in config.yaml is not a mapping; fix it by hand first (it was not changed)")
        places: list[tuple[Any, str, str]] = []  # (mapping, key, dotted name)
        if platform:
            per = section.get("platform_disabled")
            if per is None and disable:
                per = section["platform_disabled"] = CommentedMap()
            if per is not None and not isinstance(per, dict):
                raise ConfigError("skills.platform_disabled in config.yaml is not a mapping; fix it by hand first "
                                  "(it was not changed)")
            if per is not None:
                places.append((per, platform, f"skills.platform_disabled.{platform}"))
        else:
            places.append((section, "disabled", "skills.disabled"))
            per = section.get("platform_disabled")
            if not disable and isinstance(per, dict):  # enabled everywhere
                places += [(per, key, f"skills.platform_disabled.{key}") for key in list(per)]
        changed = False
        for mapping, key, where in places:
            names = names_at(mapping, key, where, disable)
            if names is None:
                continue
            if disable and name not in names:
                names.append(name)
                changed = True
            while not disable and name in names:
                names.remove(name)
                changed = True
            if not names:
                del mapping[key]  # an emptied block list is written back wrongly by ruamel; absent means none
        return changed

    return edit_config(mutate)


def _toggle(ctx: click.Context, name: str, platform: str | None, disable: bool) -> None:
    entry = _entry(_library(ctx, None), name)
    where = f" on {platform}" if platform else ""
    if _edit(entry["name"], platform, disable):
        click.echo(f"{'disabled' if disable else 'enabled'} {entry['name']}{where}")
    else:
        click.echo(f"{entry['name']} was already {'disabled' if disable else 'enabled'}{where}")


@skills.command()
@click.argument("name")
@click.option("--platform", help="Only on this platform (skills.platform_disabled.<P>); default: everywhere.")
@click.pass_context
def enable(ctx: click.Context, name: str, platform: str | None) -> None:
    """Offer a skill again (takes it out of skills.disabled and every skills.platform_disabled list)."""
    _toggle(ctx, name, platform, disable=False)


@skills.command()
@click.argument("name")
@click.option("--platform", help="Only on this platform (skills.platform_disabled.<P>); default: everywhere.")
@click.pass_context
def disable(ctx: click.Context, name: str, platform: str | None) -> None:
    """Stop offering a skill (adds it to skills.disabled, or skills.platform_disabled.<P> with --platform)."""
    _toggle(ctx, name, platform, disable=True)
