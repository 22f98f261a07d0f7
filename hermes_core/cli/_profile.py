"""`hermes profile ...`: the profiles of this root (`<root>/profiles/<name>/`, the default being the
root). Which one a command runs as is chosen before click starts (`hermes -p NAME ...`,
`hermes_core._profiles.select`); these commands create, show and change them."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import click

from .._errors import ProfileError
from .._paths import hermes_home
from .._profiles import manage
from .._profiles.names import DEFAULT, profile_home, profile_of, root_of
from ._common import echo_json, echo_table


def _root() -> Path:
    return root_of(hermes_home())


def _gateway(home: Path) -> dict[str, Any] | None:
    from ..gateway import read_status

    return read_status(home)


def _commands() -> set[str]:
    """hermes' own commands, which an alias may not be named after."""
    context = click.get_current_context()
    root = context.find_root()
    return set(root.command.list_commands(root)) if isinstance(root.command, click.Group) else set()


def _aliases() -> dict[str, str]:
    from .._profiles.aliases import aliases

    return aliases()


def _describe(root: Path, name: str, aliases: dict[str, str] | None = None) -> dict[str, Any]:
    """What `show` and `list` say of profile `name` (`aliases`: every alias, when already read)."""
    from .. import config_keys
    from .._config.file import load_config

    home = manage.existing(root, name)
    running = _gateway(home)
    env = home / ".env"
    skills = home / "skills"
    return {
        "name": name, "home": str(home), "current": hermes_home().resolve() == home.resolve(),
        "sticky": manage.sticky(root) == name,
        "model": load_config(home).read(config_keys.MODEL_MODEL) or None,
        "gateway": {"running": running is not None, "pid": running["pid"] if running else None},
        "soul": (home / "SOUL.md").is_file(),
        "env_keys": sum(1 for line in env.read_text(encoding="utf-8").splitlines()
                        if line.strip() and not line.lstrip().startswith("#") and "=" in line) if env.is_file() else 0,
        "skills": sum(1 for _ in skills.rglob("SKILL.md")) if skills.is_dir() else 0,
        "description": manage.description(home),
        "aliases": [alias for alias, target in (_aliases() if aliases is None else aliases).items() if target == name],
    }


@click.group(invoke_without_command=True)
@click.pass_context
def profile(ctx: click.Context) -> None:
    """Profiles: several homes on one machine, each with its own config, .env, memory, sessions,
    skills, cron jobs and gateway. Without a command: the profile this command line runs as.

    A named profile is <root>/profiles/<name>/ (the default profile is the root). Run any command
    in one with `hermes -p NAME COMMAND ...`; `hermes profile use NAME` makes it the default.
    """
    if ctx.invoked_subcommand is None:
        home = hermes_home()
        click.echo(f"{profile_of(home)}  {home}")


@profile.command(name="list")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON array.")
def list_(as_json: bool) -> None:
    """Every profile of this root: which one runs now (*), its model, its gateway."""
    root = _root()
    every = _aliases()
    found = [_describe(root, name, every) for name in [DEFAULT, *manage.names(root)]]
    if as_json:
        echo_json(found)
        return
    echo_table(["", "profile", "model", "gateway", "home"],
               [["*" if entry["current"] else "", entry["name"] + (" (sticky)" if entry["sticky"] and entry["name"]
                                                                   != DEFAULT else ""),
                 entry["model"] or "-", f"running (pid {entry['gateway']['pid']})" if entry["gateway"]["running"]
                 else "-", entry["home"]] for entry in found])


@profile.command()
@click.argument("name", required=False)
@click.option("--json", "as_json", is_flag=True, help="Print a JSON object.")
def show(name: str | None, as_json: bool) -> None:
    """One profile (default: the current one): its home, model, gateway, SOUL.md, .env and skills."""
    root = _root()
    entry = _describe(root, name or profile_of(hermes_home()))
    if as_json:
        echo_json(entry)
        return
    gateway = f"running (pid {entry['gateway']['pid']})" if entry["gateway"]["running"] else "not running"
    for label, value in [("profile", entry["name"]), ("home", entry["home"]), ("model", entry["model"] or "-"),
                         ("gateway", gateway), ("SOUL.md", "yes" if entry["soul"] else "no"),
                         (".env", f"{entry['env_keys']} variable(s)"), ("skills", str(entry["skills"])),
                         ("alias", ", ".join(entry["aliases"]) or "-"), ("about", entry["description"] or "-")]:
        click.echo(f"{label:<8} {value}")


@profile.command()
@click.argument("name")
@click.option("--clone", is_flag=True, help="Copy the current profile's config, .env, SOUL.md, skills and memory files.")
@click.option("--clone-from", "clone_from", metavar="PROFILE", help="Clone this profile instead of the current one.")
@click.option("--no-skills", "skills", is_flag=True, flag_value=False, default=True, help="A clone without the skills.")
@click.option("--clone-channels", "channels", is_flag=True,
              help="A clone with the messaging channels and API server keys (left out by default).")
@click.option("--description", "about", default="", metavar="TEXT", help="What the profile is for, in a sentence.")
@click.option("--alias", "alias", is_flag=True, help="Also write the command alias ~/.local/bin/NAME (`NAME chat`).")
def create(name: str, clone: bool, clone_from: str | None, skills: bool, channels: bool, about: str,
           alias: bool) -> None:
    """Create profile NAME: an empty home, or a clone (never sessions, state or, unless asked, channel secrets)."""
    root = _root()
    source = None
    if clone_from is not None:
        source = manage.existing(root, clone_from)
    elif clone:
        source = hermes_home()
    if source is None and (not skills or channels):
        raise ProfileError("--no-skills and --clone-channels say what a clone takes: add --clone or --clone-from")
    home = manage.create(root, name, clone_from=source, skills=skills, channels=channels, about=about)
    what = f" (cloned from {profile_of(source)})" if source is not None else ""
    click.echo(f"created profile {name}{what}: {home}")
    if alias:
        from .._profiles import aliases

        try:
            click.echo(f"alias: {aliases.make(name, name, commands=_commands())} runs `hermes -p {name}`")
        except (ProfileError, OSError) as exc:  # the profile stands; the alias can be made later
            click.echo(f"hermes: warning: no alias written: {exc} (`hermes profile alias {name} --name OTHER`)",
                       err=True)
    click.echo(f"use it with `hermes -p {name} COMMAND`, or `hermes profile use {name}` to make it the default")


@profile.command()
@click.argument("name")
@click.option("--name", "alias", metavar="ALIAS", help="The alias's name (default: the profile's).")
@click.option("--remove", is_flag=True, help="Remove the alias instead.")
def alias(name: str, alias: str | None, remove: bool) -> None:
    """Write (or --remove) the command alias ~/.local/bin/ALIAS that runs `hermes -p NAME`."""
    from .._profiles import aliases

    if remove:
        ran = aliases.remove(alias or name)
        click.echo(f"removed alias {alias or name} (it ran profile {ran})")
        return
    manage.existing(_root(), name)
    path = aliases.make(alias or name, name, commands=_commands())
    click.echo(f"alias: {path} runs `hermes -p {name}`")
    if str(path.parent) not in os.environ.get("PATH", "").split(os.pathsep):
        click.echo(f"hermes: warning: {path.parent} is not on PATH; add it to run `{alias or name}`", err=True)


@profile.command()
@click.argument("name")
@click.argument("text", required=False)
def describe(name: str, text: str | None) -> None:
    """Say what profile NAME is for (TEXT; "" removes it), or print what was said."""
    home = manage.existing(_root(), name)
    if text is None:
        click.echo(manage.description(home) or f"(profile {name} has no description)")
        return
    manage.describe(home, text)
    click.echo(f"described profile {name}" if text.strip() else f"removed the description of profile {name}")


@profile.command()
@click.argument("name")
def use(name: str) -> None:
    """Make NAME the profile commands run as when none is given (`default`: the root)."""
    home = manage.use(_root(), name)
    click.echo(f"commands now run as profile {name} ({home})")


def _refuse_running(root: Path, name: str, doing: str) -> None:
    running = _gateway(profile_home(root, name))
    if running is not None:
        raise ProfileError(f"profile {name!r} has a gateway running (pid {running['pid']}); stop it before you "
                           f"{doing} the profile")


@profile.command()
@click.argument("old")
@click.argument("new")
def rename(old: str, new: str) -> None:
    """Rename profile OLD to NEW (not the default; not while its gateway runs)."""
    root = _root()
    if old != DEFAULT:
        _refuse_running(root, old, "rename")
    home = manage.rename(root, old, new)
    click.echo(f"renamed profile {old} to {new}: {home}")
    from .._profiles import aliases

    for moved in aliases.retarget(old, new):
        click.echo(f"alias {moved} now runs `hermes -p {new}`")


@profile.command()
@click.argument("name")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
def delete(name: str, yes: bool) -> None:
    """Delete profile NAME and everything in its home (not the default; not while its gateway runs)."""
    root = _root()
    if name == DEFAULT:
        manage.delete(root, name)  # says why not
    home = manage.existing(root, name)
    _refuse_running(root, name, "delete")
    if not yes:
        if not sys.stdin.isatty():
            raise ProfileError(f"deleting profile {name!r} removes {home} and everything in it; "
                               f"confirm with `hermes profile delete {name} --yes`")
        click.confirm(f"Delete profile {name} and everything in {home}?", abort=True)
    manage.delete(root, name)
    click.echo(f"deleted profile {name} ({home})")
    from .._profiles import aliases

    for gone in aliases.remove_for(name):
        click.echo(f"removed alias {gone}")


@profile.command()
@click.argument("name", required=False)
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path),
              help="The archive to write (default: ./NAME.tar.gz).")
def export(name: str | None, output: Path | None) -> None:
    """Write profile NAME (default: the current one) to a .tar.gz, without its secrets."""
    from .._profiles.archive import export as export_profile

    name = name or profile_of(hermes_home())
    out = export_profile(_root(), name, output or Path.cwd() / f"{name}.tar.gz")
    click.echo(f"exported profile {name} to {out} (secrets left out: fill in its .env after importing)")


@profile.command(name="import")
@click.argument("archive", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--name", help="The new profile's name (default: the archive's).")
def import_(archive: Path, name: str | None) -> None:
    """Create a profile from an archive `hermes profile export` wrote."""
    from .._profiles.archive import import_archive

    made, home = import_archive(_root(), archive, name)
    click.echo(f"imported profile {made}: {home} (fill in the values of its .env)")
