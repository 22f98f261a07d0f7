"""Config YAML as data: parsing the operator's `config.yaml` and the administrator's managed file,
and the few helpers every reader of either shares (plain data, the one shape, a dotted key's value).

`config.yaml` is parsed in ruamel.yaml's round-trip mode (a document read for an edit keeps its
comments and order); the managed file, read on every command's start and never edited, with the
safe loader (plain data, about half the parse). The same YAML 1.2 either way; a malformed file is
one `ConfigError` with its line and column.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .._errors import ConfigError

__all__ = ["ABSENT", "parse", "parse_plain", "plain_data", "read_text", "shaped", "value_at"]

_MISSING = object()
ABSENT = object()


def _yaml() -> Any:
    from ruamel.yaml import YAML

    yaml = YAML(typ="rt")
    yaml.preserve_quotes = True
    return yaml


def parse(path: Path, text: str, fix: str = "fix the file (it was not changed)") -> Any:
    """The round-trip document of `text` (read from `path`), None when empty; a `ConfigError`
    with the line and column when it is not valid YAML or not a mapping."""
    return _load(_yaml(), path, text, fix)


def parse_plain(path: Path, text: str, fix: str) -> Any:
    """`parse`, with the safe loader: plain dicts, lists and scalars, nothing kept for an edit."""
    from ruamel.yaml import YAML

    return _load(YAML(typ="safe", pure=True), path, text, fix)


def _load(yaml: Any, path: Path, text: str, fix: str) -> Any:
    from ruamel.yaml.error import MarkedYAMLError, YAMLError

    try:
        data = yaml.load(text)
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        column = mark.column + 1 if mark is not None else None
        where = f"line {line}, column {column}" if line else "an unknown position"
        problem = exc.problem or exc.context or "invalid YAML"
        raise ConfigError(
            f"{path} is not valid YAML at {where}: {problem}; {fix}",
            path=path,
            line=line,
            column=column,
        ) from None
    except YAMLError as exc:
        raise ConfigError(f"{path} is not valid YAML: {exc}; {fix}", path=path) from None
    if data is None:
        return None
    if not isinstance(data, Mapping):
        raise ConfigError(
            f"{path} must hold a mapping of settings at the top level, not a {type(data).__name__}; {fix}",
            path=path,
            line=1,
            column=1,
        )
    return data


def read_text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}", path=path) from None


def shaped(data: Mapping[str, Any]) -> Mapping[str, Any]:
    """`data` (a config mapping as read, of either file) in the one shape every reader sees: a bare
    `model: <name>` is `model: {model: <name>}`, as Hermes takes it. `data` itself when nothing changes.

    >>> shaped({"model": "gpt-4o"})
    {'model': {'model': 'gpt-4o'}}
    """
    model = data.get("model")
    if isinstance(model, str):
        return {**data, "model": {"model": model}}
    return data


def unshaped_model(document: Any) -> None:
    """A round-trip `document` whose `model` is bare text made `model: {model: <text>}` in place, the
    shape readers see (`shaped`), so that an edit of `model.<key>` finds the mapping it names."""
    model = document.get("model") if isinstance(document, Mapping) else None
    if isinstance(model, str):
        from ruamel.yaml.comments import CommentedMap

        document["model"] = CommentedMap(model=model)


def value_at(data: Any, parts: tuple[str, ...] | list[str]) -> Any:
    """The value at the key `parts` (one part per level) in `data`, plain data or a round-trip
    document; `ABSENT` when some level is missing or not a mapping."""
    node = data
    for part in parts:
        if not isinstance(node, Mapping) or part not in node:
            return ABSENT
        node = node[part]
    return node


def plain_data(value: Any, *, shown: bool = False) -> Any:
    """`value` as plain JSON types, or `_MISSING` when it has anything JSON cannot hold; `shown`:
    for showing it, anything else (a date, a key that is a number) as its text instead."""
    if value is None or type(value) in (bool, str):
        return value
    if isinstance(value, str):  # a round-trip document's quoted or folded text
        return str(value)
    if isinstance(value, int):
        return bool(value) if type(value).__name__ == "ScalarBoolean" else int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, Mapping):
        items = {}
        for key, item in value.items():
            plain = plain_data(item, shown=shown)
            if not isinstance(key, str) and shown:
                key = str(key)
            if not isinstance(key, str) or plain is _MISSING:
                return _MISSING
            items[key] = plain
        return items
    if isinstance(value, list):
        plain_items = [plain_data(item, shown=shown) for item in value]
        return _MISSING if any(item is _MISSING for item in plain_items) else plain_items
    return str(value) if shown else _MISSING


_plain = plain_data
