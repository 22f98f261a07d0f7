"""`hermes plugins list` as data and as text: its options, its rows, what it prints.

No click here. The options are declared once (`LIST_OPTIONS`): the click command is built from
them, and `_start` answers the same command line before click is imported; both print
`listing()`, so their output cannot differ.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from .._config.config import Config
    from .._discovery.spec import Discovery, PluginSpec, Skipped

__all__ = ["LIST_OPTIONS", "Flag", "Listing", "active_slots", "listing", "row"]


class Flag(NamedTuple):
    """A flag of `hermes plugins list`: how it is spelled, the keyword it sets, its help."""

    flag: str
    dest: str
    help: str


LIST_OPTIONS = (
    Flag("--json", "as_json", "Print a JSON list (skipped folders and entry points included)."),
)


class Listing(NamedTuple):
    """What `hermes plugins list` prints: `out` on stdout, each of `warnings` as a line on stderr."""

    out: str
    warnings: tuple[str, ...]


def active_slots(found: Discovery, config: Config) -> dict[str, str]:
    """Plugin id -> the slot (`context_engine`, `memory`, ...) whose configured or default name
    it provides, read from ids, kinds and manifests only: nothing is imported. The first enabled
    plugin in load order wins, as the first registration of a name does when plugins load."""
    from .._slots.declarations import BUILTIN_SLOTS

    active: dict[str, str] = {}
    for slot in BUILTIN_SLOTS:
        selected = config.get(slot.config_key) or slot.default
        if not isinstance(selected, str) or not selected.strip():
            continue
        selected = selected.strip()
        for spec in found.plugins:
            names = set(spec.provides.get("engines", ())) | set(spec.provides.get("providers", ()))
            if (selected in names or (spec.kind == slot.name and spec.selected_by(selected))) \
                    and spec.id not in active and spec.enablement(config)[0]:
                active[spec.id] = slot.name
                break
    return active


def row(spec: PluginSpec, config: Config, active: dict[str, str] | None = None) -> dict[str, Any]:
    """One plugin as `--json` shows it (and `hermes plugins info` starts from)."""
    enabled, reason = spec.enablement(config)
    return {
        "id": spec.id,
        "name": spec.name,
        "version": spec.version,
        "source": spec.source,
        "kind": spec.kind,
        "enabled": enabled,
        "active": (active or {}).get(spec.id),
        "description": spec.description,
        "reason": reason,
        "error": spec.error or None,
        "needs_host": spec.host_problem or None,
        "skipped": False,
        "isolated": spec.isolation_in(config) == "process",
    }


def _skipped_row(skipped: Skipped) -> dict[str, Any]:
    """A row for something discovery did not take, so that `--json` says so too."""
    return {
        "id": skipped.name, "name": skipped.name, "version": "", "source": skipped.source, "kind": "",
        "enabled": False, "active": None, "description": "", "reason": "skipped", "error": skipped.reason, "needs_host": None,
        "skipped": True, "origin": skipped.origin, "isolated": False,
    }


def _summary(row: dict[str, Any]) -> str:
    if row["error"] and row["error"] != row["needs_host"]:
        return f"BROKEN: {row['error']}"
    return str(row["needs_host"] or row["description"])


def _enabled(row: dict[str, Any]) -> str:
    shown = "active" if row["active"] else "yes" if row["enabled"] else "no"
    return f"{shown}, isolated" if row["isolated"] and row["enabled"] else shown


def listing(*, as_json: bool = False) -> Listing:
    """Discovery plus config, as `hermes plugins list [--json]` prints it (imports no plugin)."""
    from .._config.file import load_config
    from .._discovery.discover import discover
    from .._paths import hermes_home
    from ._tables import format_json, format_table

    found, config = discover(home=hermes_home()), load_config()
    active = active_slots(found, config)
    rows = [row(spec, config, active) for spec in found.plugins]
    if as_json:
        return Listing(format_json(rows + [_skipped_row(s) for s in found.skipped]), ())
    if not rows:
        out = f"no plugins found (looked in entry points and {hermes_home() / 'plugins'})"
    else:
        out = format_table(
            ["id", "version", "source", "kind", "enabled", "description"],
            [[r["id"], r["version"] or "-", r["source"], r["kind"], _enabled(r), _summary(r)] for r in rows],
        )
    return Listing(out, tuple(f"hermes: warning: {problem}" for problem in found.problems))
