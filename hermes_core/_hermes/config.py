"""Hermes' `hermes_cli.config`, read-only: the operator's `config.yaml` and `.env` as plain data.

`read_raw_config()` is the file as the operator wrote it, in Hermes' shape where hermes-core
has an equivalent key: `model.default` is hermes-core's `model.model` (a plugin checking which
model the operator configured finds it), and a `model:` written as a bare name is Hermes'
`model: {default: <name>}`. `load_config()` is that with `${VAR}` references expanded and the
sections Hermes' defaults always have present (`model` with `default`, `provider`, `base_url`;
`context`; `memory`; `auxiliary`; `plugins`), as a fresh `dict`. What the file says itself
always wins. `model.context_length` is always an integer there, as Hermes' agent resolves it for
a plugin from its model metadata: the operator's (a number written as text counts), else the
window hermes-core runs the model with (`model.context_length`'s default). Like Hermes', the readers never raise on a broken file: they log it and answer
`{}`. Writing is not served: a plugin keeps its own settings with `ctx.set_config`, and
config.yaml is the operator's.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NoReturn

from .._config.file import load_config as _load
from .._config.file import parse, read_text
from .._errors import ConfigError, HermesError
from .constants import get_config_path, get_env_path, get_hermes_home, get_process_hermes_home

__all__ = [
    "get_config_path",
    "get_env_path",
    "get_env_value",
    "get_hermes_home",
    "get_process_hermes_home",
    "load_config",
    "load_config_readonly",
    "load_env",
    "read_raw_config",
    "read_raw_config_readonly",
    "read_user_config_raw",
    "remove_env_value",
    "save_config",
    "save_env_value",
    "set_config_value",
    "write_platform_config_field",
]

log = logging.getLogger("hermes_core.hermes_names")
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def _plain(value: Any) -> Any:
    """`value` as plain Python data (ruamel's round-trip types become dict, list, bool, int, ...)."""
    if isinstance(value, Mapping):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    if type(value).__name__ == "ScalarBoolean":
        return bool(value)
    for kind in (bool, int, float, str):
        if isinstance(value, kind):
            return kind(value)
    return value


def _expand(value: Any) -> Any:
    if isinstance(value, str):
        return _VAR.sub(lambda m: os.environ.get(m.group(1), m.group(0)), value)
    if isinstance(value, dict):
        return {key: _expand(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_expand(item) for item in value]
    return value


def _read(path: Path | None = None) -> dict[str, Any]:
    if path is None:
        data: Any = _load(get_hermes_home()).section()
    else:
        text = read_text(path)
        data = parse(path, text) if text and text.strip() else None
    result: dict[str, Any] = _plain(data or {})
    return result


def read_user_config_raw(config_path: str | Path | None = None) -> dict[str, Any]:
    """The user file exactly as written (no defaults, nothing expanded); a broken file raises
    `ConfigError` (a malformed file is never guessed at)."""
    return _read(Path(config_path) if config_path is not None else None)


def _hermes_shape(data: dict[str, Any]) -> dict[str, Any]:
    """`data` with Hermes' names for the keys hermes-core has under its own (see the module)."""
    model = data.get("model")
    if isinstance(model, str):
        data["model"] = {"default": model}
    elif isinstance(model, dict) and "default" not in model and isinstance(model.get("model"), str):
        data["model"] = {**model, "default": model["model"]}
    return data


def read_raw_config() -> dict[str, Any]:
    """The user file as written (in Hermes' shape, see the module), or `{}` when it is missing
    or cannot be read."""
    try:
        return _hermes_shape(_read())
    except HermesError as exc:
        log.warning("hermes_cli.config: %s", exc)
        return {}


read_raw_config_readonly = read_raw_config


_SECTIONS: dict[str, dict[str, Any]] = {
    "model": {"default": "", "provider": "", "base_url": ""},
    "context": {}, "memory": {}, "auxiliary": {}, "plugins": {},
}


def _context_length(value: Any) -> int:
    """`model.context_length` as the integer Hermes gives a plugin: the operator's when it is a
    positive whole number (also written as text), else the window hermes-core runs with."""
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    from ..config_keys import MODEL_CONTEXT_LENGTH

    return int(MODEL_CONTEXT_LENGTH.default)


def load_config() -> dict[str, Any]:
    """The operator's config with `${VAR}` references expanded and Hermes' sections present: a
    fresh dict, safe to change."""
    result: dict[str, Any] = _expand(read_raw_config())
    for section, defaults in _SECTIONS.items():
        present = result.get(section)
        if present is None:
            result[section] = dict(defaults)
        elif isinstance(present, dict):
            result[section] = {**defaults, **present}
    model = result.get("model")
    if isinstance(model, dict):
        model["context_length"] = _context_length(model.get("context_length"))
    return result


load_config_readonly = load_config


def _dotenv(path: Path) -> dict[str, str]:
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError):
        return {}
    values = {}
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("export "):
            line = line[len("export "):].lstrip()
        key, sep, value = line.partition("=")
        if not sep or line.startswith("#") or not key.strip():
            continue
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        else:
            value = re.split(r"\s+#", value, maxsplit=1)[0].strip()
        values[key.strip()] = value
    return values


def load_env() -> dict[str, str]:
    """`$HERMES_HOME/.env` as a dict (empty when there is none); the environment is not changed."""
    return _dotenv(get_env_path())


def get_env_value(key: str) -> str | None:
    """`key` from the environment, else from `$HERMES_HOME/.env`, else None."""
    value = os.environ.get(key)
    return value if value is not None else load_env().get(key)


def _refuse(call: str) -> NoReturn:
    raise ConfigError(
        f"hermes_cli.config.{call} is not available under hermes-core: plugins get read access to config.yaml "
        "only. Keep a plugin's own settings with ctx.set_config(key, value) (they live under "
        "plugins.entries.<id>.settings); everything else in config.yaml and .env is the operator's to edit"
    )


def save_config(config: Any, *args: Any, **kwargs: Any) -> NoReturn:
    _refuse("save_config()")


def set_config_value(key: str, value: Any, *args: Any, **kwargs: Any) -> NoReturn:
    _refuse("set_config_value()")


def save_env_value(key: str, value: str, *args: Any, **kwargs: Any) -> NoReturn:
    _refuse("save_env_value()")


def remove_env_value(key: str, *args: Any, **kwargs: Any) -> NoReturn:
    _refuse("remove_env_value()")


def write_platform_config_field(platform: str, field: str, value: Any, *args: Any, **kwargs: Any) -> NoReturn:
    _refuse("write_platform_config_field()")
