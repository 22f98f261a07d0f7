"""`hermes config`: the settings in effect, which of them the administrator manages, and one-key edits.

The settings shown are `config.yaml` with the managed scope over it (`/etc/hermes/config.yaml`
or `$HERMES_MANAGED_DIR/config.yaml`), as every command reads them; a managed key is marked, and
`set`/`unset` of one is refused with the managed file named (config.yaml is left as it was).
Keys are dotted; a dot inside one part is written `\\.` (`plugins.entries.my\\.plugin.settings.x`).
"""

from __future__ import annotations

import io
from typing import Any

import click

from .._config.file import config_path, edit_config, load_config, mapping_at
from .._config.managed import dotted
from .._config.parse import ABSENT, plain_data, unshaped_model, value_at
from .._errors import ConfigError
from .._redact import mask_secret_keys, redact_secrets, redact_tree
from ._common import echo_json

__all__ = ["config"]


def _parts(key: str) -> tuple[str, ...]:
    parts, current, index = [], [], 0
    while index < len(key):
        char = key[index]
        if char == "\\" and key[index + 1:index + 2] == ".":
            current.append(".")
            index += 2
            continue
        if char == ".":
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
        index += 1
    parts.append("".join(current))
    if not key.strip() or any(not part.strip() for part in parts):
        raise click.BadParameter(f"{key!r} has an empty part; write a dotted key such as plugins.enabled",
                                 param_hint="KEY")
    return tuple(parts)


def _yaml(value: Any) -> str:
    from ruamel.yaml import YAML

    yaml = YAML(typ="safe", pure=True)
    yaml.default_flow_style = False
    buffer = io.StringIO()
    yaml.dump(value, buffer)
    text = buffer.getvalue()
    return text[:-5] if text.endswith("\n...\n") else text.rstrip("\n")


def _value(text: str) -> Any:
    """What `hermes config set` stores for `text`: YAML's reading of it (true, 3, 0.5, [a, b]),
    or the text itself when YAML reads something else or nothing."""
    from ruamel.yaml import YAML
    from ruamel.yaml.error import YAMLError

    if not text.strip():
        return text
    try:
        value = YAML(typ="safe", pure=True).load(text)
    except YAMLError:
        return text
    return value if isinstance(value, (bool, int, float, list, dict)) or value is None else text


@click.group(invoke_without_command=True)
@click.pass_context
def config(ctx: click.Context) -> None:
    """Show the settings in effect, or change one key of config.yaml.

    Without a subcommand, the same as `hermes config show`. Settings your administrator pins
    (the managed scope: /etc/hermes/config.yaml, or $HERMES_MANAGED_DIR/config.yaml) win over
    config.yaml key by key and cannot be changed here.
    """
    if ctx.invoked_subcommand is None:
        ctx.invoke(show)


@config.command()
@click.option("--json", "as_json", is_flag=True, help="Print a JSON object: path, managed_file, managed_keys, config.")
def show(as_json: bool) -> None:
    """Show the settings in effect (config.yaml with the managed scope over it), secrets masked
    (the values of keys named like one, and text shaped like a key or token)."""
    loaded = load_config()
    data = mask_secret_keys(plain_data(loaded.section(), shown=True))
    managed = loaded.managed
    keys = sorted(dotted(key) for key in managed.keys) if managed is not None else []
    if as_json:
        echo_json({"path": str(loaded.path), "managed_file": str(managed.path) if managed else None,
                   "managed_keys": keys, "config": redact_tree(data)})
        return
    click.echo(f"# config.yaml: {loaded.path}")
    if managed is not None:
        click.echo(f"# managed by your administrator ({managed.path}); these keys win and cannot be changed here:")
        for key in keys:
            click.echo(f"#   {key}")
    if data:
        click.echo(redact_secrets(_yaml(data)))


@config.command()
@click.argument("key")
@click.option("--json", "as_json", is_flag=True, help="Print the value as JSON.")
def get(key: str, as_json: bool) -> None:
    """Print the value in effect at KEY (a mapping or list with its secrets masked, as `show` does);
    says on stderr when the administrator manages it."""
    parts = _parts(key)
    loaded = load_config()
    value = value_at(plain_data(loaded.section(), shown=True), parts)
    if value is ABSENT:
        raise ConfigError(f"{key} is not set in {loaded.path}" +
                          (f" nor in {loaded.managed.path}" if loaded.managed else "") +
                          "; `hermes config show` lists what is")
    if isinstance(value, (dict, list)):  # KEY asked for by name is shown as it is; what is under it, masked
        value = redact_tree(mask_secret_keys(value))
    if as_json:
        echo_json(value)
    else:
        click.echo(_yaml(value) if isinstance(value, (dict, list)) else
                   ("null" if value is None else str(value).lower() if isinstance(value, bool) else str(value)))
    managed = loaded.managed_file(*parts)
    if managed is not None:
        click.echo(f"hermes: {key} is managed by your administrator ({managed})", err=True)


def _set(parts: tuple[str, ...], value: Any, document: Any) -> None:
    def not_mapping(depth: int) -> ConfigError:
        above = dotted(parts[:depth + 1])
        return ConfigError(f"{above} in {config_path()} is not a mapping: `hermes config unset {above}` first")

    unshaped_model(document)
    mapping_at(document, parts[:-1], not_mapping)[parts[-1]] = value


@config.command("set")
@click.argument("key")
@click.argument("value")
def set_(key: str, value: str) -> None:
    """Set KEY to VALUE in config.yaml (VALUE read as YAML: true, 3, [a, b]; else text).

    Comments and order in config.yaml are kept. A key the administrator manages is refused.
    """
    parts, stored = _parts(key), _value(value)
    edit_config(lambda document: _set(parts, stored, document))
    click.echo(f"set {key} in {config_path()}")  # not its value: it may be a secret


@config.command()
@click.argument("key")
def unset(key: str) -> None:
    """Remove KEY from config.yaml (its default, or the managed value, applies again)."""
    parts = _parts(key)

    def remove(document: Any) -> bool:
        if parts[0] == "model":
            unshaped_model(document)
        if value_at(document, parts) is ABSENT:
            return False
        del value_at(document, parts[:-1])[parts[-1]]
        return True

    if not edit_config(remove):
        raise ConfigError(f"{key} is not set in {config_path()}; nothing was changed")
    click.echo(f"unset {key} in {config_path()}")


@config.command()
def path() -> None:
    """Print the path of config.yaml."""
    click.echo(config_path())
