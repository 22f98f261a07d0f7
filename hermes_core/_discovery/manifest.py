"""`plugin.yaml`: the manifest of a folder plugin, read and validated without importing it."""

from __future__ import annotations

import re
import types
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

from .._errors import ManifestError

__all__ = ["Manifest", "read_manifest", "find_manifest", "valid_plugin_name", "MANIFEST_NAMES"]

MANIFEST_NAMES = ("plugin.yaml", "plugin.yml")
KNOWN_FIELDS = frozenset(
    {"name", "version", "description", "author", "kind", "requires_env", "requires_hermes", "provides", "isolation"}
)
# Fields Hermes Agent's manifests carry that hermes-core reads nothing from: accepted quietly.
HERMES_FIELDS = frozenset({
    "provides_tools", "provides_hooks", "hooks", "label", "optional_env", "platforms", "external_dependencies",
    "pip_dependencies", "provides_browser_providers", "provides_web_providers", "manifest_version", "api_version",
    "requires_plugins", "python_dependencies", "config_schema", "license", "homepage", "tags", "capabilities",
    "emits", "listens", "hermes", "depends", "key", "min_hermes_version", "update_url", "python_runtime", "extra",
})
# Hermes' own `kind` values, as hermes-core takes them: `exclusive` (a single-select provider such
# as a memory provider) is read from the source like a missing kind; a `platform` plugin registers
# messaging platforms (`ctx.register_platform`); the others run as standalone.
HERMES_KINDS = {"exclusive": "", "backend": "standalone", "model-provider": "model-provider", "platform": "platform"}
PROVIDES_KEYS = frozenset({"tools", "commands", "hooks", "engines", "providers"})
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$")


def valid_plugin_name(name: str) -> bool:
    """Whether `name` can be a plugin name: letters, digits, `_`, `.`, `-`, not starting with a symbol."""
    return bool(_NAME.match(name))


EMPTY: Mapping[str, tuple[str, ...]] = types.MappingProxyType({})


class Manifest(NamedTuple):
    """The validated fields of a `plugin.yaml`; `warnings` lists what was ignored. `kind` is ""
    when the manifest does not say (discovery then reads the source, as Hermes does)."""

    name: str
    version: str = ""
    description: str = ""
    author: str = ""
    kind: str = ""
    requires_env: tuple[str, ...] = ()
    requires_hermes: str = ""
    provides: Mapping[str, tuple[str, ...]] = EMPTY
    warnings: tuple[str, ...] = ()
    isolation: str = ""  # the author's hint: "process" (the operator's plugins.entries.<id>.isolation wins)


def find_manifest(folder: Path) -> Path | None:
    """`plugin.yaml` (or its fallback `plugin.yml`) in `folder`, if there is one."""
    for name in MANIFEST_NAMES:
        candidate = folder / name
        if candidate.is_file():
            return candidate
    return None


def _text(data: Mapping[str, Any], key: str, path: Path) -> str:
    value = data.get(key)
    if value is None:
        return ""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise ManifestError(f"{path}: `{key}` must be a string, not {type(value).__name__}")
    return str(value).strip()


def _strings(value: Any, key: str, path: Path) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise ManifestError(f"{path}: `{key}` must be a list of non-empty strings")
    return tuple(v.strip() for v in value)


def _env_names(value: Any, path: Path) -> tuple[str, ...]:
    """`requires_env`: names, or Hermes' mappings `{name, description, url, secret}` (their names)."""
    if not isinstance(value, list):
        return _strings(value, "requires_env", path)
    names = []
    for item in value:
        if isinstance(item, Mapping):
            name = item.get("name")
            if not isinstance(name, str) or not name.strip():
                raise ManifestError(f"{path}: a `requires_env` entry written as a mapping needs a `name` "
                                    f"(the variable), e.g. {{name: MY_API_KEY, secret: true}}; got {dict(item)!r}")
            names.append(name)
        else:
            names.append(item)
    return _strings(names, "requires_env", path)


def _load_yaml(path: Path) -> Any:
    from ruamel.yaml import YAML
    from ruamel.yaml.error import MarkedYAMLError, YAMLError

    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ManifestError(f"{path}: cannot be read: {exc}") from None
    try:
        return YAML(typ="safe", pure=True).load(text)
    except MarkedYAMLError as exc:
        mark = exc.problem_mark
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        raise ManifestError(f"{path}: invalid YAML{where}: {exc.problem}") from None
    except YAMLError as exc:
        raise ManifestError(f"{path}: invalid YAML: {exc}") from None


def _kind(data: Mapping[str, Any], path: Path, kinds: frozenset[str]) -> tuple[str, tuple[str, ...]]:
    """The manifest's `kind` as hermes-core takes it, and a warning when it is unknown: Hermes'
    own values as `HERMES_KINDS` says, an unknown one as standalone (as Hermes does)."""
    kind = _text(data, "kind", path)
    if kind in HERMES_KINDS and kind not in kinds:
        return HERMES_KINDS[kind], ()
    if kind and kind not in kinds:
        return "standalone", (f"{path}: unknown `kind` {kind!r} treated as standalone, as Hermes does "
                              f"(expected one of: {', '.join(sorted(kinds))})",)
    return kind, ()


def _requires_hermes(data: Mapping[str, Any], path: Path) -> str:
    """`requires_hermes`, checked to be a PEP 440 version specifier."""
    requires_hermes = _text(data, "requires_hermes", path)
    if requires_hermes:
        from packaging.specifiers import InvalidSpecifier, SpecifierSet

        try:
            SpecifierSet(requires_hermes)
        except InvalidSpecifier:
            raise ManifestError(
                f"{path}: `requires_hermes` {requires_hermes!r} is not a version specifier (e.g. '>=0.1,<2')"
            ) from None
    return requires_hermes


def _provides(data: Mapping[str, Any], path: Path) -> tuple[dict[str, tuple[str, ...]], tuple[str, ...]]:
    """`provides` (`{tools: [...], commands: [...], ...}`), and a warning per unknown key."""
    provides_raw = data.get("provides") or {}
    if not isinstance(provides_raw, Mapping):
        raise ManifestError(f"{path}: `provides` must be a mapping such as {{tools: [name, ...]}}")
    provides: dict[str, tuple[str, ...]] = {}
    warnings: list[str] = []
    for key, value in provides_raw.items():
        if key not in PROVIDES_KEYS:
            warnings.append(f"{path}: unknown `provides.{key}` ignored (known: {', '.join(sorted(PROVIDES_KEYS))})")
            continue
        provides[key] = _strings(value, f"provides.{key}", path)
    return provides, tuple(warnings)


def read_manifest(path: Path, *, default_name: str, kinds: frozenset[str]) -> Manifest:
    """Parse and validate the manifest at `path`; `ManifestError` says which field is wrong.

    `kinds` are the accepted values of `kind` (`standalone` and the declared slot names); Hermes'
    own values are taken as `HERMES_KINDS` says, and an unknown one is a warning (standalone).
    """
    data = _load_yaml(path)
    if data is None:
        data = {}
    if not isinstance(data, Mapping):
        raise ManifestError(f"{path}: must be a mapping of fields, not a {type(data).__name__}")
    unknown = tuple(
        f"{path}: unknown field `{key}` ignored (known: {', '.join(sorted(KNOWN_FIELDS))})"
        for key in data
        if key not in KNOWN_FIELDS and key not in HERMES_FIELDS
    )
    name = _text(data, "name", path) or default_name
    if not valid_plugin_name(name):
        raise ManifestError(
            f"{path}: `name` {name!r} is not a valid plugin name "
            "(use letters, digits, '_', '.', '-', starting with a letter or digit)"
        )
    kind, kind_warning = _kind(data, path, kinds)
    requires_hermes = _requires_hermes(data, path)
    provides, provides_warnings = _provides(data, path)
    isolation = _text(data, "isolation", path)
    if isolation not in ("", "process", "none"):
        raise ManifestError(f"{path}: `isolation` is process or none, not {isolation!r}")
    return Manifest(
        name=name,
        version=_text(data, "version", path),
        description=_text(data, "description", path),
        author=_text(data, "author", path),
        kind=kind,
        requires_env=_env_names(data.get("requires_env"), path),
        requires_hermes=requires_hermes,
        provides=types.MappingProxyType(provides),
        warnings=unknown + kind_warning + provides_warnings,
        isolation=isolation,
    )
