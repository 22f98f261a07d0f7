"""What discovery finds: a `PluginSpec` per plugin (known without importing it), a `Skipped` row for
what it did not take, the `Discovery` of one pass; the entry-point groups and sources read, and
the module name a folder plugin is imported as."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import NamedTuple

from .. import config_keys as keys
from .._config.config import Config
from .._slots.declarations import BUILTIN_SLOTS, SlotDecl
from .manifest import EMPTY

__all__ = [
    "BUILTIN_DISTRIBUTION", "CONTEXT_ENGINE_ENTRY_POINT_GROUP", "ENTRY_POINT_GROUP", "ENTRY_POINT_GROUPS",
    "KIND_SOURCES", "MEMORY_ENTRY_POINT_GROUP", "NAMESPACE", "PROJECT_PLUGINS_FLAG", "SOURCES", "Discovery",
    "PluginSpec", "Skipped", "bare_module_name",
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
    without `__init__.py`); `hermes_imports` are the Hermes modules
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
    provides: Mapping[str, tuple[str, ...]] = EMPTY
    warnings: tuple[str, ...] = ()
    error: str | None = None
    shadows: tuple[str, ...] = ()
    kind_source: str = "default"
    hermes_imports: tuple[str, ...] = ()
    isolation: str = ""  # the manifest's hint (plugins.entries.<id>.isolation wins)
    python: str = ""  # the interpreter of the environment it is installed in, when not hermes' own
    portable: bool = False  # a Portable Agent Plugins v1 package (plugin.json): no Python, its skills loaded
    # the slot of a folder plugin Hermes reads as `exclusive` (`source_scan.exclusive_from_source`): loaded
    # only when that slot selects it, never through `plugins.enabled`; "" for any other plugin
    exclusive: str = ""

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
    def selection_name(self) -> str:
        """The name its slot selects it by without importing it: a folder plugin's folder name (as
        Hermes' memory loader finds `plugins/<name>`), else the last part of its id."""
        return self.path.name if self.path is not None else self.id.rpartition("/")[2]

    def selecting_setting(self, slots: Iterable[SlotDecl] = BUILTIN_SLOTS) -> str:
        """The config line that loads an exclusive plugin (`memory.provider: NAME`), "" for any other."""
        key = next((slot.config_key for slot in slots if slot.name == self.exclusive), None)
        return f"{key}: {self.selection_name}" if key else ""

    def selected_by(self, name: str) -> bool:
        """Whether a slot setting of `name` names this plugin: its id, manifest name, the last
        part of its id, or its folder's name."""
        return name in (self.id, self.name, self.id.rpartition("/")[2], self.selection_name)

    @property
    def host_problem(self) -> str:
        """"needs the Hermes Agent host (...)" when that is known before the plugin is imported."""
        if self.hermes_imports:
            from .._hermes.host import host_line

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

    def isolation_in(self, config: Config) -> str:
        """Where the plugin runs: `process` (a child process of its own) or `none`, as
        `plugins.entries.<id>.isolation` says when the operator set it, else as its manifest hints.
        A plugin installed in an environment of its own (`hermes plugins install --isolated`) runs there."""
        if self.python:
            return "process"
        if "isolation" in config.section("plugins", "entries", self.id):
            return config.read(keys.PLUGIN_ISOLATION, self.id)
        return self.isolation or "none"

    def enablement(self, config: Config, slots: Iterable[SlotDecl] = BUILTIN_SLOTS) -> tuple[bool, str]:
        """Whether the operator's config loads this plugin, and the reason in a few words.

        `plugins.disabled` always wins; built-ins load unless disabled; a plugin whose kind
        is a slot loads when that slot selects it (an entry point in `hermes_agent.plugins` is
        standalone whatever its source says, so it is opt-in, as in Hermes); one Hermes reads as
        `exclusive` is not loaded through `plugins.enabled` while its slot selects no plugin's provider
        (unset, or the default), as Hermes' general manager never loads it (when the slot names some
        provider, an enabled one loads: that may be its provider's own name, known once it is loaded);
        everything else is opt-in through `plugins.enabled` (by id or manifest name).
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
                if isinstance(selected, str) and self.selected_by(selected.strip()):
                    return True, f"selected by {slot.config_key}"
                if self.exclusive and (not isinstance(selected, str) or selected.strip() in ("", slot.default)):
                    return False, (f"an exclusive {slot.name} provider (as Hermes reads its source): loaded only "
                                   f"when {slot.config_key} selects it ({self.selecting_setting(slots)})")
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

    def standing_by(self, config: Config) -> list[PluginSpec]:
        """The plugins in `plugins.enabled` (and not disabled) that are Hermes' `exclusive` and not loaded
        by `config` (`PluginSpec.enablement`): what `hermes plugins doctor` shows waiting to be selected."""
        enabled: list[str] = config.read(keys.PLUGINS_ENABLED)
        disabled: list[str] = config.read(keys.PLUGINS_DISABLED)
        return [spec for spec in self.plugins if spec.exclusive and {spec.id, spec.name} & set(enabled)
                and not {spec.id, spec.name} & set(disabled) and not spec.enablement(config)[0]]

NAMESPACE = "hermes_plugins"


def bare_module_name(plugin_id: str) -> str:
    """`hermes_plugins.<slug>` for a plugin id, as Hermes names it."""
    return f"{NAMESPACE}." + re.sub(r"\W", "_", plugin_id.replace("/", "__"), flags=re.ASCII)
