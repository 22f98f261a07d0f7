"""Discovery: find every plugin from its manifest or distribution metadata, importing none.

The listing (`hermes plugins list`) and the runtime (`PluginManager.load`) both call
`discover()`, so whatever the runtime can load, the listing shows.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, NamedTuple

from . import config_keys as keys
from ._config import Config
from ._errors import ManifestError
from ._manifest import _EMPTY, find_manifest, read_manifest, valid_plugin_name
from ._paths import env_flag, hermes_home
from ._slots_decl import BUILTIN_SLOTS, SlotDecl

__all__ = [
    "CONTEXT_ENGINE_ENTRY_POINT_GROUP", "ENTRY_POINT_GROUP", "MEMORY_ENTRY_POINT_GROUP", "SOURCES", "Discovery",
    "PluginSpec", "discover",
]

ENTRY_POINT_GROUP = "hermes_agent.plugins"
MEMORY_ENTRY_POINT_GROUP = "hermes_agent.memory_providers"
CONTEXT_ENGINE_ENTRY_POINT_GROUP = "hermes_agent.context_engines"
# Entry-point groups, and the slot category their plugins belong to (ids become `<category>/<name>`).
ENTRY_POINT_GROUPS: tuple[tuple[str, str | None], ...] = (
    (ENTRY_POINT_GROUP, None),
    (CONTEXT_ENGINE_ENTRY_POINT_GROUP, "context_engine"),
    (MEMORY_ENTRY_POINT_GROUP, "memory"),
)
SOURCES = ("builtin", "user", "project", "entrypoint")
BUILTIN_DISTRIBUTION = "hermes-core"
PROJECT_PLUGINS_FLAG = "HERMES_ENABLE_PROJECT_PLUGINS"


class PluginSpec(NamedTuple):
    """A discovered plugin: what it is and where it comes from, known without importing it.

    `error` is set when the plugin cannot be loaded as found (a broken manifest, a folder
    without `__init__.py`); `shadows` names the lower-precedence plugins with the same id
    that this one hides.
    """

    id: str
    name: str
    source: str
    kind: str = "standalone"
    version: str = ""
    description: str = ""
    author: str = ""
    path: Path | None = None
    entry_point: str | None = None
    distribution: str | None = None
    category: str | None = None
    requires_env: tuple[str, ...] = ()
    requires_hermes: str = ""
    provides: Mapping[str, tuple[str, ...]] = _EMPTY
    warnings: tuple[str, ...] = ()
    error: str | None = None
    shadows: tuple[str, ...] = ()

    @property
    def origin(self) -> str:
        """Where it was found: a folder path or `entry point NAME = VALUE (dist)`."""
        if self.path is not None:
            return str(self.path)
        dist = f" ({self.distribution})" if self.distribution else ""
        return f"entry point {self.name} = {self.entry_point}{dist}"

    def incompatibility(self, version: str) -> str | None:
        """Why this plugin cannot run on hermes-core `version`, or None when it can."""
        if not self.requires_hermes:
            return None
        from packaging.specifiers import SpecifierSet

        if SpecifierSet(self.requires_hermes).contains(version, prereleases=True):
            return None
        return f"requires hermes-core {self.requires_hermes}, but {version} is installed"

    def missing_env(self, environ: Mapping[str, str] | None = None) -> list[str]:
        """The `requires_env` variables that are unset or empty."""
        environ = os.environ if environ is None else environ
        return [name for name in self.requires_env if not environ.get(name, "").strip()]

    def enablement(self, config: Config, slots: Iterable[SlotDecl] = BUILTIN_SLOTS) -> tuple[bool, str]:
        """Whether the operator's config loads this plugin, and the reason in a few words.

        `plugins.disabled` always wins; built-ins load unless disabled; a plugin whose kind
        is a slot loads when that slot selects it; everything else is opt-in through
        `plugins.enabled` (by id or manifest name).
        """
        names = {self.id, self.name}
        disabled: list[str] = config.read(keys.PLUGINS_DISABLED)
        if names.intersection(disabled):
            return False, "disabled in plugins.disabled"
        if self.source == "builtin":
            return True, "built-in"
        for slot in slots:
            if slot.name == self.kind:
                selected = config.get(slot.config_key)
                if isinstance(selected, str) and selected.strip() in names | {self.id.rpartition("/")[2]}:
                    return True, f"selected by {slot.config_key}"
        enabled: list[str] = config.read(keys.PLUGINS_ENABLED)
        if names.intersection(enabled):
            return True, "enabled in plugins.enabled"
        return False, "not enabled (add it to plugins.enabled)"


class Discovery(NamedTuple):
    """The result of one discovery pass: one spec per plugin id, in load order."""

    plugins: tuple[PluginSpec, ...]
    problems: tuple[str, ...] = ()

    def get(self, plugin_id: str) -> PluginSpec | None:
        """The plugin with this id (or, failing that, this manifest name)."""
        for spec in self.plugins:
            if spec.id == plugin_id:
                return spec
        for spec in self.plugins:
            if spec.name == plugin_id:
                return spec
        return None

    @property
    def ids(self) -> list[str]:
        return [spec.id for spec in self.plugins]


def _folder_spec(folder: Path, source: str, kinds: frozenset[str], category: str | None) -> PluginSpec:
    manifest_path = find_manifest(folder)
    default_name = folder.name
    plugin_id = f"{category}/{folder.name}" if category else default_name

    def spec(**fields: Any) -> PluginSpec:
        return PluginSpec(source=source, path=folder, category=category, **fields)

    if manifest_path is None:
        return spec(id=plugin_id, name=default_name, kind=category or "standalone",
                    error=f"{folder}: no plugin.yaml; a folder plugin needs a manifest")
    try:
        manifest = read_manifest(manifest_path, default_name=default_name, kinds=kinds)
        if category and manifest.kind not in ("standalone", category):
            raise ManifestError(
                f"{manifest_path}: `kind` is {manifest.kind!r} but the plugin is in the {category!r} category folder"
            )
    except ManifestError as exc:
        return spec(id=plugin_id, name=default_name, kind=category or "standalone", error=str(exc))
    error = None
    if not (folder / "__init__.py").is_file():
        error = f"{folder}: no __init__.py; a folder plugin is a Python package"
    return spec(
        id=plugin_id if category else manifest.name,
        name=manifest.name,
        kind=category or manifest.kind,
        version=manifest.version,
        description=manifest.description,
        author=manifest.author,
        requires_env=manifest.requires_env,
        requires_hermes=manifest.requires_hermes,
        provides=manifest.provides,
        warnings=manifest.warnings,
        error=error,
    )


def _scan_root(root: Path, source: str, slots: frozenset[str]) -> tuple[list[PluginSpec], list[str]]:
    """The folder plugins under one root: flat `<dir>/plugin.yaml` and `<category>/<dir>/plugin.yaml`."""
    try:
        children = sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith((".", "_")))
    except FileNotFoundError:
        return [], []
    except OSError as exc:
        return [], [f"{root}: cannot be read: {exc}"]
    kinds = frozenset({"standalone"}) | slots
    specs: list[PluginSpec] = []
    problems: list[str] = []
    for child in children:
        if find_manifest(child) is not None:
            specs.append(_folder_spec(child, source, kinds, None))
        elif child.name in slots:
            try:
                subs = sorted(p for p in child.iterdir() if p.is_dir() and not p.name.startswith((".", "_")))
            except OSError as exc:
                problems.append(f"{child}: cannot be read: {exc}")
                continue
            specs.extend(_folder_spec(sub, source, kinds, child.name) for sub in subs)
        else:
            problems.append(
                f"{child}: ignored: no plugin.yaml, and {child.name!r} is not a category "
                f"(categories: {', '.join(sorted(slots))})"
            )
    return specs, problems


_HEADER = re.compile(r"^(Name|Version|Summary|Author|Author-email):[ \t]*(.*)$")


def _dist_headers(dist: Any) -> dict[str, str]:
    """Name, Version, Summary and Author of a distribution, read from the METADATA headers only."""
    headers: dict[str, str] = {}
    text = dist.read_text("METADATA") or dist.read_text("PKG-INFO") or ""
    for line in text.splitlines():
        if not line:
            break
        match = _HEADER.match(line)
        if match and match.group(1) not in headers:
            headers[match.group(1)] = match.group(2).strip()
    return headers


def _builtin_description(name: str) -> str:
    from hermes_plugins_builtin import DESCRIPTIONS

    return DESCRIPTIONS.get(name, "")


def _normalise(dist_name: str) -> str:
    return re.sub(r"[-_.]+", "-", dist_name).lower()


def _entry_point_specs() -> tuple[list[PluginSpec], list[PluginSpec], list[str]]:
    from importlib.metadata import entry_points

    builtin: list[PluginSpec] = []
    external: list[PluginSpec] = []
    problems: list[str] = []
    seen: dict[tuple[bool, str], str] = {}
    every = entry_points()  # one scan of the installed distributions, for all three groups
    for group, category in ENTRY_POINT_GROUPS:
        for ep in every.select(group=group):
            headers = _dist_headers(ep.dist) if ep.dist is not None else {}
            dist_name = headers.get("Name", "")
            label = f"{dist_name or 'unknown distribution'}"
            if not valid_plugin_name(ep.name):
                problems.append(f"entry point {ep.name!r} ({group}) from {label}: not a valid plugin id; ignored")
                continue
            plugin_id = f"{category}/{ep.name}" if category else ep.name
            builtin_dist = _normalise(dist_name) == BUILTIN_DISTRIBUTION
            key = (builtin_dist, plugin_id)
            if key in seen:
                problems.append(
                    f"entry point {ep.name!r} ({group}) is provided by both {seen[key]} and {label}; using {seen[key]}"
                )
                continue
            seen[key] = label
            spec = PluginSpec(
                id=plugin_id,
                name=ep.name,
                source="builtin" if builtin_dist else "entrypoint",
                kind=category or "standalone",
                version=headers.get("Version", ""),
                description=_builtin_description(plugin_id) if builtin_dist else headers.get("Summary", ""),
                author=headers.get("Author", "") or headers.get("Author-email", ""),
                entry_point=ep.value,
                distribution=dist_name or None,
                category=category,
            )
            (builtin if builtin_dist else external).append(spec)
    return builtin, external, problems


def discover(
    *,
    home: Path | None = None,
    cwd: Path | None = None,
    slots: Iterable[SlotDecl] = BUILTIN_SLOTS,
    project_plugins: bool | None = None,
) -> Discovery:
    """Find every plugin in the four sources, in precedence order; import none of them.

    Sources: built-in entry points, `$HERMES_HOME/plugins`, `./.hermes/plugins` (only when
    `HERMES_ENABLE_PROJECT_PLUGINS` is truthy), third-party entry points in the groups
    `hermes_agent.plugins`, `hermes_agent.context_engines` (ids `context_engine/<name>`) and
    `hermes_agent.memory_providers` (ids `memory/<name>`). A later source overrides an earlier one that uses the same id.
    """
    home = home if home is not None else hermes_home()
    cwd = cwd if cwd is not None else Path.cwd()
    if project_plugins is None:
        project_plugins = env_flag(PROJECT_PLUGINS_FLAG)
    slot_names = frozenset(slot.name for slot in slots)
    builtin, external, problems = _entry_point_specs()
    user, user_problems = _scan_root(home / "plugins", "user", slot_names)
    project: list[PluginSpec] = []
    project_problems: list[str] = []
    if project_plugins:
        project, project_problems = _scan_root(cwd / ".hermes" / "plugins", "project", slot_names)
    problems += user_problems + project_problems
    chosen: dict[str, PluginSpec] = {}
    for group in (builtin, user, project, external):
        for spec in sorted(group, key=lambda s: s.id):
            previous = chosen.get(spec.id)
            if previous is not None:
                if previous.source == spec.source:
                    problems.append(
                        f"plugin id {spec.id!r} is used twice in the {spec.source} source "
                        f"({previous.origin} and {spec.origin}); using the first"
                    )
                    continue
                spec = spec._replace(shadows=(*previous.shadows, f"{previous.source}: {previous.origin}"))
            chosen[spec.id] = spec
    ordered = sorted(chosen.values(), key=lambda s: (SOURCES.index(s.source), s.id))
    return Discovery(tuple(ordered), tuple(problems))
