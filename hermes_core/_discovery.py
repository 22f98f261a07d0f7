"""Discovery: find every plugin from its manifest or distribution metadata, importing none.

The listing (`hermes plugins list`) and the runtime (`PluginManager.load`) both call
`discover()`, so whatever the runtime can load, the listing shows; whatever it skips is a
`Skipped` row with the reason, never dropped silently.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, NamedTuple

from . import config_keys as keys
from ._config.config import Config
from ._errors import ManifestError
from ._manifest import _EMPTY, find_manifest, read_manifest, valid_plugin_name
from ._paths import env_flag, hermes_home
from ._slots.declarations import BUILTIN_SLOTS, SlotDecl

__all__ = [
    "CONTEXT_ENGINE_ENTRY_POINT_GROUP", "ENTRY_POINT_GROUP", "ENTRY_POINT_GROUPS", "MEMORY_ENTRY_POINT_GROUP", "SOURCES",
    "Discovery", "PluginSpec", "Skipped", "discover",
]

ENTRY_POINT_GROUP = "hermes_agent.plugins"
MEMORY_ENTRY_POINT_GROUP = "hermes_agent.memory_providers"
CONTEXT_ENGINE_ENTRY_POINT_GROUP = "hermes_agent.context_engines"
# Entry-point groups in the order they are read, and the slot category their plugins belong to
# (ids become `<category>/<name>`): Hermes' two groups and hermes-core's engine group, then the
# group names published Hermes plugins use as well (`hermes.memory_provider`: hermes-llmwiki).
ENTRY_POINT_GROUPS: tuple[tuple[str, str | None], ...] = (
    (ENTRY_POINT_GROUP, None),
    (CONTEXT_ENGINE_ENTRY_POINT_GROUP, "context_engine"),
    (MEMORY_ENTRY_POINT_GROUP, "memory"),
    ("hermes.plugins", None),
    ("hermes.memory_provider", "memory"),
    ("hermes.memory_providers", "memory"),
)
SOURCES = ("builtin", "user", "project", "entrypoint")
BUILTIN_DISTRIBUTION = "hermes-core"
PROJECT_PLUGINS_FLAG = "HERMES_ENABLE_PROJECT_PLUGINS"
# Where a plugin's kind comes from; only "source" (Hermes' text rule) is a guess.
KIND_SOURCES = ("default", "manifest", "category", "group", "source")


class Skipped(NamedTuple):
    """Something discovery found and did not take as a plugin: its name (a folder or entry-point
    name), its source, where it is, and why it was skipped (one line)."""

    name: str
    source: str
    origin: str
    reason: str


class PluginSpec(NamedTuple):
    """A discovered plugin: what it is and where it comes from, known without importing it.

    `error` is set when the plugin cannot be loaded as found (a broken manifest, a folder
    without `__init__.py`); `needs_host` when it needs the Hermes Agent host before anything is
    imported (its distribution requires `hermes-agent`); `hermes_imports` are the Hermes modules
    hermes-core does not serve that its module-level code imports (what its import will fail on).
    `kind_source` says where `kind` comes from (`KIND_SOURCES`). `shadows` names the
    lower-precedence plugins with the same id that this one hides.
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
    kind_source: str = "default"
    needs_host: str = ""
    hermes_imports: tuple[str, ...] = ()

    @property
    def origin(self) -> str:
        """Where it was found: a folder path or `entry point NAME = VALUE (dist)`."""
        if self.path is not None:
            return str(self.path)
        dist = f" ({self.distribution})" if self.distribution else ""
        return f"entry point {self.name} = {self.entry_point}{dist}"

    @property
    def kind_guessed(self) -> bool:
        """Whether `kind` is Hermes' reading of the source (a hint), not declared by the plugin."""
        return self.kind_source == "source"

    @property
    def host_problem(self) -> str:
        """"needs the Hermes Agent host (...)" when that is known before the plugin is imported."""
        if self.needs_host:
            return self.needs_host
        if self.hermes_imports:
            from ._hermes.host import host_line

            return host_line(f"imports {', '.join(self.hermes_imports)}")
        return ""

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
        is a slot loads when that slot selects it (an entry point in `hermes_agent.plugins` is
        standalone whatever its source says, so it is opt-in, as in Hermes); everything else is
        opt-in through `plugins.enabled` (by id or manifest name).
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
    """The result of one discovery pass: one spec per plugin id, in load order; `skipped` is
    what was found and not taken, and `problems` their reasons."""

    plugins: tuple[PluginSpec, ...]
    problems: tuple[str, ...] = ()
    skipped: tuple[Skipped, ...] = ()

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


def _folder_imports(folder: Path, plugin_id: str) -> tuple[str, ...]:
    """The unserved Hermes modules a folder plugin's package imports at module level."""
    from ._loading.importer import bare_module_name
    from ._plugin_source import hermes_imports

    return tuple(hermes_imports(folder / "__init__.py", folder, bare_module_name(plugin_id)))


def _folder_spec(folder: Path, source: str, kinds: frozenset[str], category: str | None) -> PluginSpec:
    """The plugin in `folder`: from its manifest; without one, only as a category plugin's error."""
    manifest_path = find_manifest(folder)
    default_name = folder.name
    plugin_id = f"{category}/{folder.name}" if category else default_name

    def spec(**fields: Any) -> PluginSpec:
        return PluginSpec(source=source, path=folder, category=category, **fields)

    if manifest_path is None:
        return spec(id=plugin_id, name=default_name, kind=category or "standalone", kind_source="category",
                    error=f"{folder}: no plugin.yaml; a folder plugin needs a manifest")
    try:
        manifest = read_manifest(manifest_path, default_name=default_name, kinds=kinds)
        if category and manifest.kind not in ("", "standalone", category):
            raise ManifestError(
                f"{manifest_path}: `kind` is {manifest.kind!r} but the plugin is in the {category!r} category folder"
            )
    except ManifestError as exc:
        return spec(id=plugin_id, name=default_name, kind=category or "standalone",
                    kind_source="category" if category else "default", error=str(exc))
    init = folder / "__init__.py"
    error = None if init.is_file() else f"{folder}: no __init__.py; a folder plugin is a Python package"
    kind, kind_source = _kind(category, manifest.kind, init if error is None else None)
    plugin_id = plugin_id if category else manifest.name
    return spec(
        id=plugin_id,
        name=manifest.name,
        kind=kind,
        kind_source=kind_source,
        version=manifest.version,
        description=manifest.description,
        author=manifest.author,
        requires_env=manifest.requires_env,
        requires_hermes=manifest.requires_hermes,
        provides=manifest.provides,
        warnings=manifest.warnings,
        error=error,
        hermes_imports=() if error else _folder_imports(folder, plugin_id),
    )


def _kind(category: str | None, declared: str, init: Path | None) -> tuple[str, str]:
    """A plugin's kind and where it comes from: its category folder or its manifest; failing
    those, Hermes' reading of its `__init__.py` (`_plugin_source.kind_from_source`)."""
    if category:
        return category, "category"
    if declared:
        return declared, "manifest"
    from ._plugin_source import kind_from_source

    guessed = kind_from_source(init)
    return (guessed, "source") if guessed else ("standalone", "default")


def _manifestless_spec(folder: Path, source: str, slots: frozenset[str]) -> PluginSpec | Skipped:
    """A folder without `plugin.yaml`: a plugin when Hermes' memory or context-engine loader would
    take it (its `__init__.py` mentions that contract; id and name are the folder's name), else
    skipped, saying why."""
    from ._plugin_source import kind_from_source

    init = folder / "__init__.py"
    kind = kind_from_source(init) if init.is_file() else None
    if kind is not None and valid_plugin_name(folder.name):
        return PluginSpec(
            id=folder.name, name=folder.name, source=source, kind=kind, kind_source="source", path=folder,
            hermes_imports=_folder_imports(folder, folder.name),
        )
    if kind is not None:
        why = "its name is not a valid plugin id (rename the folder: letters, digits, '_', '.', '-')"
    else:
        why = (f"{folder.name!r} is not a category (categories: {', '.join(sorted(slots))}), and its "
               "__init__.py does not register a memory provider or a context engine")
    return Skipped(folder.name, source, str(folder), f"{folder}: ignored: no plugin.yaml, and {why}")


def _children(root: Path) -> list[Path]:
    return sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith((".", "_")))


def _scan_root(root: Path, source: str, slots: frozenset[str]) -> tuple[list[PluginSpec], list[Skipped]]:
    """The folder plugins under one root: flat `<dir>/plugin.yaml`, `<category>/<dir>/plugin.yaml`,
    and the manifest-less memory providers and context engines Hermes' own loaders find."""
    try:
        children = _children(root)
    except FileNotFoundError:
        return [], []
    except OSError as exc:
        return [], [Skipped(root.name, source, str(root), f"{root}: cannot be read: {exc}")]
    kinds = frozenset({"standalone"}) | slots
    specs: list[PluginSpec] = []
    skipped: list[Skipped] = []
    for child in children:
        if find_manifest(child) is not None:
            specs.append(_folder_spec(child, source, kinds, None))
        elif child.name in slots:
            try:
                subs = _children(child)
            except OSError as exc:
                skipped.append(Skipped(child.name, source, str(child), f"{child}: cannot be read: {exc}"))
                continue
            specs.extend(_folder_spec(sub, source, kinds, child.name) for sub in subs)
        else:
            found = _manifestless_spec(child, source, slots)
            if isinstance(found, Skipped):
                skipped.append(found)
            else:
                specs.append(found)
    return specs, skipped


def discover(
    *,
    home: Path | None = None,
    cwd: Path | None = None,
    slots: Iterable[SlotDecl] = BUILTIN_SLOTS,
    project_plugins: bool | None = None,
) -> Discovery:
    """Find every plugin in the four sources, in precedence order; import none of them.

    Sources: built-in entry points, `$HERMES_HOME/plugins`, `./.hermes/plugins` (only when
    `HERMES_ENABLE_PROJECT_PLUGINS` is truthy), third-party entry points in the groups of
    `ENTRY_POINT_GROUPS` (`hermes_agent.plugins`; memory providers as `memory/<name>`, context
    engines as `context_engine/<name>`). A later source overrides an earlier one that uses the same id.
    """
    home = home if home is not None else hermes_home()
    cwd = cwd if cwd is not None else Path.cwd()
    if project_plugins is None:
        project_plugins = env_flag(PROJECT_PLUGINS_FLAG)
    slot_names = frozenset(slot.name for slot in slots)
    from ._entry_points import entry_point_specs

    builtin, external, skipped = entry_point_specs(ENTRY_POINT_GROUPS)
    user, user_skipped = _scan_root(home / "plugins", "user", slot_names)
    project: list[PluginSpec] = []
    project_skipped: list[Skipped] = []
    if project_plugins:
        project, project_skipped = _scan_root(cwd / ".hermes" / "plugins", "project", slot_names)
    skipped += user_skipped + project_skipped
    chosen: dict[str, PluginSpec] = {}
    for group in (builtin, user, project, external):
        for spec in sorted(group, key=lambda s: s.id):
            previous = chosen.get(spec.id)
            if previous is not None:
                if previous.source == spec.source:
                    skipped.append(Skipped(spec.name, spec.source, spec.origin, (
                        f"plugin id {spec.id!r} is used twice in the {spec.source} source "
                        f"({previous.origin} and {spec.origin}); using the first"
                    )))
                    continue
                spec = spec._replace(shadows=(*previous.shadows, f"{previous.source}: {previous.origin}"))
            chosen[spec.id] = spec
    ordered = sorted(chosen.values(), key=lambda s: (SOURCES.index(s.source), s.id))
    return Discovery(tuple(ordered), tuple(s.reason for s in skipped), tuple(skipped))
