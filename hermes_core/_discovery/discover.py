"""Discovery: find every plugin from its manifest or distribution metadata, importing none.

The listing (`hermes plugins list`) and the runtime (`PluginManager.load`) both call
`discover()`, so whatever the runtime can load, the listing shows; whatever it skips is a
`Skipped` row with the reason, never dropped silently.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .._errors import ManifestError
from .._paths import env_flag, hermes_home
from .._slots.declarations import BUILTIN_SLOTS, SlotDecl
from .manifest import find_manifest, read_manifest, valid_plugin_name
from .spec import ENTRY_POINT_GROUPS, PROJECT_PLUGINS_FLAG, SOURCES, Discovery, PluginSpec, Skipped, bare_module_name

__all__ = ["MODEL_PROVIDERS", "discover"]

# Category folders that are no slot, and the kind their plugins get: Hermes'
# `plugins/model-providers/<name>/` (its providers loader imports each) and
# `plugins/platforms/<name>/` (messaging platforms, `ctx.register_platform`; id `platforms/<name>`).
MODEL_PROVIDERS = "model-providers"
CATEGORY_KINDS = {MODEL_PROVIDERS: "model-provider", "platforms": "platform"}

def _folder_imports(folder: Path, plugin_id: str) -> tuple[str, ...]:
    """The unserved Hermes modules a folder plugin's package imports at module level."""
    from .source_scan import hermes_imports

    return tuple(hermes_imports(folder / "__init__.py", folder, bare_module_name(plugin_id)))


def _folder_spec(folder: Path, source: str, kinds: frozenset[str], category: str | None) -> PluginSpec:
    """The plugin in `folder`: from its manifest; without one, only as a category plugin's error."""
    manifest_path = find_manifest(folder)
    default_name = folder.name
    plugin_id = f"{category}/{folder.name}" if category else default_name

    def spec(**fields: Any) -> PluginSpec:
        return PluginSpec(source=source, path=folder, category=category, **fields)

    category_kind = CATEGORY_KINDS.get(category or "", category)
    if manifest_path is None:
        if category == MODEL_PROVIDERS and (folder / "__init__.py").is_file():  # Hermes imports these as they are
            return spec(id=plugin_id, name=default_name, kind=category_kind, kind_source="category",
                        hermes_imports=_folder_imports(folder, plugin_id))
        return spec(id=plugin_id, name=default_name, kind=category_kind or "standalone", kind_source="category",
                    error=f"{folder}: no plugin.yaml; a folder plugin needs a manifest")
    try:
        manifest = read_manifest(manifest_path, default_name=default_name, kinds=kinds)
        if category and manifest.kind not in ("", "standalone", category_kind):
            raise ManifestError(
                f"{manifest_path}: `kind` is {manifest.kind!r} but the plugin is in the {category!r} category folder"
            )
    except ManifestError as exc:
        return spec(id=plugin_id, name=default_name, kind=category_kind or "standalone",
                    kind_source="category" if category else "default", error=str(exc))
    init = folder / "__init__.py"
    error = None if init.is_file() else f"{folder}: no __init__.py; a folder plugin is a Python package"
    kind, kind_source = _kind(category_kind, manifest.kind, init if error is None else None)
    plugin_id = plugin_id if category else manifest.name
    exclusive = ""
    if kind_source == "source":
        from .source_scan import exclusive_from_source

        exclusive = exclusive_from_source(init, kind)
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
        isolation=manifest.isolation,
        exclusive=exclusive,
    )


def _portable_spec(folder: Path, source: str) -> PluginSpec:
    """A Portable Agent Plugins v1 package: its `plugin.json` only (its skills are read when it loads)."""
    from .._skills.portable import AgentPluginError, read_manifest

    try:
        manifest, notes = read_manifest(folder)
    except AgentPluginError as exc:
        return PluginSpec(id=folder.name, name=folder.name, source=source, path=folder, portable=True,
                          kind="portable", kind_source="manifest", error=f"{folder}/plugin.json: {exc}")
    author = manifest.get("author")
    return PluginSpec(id=manifest["name"], name=manifest["name"], source=source, path=folder, portable=True,
                      kind="portable", kind_source="manifest",
                      version=manifest.get("version", ""), description=manifest.get("description", ""),
                      author=author.get("name", "") if isinstance(author, dict) else "",
                      warnings=tuple(f"Agent Plugin {manifest['name']!r} {note}" for note in notes))


def _kind(category: str | None, declared: str, init: Path | None) -> tuple[str, str]:
    """A plugin's kind and where it comes from: its category folder or its manifest; failing
    those, Hermes' reading of its `__init__.py` (`_plugin_source.kind_from_source`)."""
    if category:
        return category, "category"
    if declared:
        return declared, "manifest"
    from .source_scan import kind_from_source

    guessed = kind_from_source(init)
    return (guessed, "source") if guessed else ("standalone", "default")


def _manifestless_spec(folder: Path, source: str, slots: frozenset[str]) -> PluginSpec | Skipped:
    """A folder without `plugin.yaml`: a plugin when Hermes' memory or context-engine loader would
    take it (its `__init__.py` mentions that contract; id and name are the folder's name), else
    skipped, saying why."""
    from .source_scan import exclusive_from_source, kind_from_source

    init = folder / "__init__.py"
    kind = kind_from_source(init) if init.is_file() else None
    kind = kind if kind in slots else None  # Hermes takes a manifest-less folder only as a memory provider or engine
    if kind is not None and valid_plugin_name(folder.name):
        return PluginSpec(
            id=folder.name, name=folder.name, source=source, kind=kind, kind_source="source", path=folder,
            hermes_imports=_folder_imports(folder, folder.name), exclusive=exclusive_from_source(init, kind),
        )
    if kind is not None:
        why = "its name is not a valid plugin id (rename the folder: letters, digits, '_', '.', '-')"
    else:
        why = (f"{folder.name!r} is not a category (categories: {', '.join(sorted({*slots, *CATEGORY_KINDS}))}), and its "
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
    kinds = frozenset({"standalone", *CATEGORY_KINDS.values()}) | slots
    specs: list[PluginSpec] = []
    skipped: list[Skipped] = []
    for child in children:
        if find_manifest(child) is not None:  # plugin.yaml wins over plugin.json, as in Hermes
            specs.append(_folder_spec(child, source, kinds, None))
        elif (child / "plugin.json").exists() or (child / "plugin.json").is_symlink():
            specs.append(_portable_spec(child, source))
        elif child.name in slots or child.name in CATEGORY_KINDS:
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
    engines as `context_engine/<name>`), hermes' environment's and those of the environments under
    `$HERMES_HOME/venvs` (`hermes plugins install --isolated`, run in a process of their own). A later source overrides an earlier one that uses the same id.
    """
    home = home if home is not None else hermes_home()
    cwd = cwd if cwd is not None else Path.cwd()
    if project_plugins is None:
        project_plugins = env_flag(PROJECT_PLUGINS_FLAG)
    slot_names = frozenset(slot.name for slot in slots)
    from .entry_points import entry_point_specs

    builtin, external, skipped = entry_point_specs(ENTRY_POINT_GROUPS)
    for site in sorted((home / "venvs").glob("*/lib/python*/site-packages")):  # `plugins install --isolated`
        _, theirs, their_skipped = entry_point_specs(ENTRY_POINT_GROUPS, site)
        python = str(site.parents[2] / "bin" / "python")
        external += [spec._replace(python=python) for spec in theirs]
        skipped += their_skipped
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
