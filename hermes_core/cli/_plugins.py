"""`hermes plugins list|info|enable|disable|doctor|new|install|remove|usage|config`."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from .._config.file import edit_config, load_config
from .._config.plugin_lists import refuse_to_toggle, set_membership
from .._consent import asks_of
from .._discovery.discover import discover
from .._discovery.spec import Discovery, PluginSpec
from .._errors import ManagedKeyError, PluginNotFoundError
from .._paths import hermes_home
from .._quote import quoted
from . import _listing
from ._common import echo_json, echo_table, manager
from ._consent import ask_before_enabling, consent_to_enable


@click.group()
def plugins() -> None:
    """Discover, inspect, enable and check plugins."""


def _add_trust_commands() -> None:
    """`hermes plugins verify|audit|scan` (docs/trust.md) live with the install checks."""
    from ._trust import COMMANDS

    for command in COMMANDS:
        plugins.add_command(command)


_add_trust_commands()


def _discovered() -> tuple[Discovery, Any]:
    return discover(home=hermes_home()), load_config()


def complete_plugin_ids(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[str]:
    """Shell completion of a plugin id, from discovery (nothing imported)."""
    try:
        return [spec.id for spec in discover(home=hermes_home()).plugins if spec.id.startswith(incomplete)]
    except Exception:  # noqa: BLE001 - a completion never prints a traceback into the shell
        return []


def _list_options(command: Any) -> Any:
    """The flags of `hermes plugins list`, from the one table `_start` reads too."""
    for option in reversed(_listing.LIST_OPTIONS):
        command = click.option(option.flag, option.dest, is_flag=True, help=option.help)(command)
    return command


@plugins.command("list")
@_list_options
def list_(**options: bool) -> None:
    """List every discovered plugin (imports none of them).

    ENABLED is `active` for the plugin that provides the context engine or memory provider
    the config selects (`context.engine`, `memory.provider`); in `--json`, `active` names its slot.
    """
    out, warnings = _listing.listing(**options)
    click.echo(out)
    for warning in warnings:
        click.echo(warning, err=True)


def _find(found: Discovery, plugin_id: str) -> PluginSpec:
    spec = found.get(plugin_id)
    if spec is None:
        why = next((f": it was skipped ({s.reason})" for s in found.skipped if s.name == plugin_id), "")
        raise PluginNotFoundError(
            f"no plugin {quoted(plugin_id)} was found{why} (discovered: {', '.join(found.ids) or 'none'}); "
            "see `hermes plugins list`"
        )
    return spec


@plugins.command()
@click.argument("plugin_id", shell_complete=complete_plugin_ids)
@click.option("--json", "as_json", is_flag=True, help="Print a JSON object.")
def info(plugin_id: str, as_json: bool) -> None:
    """Show everything known about one plugin without importing it."""
    found, config = _discovered()
    spec = _find(found, plugin_id)
    data = _listing.row(spec, config, _listing.active_slots(found, config)) | {
        "author": spec.author, "origin": spec.origin,
        "requires_env": list(spec.requires_env),
        "missing_env": spec.missing_env(),
        "requires_hermes": spec.requires_hermes,
        "provides": {k: list(v) for k, v in spec.provides.items()},
        "shadows": list(spec.shadows),
        "warnings": list(spec.warnings),
        "kind_source": spec.kind_source,
        "hermes_imports": list(spec.hermes_imports),
    }
    if as_json:
        echo_json(data)
        return
    data.pop("skipped")
    if data["needs_host"] == data["error"]:
        data.pop("needs_host")
    for key, value in data.items():
        if value in ("", [], {}, None) and key not in ("enabled",):
            continue
        if isinstance(value, bool):
            value = "yes" if value else "no"
        elif isinstance(value, dict):
            value = "; ".join(f"{k}: {', '.join(v)}" for k, v in value.items())
        elif isinstance(value, list):
            value = ", ".join(value)
        click.echo(f"{key + ':':<16}{value}")


def _toggle(plugin_id: str, add_to: str, remove_from: str) -> None:
    found, config = _discovered()
    spec = _find(found, plugin_id)
    refuse_to_toggle(spec, config, add_to)
    changed = set_membership(spec.id, add_to, remove_from, config)
    click.echo(f"{add_to} {spec.id}" if changed else f"{spec.id} was already {add_to}")
    if spec.exclusive and add_to == "enabled":  # Hermes' `exclusive`: the slot's setting loads it, not this
        click.echo(f"note: {spec.id} is an exclusive {spec.exclusive} provider (as Hermes reads its source); it is "
                   f"loaded when selected, by {spec.selecting_setting()} in config.yaml")


@plugins.command()
@click.argument("plugin_id", shell_complete=complete_plugin_ids)
@click.option("-y", "--yes", is_flag=True, help="Do not ask: enable it, granting no capability (docs/trust.md).")
def enable(plugin_id: str, yes: bool) -> None:
    """Enable a plugin (adds it to plugins.enabled, removes it from plugins.disabled); a third-party
    one after showing what it will be able to do and asking, as `plugins install` does (docs/trust.md)."""
    found, config = _discovered()
    if ask_before_enabling(_find(found, plugin_id), config, yes):
        _toggle(plugin_id, "enabled", "disabled")


@plugins.command()
@click.argument("plugin_id", shell_complete=complete_plugin_ids)
def disable(plugin_id: str) -> None:
    """Disable a plugin (adds it to plugins.disabled, which always wins)."""
    _toggle(plugin_id, "disabled", "enabled")


@plugins.command()
@click.option("--json", "as_json", is_flag=True, help="Print a JSON object.")
@click.pass_context
def doctor(ctx: click.Context, as_json: bool) -> None:
    """Load every enabled plugin and report what works, what failed and why."""
    from ..agent.loop import FIRED_HOOKS
    from ..gateway import GATEWAY_HOOKS
    from ..gateway.readiness import readiness

    loaded = manager(ctx)
    # `hermes` is the reference host (its agent and its gateway): hooks are judged by what they fire
    loaded.declare_fired_hooks(*FIRED_HOOKS, *GATEWAY_HOOKS)
    report = loaded.doctor()
    platforms = [readiness(entry, loaded.config) for entry in loaded.platforms.all()]
    report.warnings.extend(f"platform {p.entry.name!r} of plugin {p.entry.plugin_id!r} is enabled but cannot start: "
                           f"{p.why}" for p in platforms if p.enabled and not p.ready)
    if as_json:
        echo_json({"plugins": report.plugins, "slots": report.slots, "problems": report.problems,
                   "warnings": report.warnings,
                   "platforms": [{"name": p.entry.name, "plugin": p.entry.plugin_id, "enabled": p.enabled,
                                  "ready": p.ready, "why": p.why} for p in platforms]})
    else:
        if report.plugins:
            echo_table(
                ["id", "status", "import ms", "registered / error"],
                [
                    [p["id"], p["status"], f"{p['import_ms']:.1f}", _outcome(p)]
                    for p in report.plugins
                ],
            )
        else:
            click.echo("no plugins enabled")
        active = ", ".join(f"{slot}={name}" for slot, name in report.slots.items() if name)
        click.echo(f"slots: {active or 'none active'}")
        isolated = [p["id"] for p in report.plugins if p["isolated"]]
        if isolated:  # plugins.entries.<id>.isolation: process
            click.echo(f"in a process of their own: {', '.join(isolated)}")
        lazy = [p["id"] for p in report.plugins if p["lazy"]]
        if lazy:  # what `hermes run`, `chat`, `tools call` and `mcp serve` import only when one of its tools is used
            click.echo(f"imported when first needed: {', '.join(lazy)}")
        enabled = [f"{p.entry.name} ({'ready' if p.ready else 'cannot start'})" for p in platforms if p.enabled]
        if enabled:
            click.echo(f"platforms: {', '.join(enabled)}")
        for warning in report.warnings:
            click.echo(f"warning: {warning}")
        for problem in report.problems:
            click.echo(f"problem: {problem}")
        click.echo(report.verdict())
    if not report.ok:
        ctx.exit(1)


def _outcome(row: dict[str, Any]) -> str:
    """What a plugin registered (or why it failed), and the Hermes names hermes-core served it."""
    text = row["error"] or "; ".join(f"{k}: {', '.join(v)}" for k, v in row["registered"].items()) or "-"
    if row["hermes_names"]:
        text += f" (imports Hermes' {', '.join(row['hermes_names'])}, served by hermes-core)"
    return text


@plugins.command()
@click.argument("name")
@click.option("--kind", type=click.Choice(["tool", "context_engine", "memory_provider"]), required=True,
              help="What the plugin adds.")
@click.option("--output-dir", type=click.Path(file_okay=False, path_type=Path), default=Path("."),
              show_default=True, help="Where to create the project folder.")
@click.option("--description", default="A plugin for hermes-core.", help="One line for the README and PyPI.")
@click.option("--author", default="", help="The author's name.")
def new(name: str, kind: str, output_dir: Path, description: str, author: str) -> None:
    """Create a plugin project NAME (tests included) from the template, without prompts."""
    from ._scaffold import render_plugin

    folder = render_plugin(name, kind, output_dir, description=description, author=author)
    click.echo(f"created {folder}")
    click.echo(f"next: cd {folder} && pip install -e '.[test]' && pytest")


def _provided(found: Discovery, distribution: str) -> list[PluginSpec]:
    """The plugins a distribution provides through its entry points (from discovery: nothing imported)."""
    from ._pip import canonical

    return [spec for spec in found.plugins
            if spec.source == "entrypoint" and spec.distribution and canonical(spec.distribution) == canonical(distribution)]


@plugins.command()
@click.argument("packages", nargs=-1)
@click.option("--user", is_flag=True, help="Install into your user site-packages (outside a virtual environment).")
@click.option("-U", "--upgrade", is_flag=True, help="Upgrade packages that are already installed.")
@click.option("--isolated", is_flag=True,
              help="Install into an environment of their own under $HERMES_HOME/venvs; their plugins run in "
                   "a process of their own there (docs/isolation.md).")
@click.option("-y", "--yes", is_flag=True,
              help="Do not ask: install when plugins.install_policy accepts what the checks found (docs/trust.md).")
@click.option("--locked", is_flag=True,
              help="Install exactly the files $HERMES_HOME/plugins.lock pins (all, or those of PACKAGES), or refuse.")
@click.option("--accept-publisher", "accept", multiple=True, metavar="NAME",
              help="Install NAME although its provenance is not what plugins.lock pins (another publisher, none) "
                   "or does not verify, and pin what it has now (docs/trust.md).")
def install(packages: tuple[str, ...], user: bool, upgrade: bool, isolated: bool, yes: bool, locked: bool,
            accept: tuple[str, ...]) -> None:
    """Download PACKAGES (names, wheel or sdist paths, git URLs) and their dependencies without
    installing them, check them, show what was found, ask, then install exactly the checked files
    into the environment hermes runs in (or, with --isolated, one of their own), record them in
    $HERMES_HOME/plugins.lock and enable the plugins they provide, one line each (docs/trust.md)."""
    import importlib

    from ._pip import PipError, _requirement_name, canonical, installed, isolated_environment, target_problem
    from ._trust import checked_install

    if not packages and not locked:
        raise click.UsageError("give the PACKAGES to install, or --locked to install what plugins.lock pins")
    python = None
    if isolated:
        if user:
            raise click.UsageError("--isolated installs into an environment of its own; leave out --user")
        if not packages:
            raise click.UsageError("--isolated --locked needs the PACKAGES to install into their environment")
        python = isolated_environment(hermes_home(), _requirement_label(packages[0]))
    else:
        problem = target_problem(user)
        if problem:
            raise PipError(problem)
    names, declared = checked_install(packages, python=python, user=user, upgrade=upgrade, yes=yes, locked=locked,
                                      accept=accept)
    importlib.invalidate_caches()  # discovery, next, must see what pip just wrote
    for target in packages if not locked else ():
        name = _requirement_name(target)
        if name is not None and canonical(name) not in map(canonical, names):
            names.append(name)
    found, config = _discovered()
    for name in names:
        name, version = (installed(name) if python is None else None) or (name, "")
        click.echo(f"installed {name} {version}".rstrip() + (f" in {python.parent.parent}" if python else ""))
        specs = _provided(found, name)
        if not specs:
            click.echo(f"hermes: warning: {name} provides no hermes plugin (no entry point in the "
                       "hermes_agent.plugins groups): nothing was enabled", err=True)
        for spec in specs:
            try:
                refuse_to_toggle(spec, config, "enabled")
            except ManagedKeyError as exc:
                click.echo(f"hermes: warning: {spec.id} was installed, not enabled: {exc}", err=True)
                continue
            if not consent_to_enable(spec, python, yes, asks_of(declared, spec)):
                click.echo(f"{spec.id} was not enabled: `hermes plugins enable {spec.id}` enables it")
                continue
            changed = set_membership(spec.id, "enabled", "disabled", config)
            click.echo(f"enabled {spec.id}" if changed else f"{spec.id} was already enabled")
            if python is not None:
                _isolate(spec.id, str(python))
                click.echo(f"{spec.id} runs in a process of its own on {python}")
    if not names:
        click.echo(f"hermes: warning: installed {' '.join(packages)}, but could not tell which distribution it is; "
                   "see `hermes plugins list` and enable its plugins with `hermes plugins enable ID`", err=True)


def _requirement_label(target: str) -> str:
    """A name for the environment of `target`: its distribution's name, else its file or folder's."""
    from ._pip import _requirement_name

    return _requirement_name(target) or Path(target.rstrip("/")).name.split("-")[0] or "plugin"


def _isolate(plugin_id: str, python: str) -> None:
    """plugins.entries.<id>: isolation: process, python: the environment's interpreter."""

    def mutate(doc: Any) -> bool:
        plugins = doc.setdefault("plugins", {})
        entries = plugins.setdefault("entries", {})
        entry = entries.setdefault(plugin_id, {})
        changed = bool(entry.get("isolation") != "process" or entry.get("python") != python)
        entry["isolation"], entry["python"] = "process", python
        return changed

    edit_config(mutate)


def _forget(plugin_id: str) -> bool:
    """Take `plugin_id` out of plugins.enabled (its code is gone; `disabled` stays the operator's)."""

    def mutate(doc: Any) -> bool:
        section = doc.get("plugins")
        enabled = section.get("enabled") if isinstance(section, dict) else None
        if not isinstance(enabled, list) or plugin_id not in enabled:
            return False
        while plugin_id in enabled:
            enabled.remove(plugin_id)
        return True

    return edit_config(mutate)


@plugins.command()
@click.argument("packages", nargs=-1, required=True, shell_complete=complete_plugin_ids)
def remove(packages: tuple[str, ...]) -> None:
    """pip-uninstall PACKAGES (distribution names, or ids of the plugins they provide) from the
    environment hermes runs in (or remove the environment of their own that `install --isolated` made),
    and take their plugins out of plugins.enabled, one line each."""
    import site
    from importlib import metadata

    from ._pip import PipError, canonical, installed, pip_uninstall, target_problem

    found, _ = _discovered()
    packages = tuple(package for package in packages if not _remove_isolated(found, package))
    if not packages:
        return
    names: list[str] = []
    versions: dict[str, str] = {}
    for package in packages:
        spec = found.get(package)
        here = installed(package) or (installed(spec.distribution) if spec is not None and spec.distribution else None)
        if here is None:
            raise PipError(f"nothing named {quoted(package)} is installed in {sys.prefix}: give a distribution "
                           "name (see `pip list`) or the id of a plugin it provides (see `hermes plugins list`)")
        name, versions[name] = here
        if canonical(name) == "hermes-core":
            raise PipError("hermes-core is hermes itself: remove it with pip, not with `hermes plugins remove`")
        if canonical(name) not in map(canonical, names):
            names.append(name)
    for name in names:
        location = str(metadata.distribution(name).locate_file(""))
        problem = target_problem(user=location.startswith(site.getusersitepackages()))
        if problem:
            raise PipError(problem)
    pip_uninstall(names)
    for name in names:
        click.echo(f"removed {name} {versions[name]}")
        for spec in _provided(found, name):
            click.echo(f"disabled {spec.id}" if _forget(spec.id) else f"{spec.id} was not enabled")


def _remove_isolated(found: Discovery, package: str) -> bool:
    """Remove the environment of its own that `hermes plugins install --isolated` made for `package` (a
    distribution name or a plugin id), and take its plugins out of config.yaml; False when it has none."""
    import shutil

    from ._pip import canonical

    spec = found.get(package)
    if spec is None or not spec.python:
        spec = next((s for s in found.plugins if s.python and s.distribution
                     and canonical(s.distribution) == canonical(package)), None)
    if spec is None or not spec.python:
        return False
    environment = Path(spec.python).parent.parent
    if environment.parent != hermes_home() / "venvs":
        return False
    shutil.rmtree(environment)
    click.echo(f"removed {spec.distribution or spec.id} {spec.version}".rstrip() + f" and its environment {environment}")
    for provided in [s for s in found.plugins if s.python == spec.python]:
        click.echo(f"disabled {provided.id}" if _forget(provided.id) else f"{provided.id} was not enabled")
        _unisolate(provided.id)
    return True


def _unisolate(plugin_id: str) -> None:
    """Take out the `python:` that `install --isolated` wrote for `plugin_id` (its environment is gone)."""

    def mutate(doc: Any) -> bool:
        entry = ((doc.get("plugins") or {}).get("entries") or {}).get(plugin_id)
        if not isinstance(entry, dict) or "python" not in entry:
            return False
        del entry["python"]
        return True

    edit_config(mutate)


def _add_usage() -> None:
    from ._hook_calls import hook_calls
    from ._plugin_config import config
    from ._usage import usage

    plugins.add_command(usage)
    plugins.add_command(config)
    plugins.add_command(hook_calls)


_add_usage()
