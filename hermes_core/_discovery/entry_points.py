"""The plugins installed distributions declare through entry points, found from their metadata.

Nothing is imported: the distribution's METADATA headers give the version, summary, author and
`Requires-Dist`, and the module an entry point names is read from disk (`source_scan`) for
its module-level Hermes imports. The kind is the group's: a plugin in `hermes_agent.plugins` is
standalone (opt-in) whatever slot its source mentions; one whose source builds a Hermes
`ProviderProfile` is listed as a `model-provider` (opt-in too).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from .manifest import valid_plugin_name
from .source_scan import hermes_imports, kind_from_source, module_origin
from .spec import BUILTIN_DISTRIBUTION, PluginSpec, Skipped

__all__ = ["entry_point_specs"]

MODEL_PROVIDER = "model-provider"


_HEADER = re.compile(r"^(Name|Version|Summary|Author|Author-email|Requires-Dist):[ \t]*(.*)$")


def _dist_headers(dist: Any) -> dict[str, list[str]]:
    """Name, Version, Summary, Author and Requires-Dist of a distribution, read from the METADATA
    headers only (each header with all its values, in order)."""
    headers: dict[str, list[str]] = {}
    text = dist.read_text("METADATA") or dist.read_text("PKG-INFO") or ""
    for line in text.splitlines():
        if not line:
            break
        match = _HEADER.match(line)
        if match:
            headers.setdefault(match.group(1), []).append(match.group(2).strip())
    return headers


def _builtin_description(name: str) -> str:
    from hermes_plugins_builtin import DESCRIPTIONS

    return DESCRIPTIONS.get(name, "")


def _normalise(dist_name: str) -> str:
    return re.sub(r"[-_.]+", "-", dist_name).lower()


def _entry_point_source(value: str, dist: Any) -> tuple[Path | None, tuple[str, ...]]:
    """The source file of the module an entry point names, and the unserved Hermes modules it
    imports at module level (read from disk, where its distribution is installed, not imported)."""
    module = value.partition(":")[0].strip()
    near = None
    if dist is not None:
        try:
            near = str(dist.locate_file(""))
        except (AttributeError, NotImplementedError, TypeError):
            near = None
    found = module_origin(module, near)
    if found is None:
        return None, ()
    origin, root = found
    return origin, tuple(hermes_imports(origin, root, module.partition(".")[0]))


def _entry_point_spec(ep: Any, headers: dict[str, list[str]], plugin_id: str, category: str | None,
                      builtin: bool) -> PluginSpec:
    """The plugin entry point `ep` declares, from its distribution's `headers`: a built-in one
    (hermes-core's own) or a third-party one, whose module-level Hermes imports say whether it
    needs the Hermes Agent host. A requirement on the `hermes-agent` distribution says nothing of
    the kind: hermes-core is the plugin API such a plugin asks for."""
    dist_name = headers.get("Name", [""])[0]
    origin, imports = (None, ()) if builtin else _entry_point_source(ep.value, ep.dist)
    # A model provider says so in its source (a ProviderProfile); any other kind the group says.
    provider = not category and kind_from_source(origin) == MODEL_PROVIDER
    return PluginSpec(
        id=plugin_id,
        name=ep.name,
        source="builtin" if builtin else "entrypoint",
        kind=MODEL_PROVIDER if provider else category or "standalone",  # a slot kind guessed here would
        kind_source="source" if provider else "group" if category else "default",  # load it on selection alone
        version=headers.get("Version", [""])[0],
        description=_builtin_description(plugin_id) if builtin else headers.get("Summary", [""])[0],
        author=(headers.get("Author") or headers.get("Author-email") or [""])[0],
        entry_point=ep.value,
        distribution=dist_name or None,
        category=category,
        hermes_imports=imports,
    )


def entry_point_specs(
    groups: tuple[tuple[str, str | None], ...], site: Path | None = None,
) -> tuple[list[PluginSpec], list[PluginSpec], list[Skipped]]:
    """The built-in and the third-party plugins of the entry-point `groups` (each with the
    category its plugins belong to), and the entry points skipped, with why: a name that is no
    plugin id, or the same plugin id from two distributions (the first stays). With `site`, the
    distributions installed in that folder alone (an isolated plugin's environment)."""
    from importlib.metadata import EntryPoints, distributions, entry_points

    builtin: list[PluginSpec] = []
    external: list[PluginSpec] = []
    skipped: list[Skipped] = []
    seen: dict[tuple[bool, str], tuple[str, str]] = {}
    every = entry_points() if site is None else \
        EntryPoints(ep for dist in distributions(path=[str(site)]) for ep in dist.entry_points)
    for group, category in groups:
        for ep in every.select(group=group):
            headers = _dist_headers(ep.dist) if ep.dist is not None else {}
            label = headers.get("Name", [""])[0] or "unknown distribution"
            origin = f"entry point {ep.name} = {ep.value} ({group}, {label})"
            if not valid_plugin_name(ep.name):
                reason = f"entry point {ep.name!r} ({group}) from {label}: not a valid plugin id; ignored"
                skipped.append(Skipped(ep.name, "entrypoint", origin, reason))
                continue
            plugin_id = f"{category}/{ep.name}" if category else ep.name
            is_builtin = _normalise(headers.get("Name", [""])[0]) == BUILTIN_DISTRIBUTION
            key = (is_builtin, plugin_id)
            if key in seen:
                if seen[key] != (label, ep.value):  # the same entry point in two equivalent groups is one
                    reason = (f"entry point {ep.name!r} ({group}) is provided by both {seen[key][0]} and {label}; "
                              f"using {seen[key][0]}")
                    skipped.append(Skipped(ep.name, "entrypoint", origin, reason))
                continue
            seen[key] = (label, ep.value)
            (builtin if is_builtin else external).append(_entry_point_spec(ep, headers, plugin_id, category, is_builtin))
    return builtin, external, skipped
