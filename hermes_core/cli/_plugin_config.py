"""`hermes plugins config NAME`: a memory provider's settings, as Hermes' setup asks for them.

For a memory provider (by provider name or plugin id) it reads `get_config_schema()` (Hermes'
fields: `key`, `description`, `secret`, `required`, `default`, `choices`, `env_var`), takes each
value from `--set KEY=VALUE`, else asks on a terminal, else the field's default, and hands the
non-secret ones to the provider's `save_config(values, hermes_home)`, as Hermes does. Secrets are
never asked for nor written: the command names the variable that holds each one. For any other
plugin, `--set KEY=VALUE` writes `plugins.entries.<id>.settings.<KEY>` (what `ctx.get_config` reads).
"""

from __future__ import annotations

import sys
from typing import Any

import click

from .._errors import ConfigError, PluginNotFoundError
from .._paths import hermes_home
from ._common import manager

__all__ = ["config"]


def _pairs(values: tuple[str, ...]) -> dict[str, str]:
    given: dict[str, str] = {}
    for item in values:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--set {item!r}: write KEY=VALUE")
        given[key.strip()] = value
    return given


def _value(field: dict[str, Any], given: dict[str, str]) -> Any:
    key = str(field.get("key"))
    if key in given:
        return given[key]
    default, choices = field.get("default"), field.get("choices")
    if sys.stdin.isatty():
        kind = click.Choice([str(c) for c in choices]) if isinstance(choices, list) and choices else None
        return click.prompt(str(field.get("description") or key), default=default, type=kind,
                            show_default=default is not None)
    if default is None and field.get("required"):
        raise ConfigError(f"{key} is required and has no default: give it with --set {key}=VALUE")
    return default


def _selecting(name: str) -> Any:
    """A plugin manager with the exclusive memory plugin `name` selected, when there is one (Hermes'
    setup loads a memory provider by name whether `memory.provider` selects it or not); else None."""
    from .._config.config import Config
    from .._config.file import load_config
    from .._discovery.discover import discover
    from .._manager import PluginManager

    home = hermes_home()
    spec = next((s for s in discover(home=home).plugins if s.exclusive == "memory" and s.selected_by(name)), None)
    if spec is None:
        return None
    current = load_config(home)
    data = dict(current.section())
    data["memory"] = {**current.section("memory"), "provider": spec.selection_name}
    return PluginManager(home=home, config=Config(data, current.path)).load()


@click.command("config")
@click.argument("name")
@click.option("--set", "values", multiple=True, metavar="KEY=VALUE", help="A value (else asked, else its default).")
@click.pass_context
def config(ctx: click.Context, name: str, values: tuple[str, ...]) -> None:
    """Set a memory provider's settings (its config schema, saved by its save_config), or a
    plugin's own (--set KEY=VALUE into plugins.entries.<id>.settings)."""
    given = _pairs(values)
    plugins = _selecting(name) or manager(ctx)
    entry = next((e for e in plugins.slots.providers("memory") if name in (e.name, e.plugin_id, e.folder)), None)
    if entry is None:
        if not any(record.id == name for record in plugins.records):
            known = ", ".join(sorted(e.name for e in plugins.slots.providers("memory"))) or "none"
            raise PluginNotFoundError(f"no loaded plugin or memory provider {name!r} (memory providers: {known}); "
                                      "enable it first: hermes plugins enable NAME")
        if not given:
            raise ConfigError(f"plugin {name!r} has no config schema here: set its settings with --set KEY=VALUE")
        from .._ctx.settings import write_setting

        for key, value in given.items():
            write_setting(hermes_home(), name, key, value)
        click.echo(f"{name}: set {', '.join(given)} in plugins.entries.{name}.settings")
        return
    provider = entry.new_instance()
    try:
        schema = provider.get_config_schema() or []
        collected: dict[str, Any] = {}
        for field in (f for f in schema if isinstance(f, dict) and f.get("key")):
            if field.get("secret"):
                where = field.get("env_var") or str(field["key"]).upper()
                click.echo(f"{field['key']}: a secret; set {where} in the environment or $HERMES_HOME/.env")
                continue
            value = _value(field, given)
            if value is not None:
                collected[str(field["key"])] = value
        provider.save_config(collected, str(hermes_home()))
    finally:
        entry.release(provider)
    click.echo(f"{entry.name}: saved {', '.join(collected) or 'nothing'}")
