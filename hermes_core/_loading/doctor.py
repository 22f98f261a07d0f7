"""`hermes plugins doctor` as data: per-plugin status, the active slots, and problems."""

from __future__ import annotations

import functools
from collections.abc import Collection, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from .._config.config import Config
from .._discovery.spec import PluginSpec
from .._errors import HermesError
from .._slots.registry import SlotRegistry
from .record import PluginRecord

if TYPE_CHECKING:
    from .loader import Loader

__all__ = ["DoctorReport", "build_report", "loader_report"]


@attrs.frozen
class DoctorReport:
    """`hermes plugins doctor` as data: per-plugin status, active slots, and problems."""

    plugins: list[dict[str, Any]]
    slots: dict[str, str | None]
    problems: list[str]
    warnings: list[str]

    @property
    def ok(self) -> bool:
        """No problem, and every enabled plugin loaded (none failed, none incompatible)."""
        return not self.problems and not self.broken()

    def broken(self) -> dict[str, list[str]]:
        """The ids of the plugins that did not load, by status (`failed`, `incompatible`)."""
        found: dict[str, list[str]] = {}
        for row in self.plugins:
            if row["status"] in ("failed", "incompatible"):
                found.setdefault(row["status"], []).append(row["id"])
        return found

    def verdict(self) -> str:
        """The report's last line: what is wrong (so the exit code is explained), or that all is well."""
        from .._quote import clip

        wrong = [f"{len(ids)} plugin(s) {status}: {', '.join(clip(i, 60) for i in ids)}"
                 for status, ids in self.broken().items()]
        if self.problems:
            wrong.append(f"{len(self.problems)} problem(s)")
        if wrong:
            return f"not ok: {'; '.join(wrong)}"
        loaded = sum(1 for row in self.plugins if row["status"] == "ok")
        return f"ok: {loaded} plugin(s) loaded, no problems"

    def to_dict(self) -> dict[str, Any]:
        return attrs.asdict(self)


@functools.cache
def _lifecycle() -> frozenset[str]:
    from ..hookspecs import LIFECYCLE_HOOKS

    return frozenset(LIFECYCLE_HOOKS)


def lifecycle_hooks(names: Iterable[str]) -> frozenset[str]:
    """`names` as the lifecycle hooks a host says it fires; a name that is no lifecycle hook is a
    `ValueError` (a typo here would hide a real problem)."""
    given = frozenset(names)
    unknown = sorted(given - _lifecycle())
    if unknown:
        raise ValueError(f"not lifecycle hooks: {', '.join(unknown)} (see hermes_core.hookspecs.LIFECYCLE_HOOKS)")
    return given


def _unfired(record: PluginRecord, fired: frozenset[str] | None) -> list[str] | None:
    """The hooks `record` registered that the host never fires (None: the host did not say what it fires)."""
    if fired is None:
        return None
    return [hook for hook in dict.fromkeys(record.registered.get("hooks", ())) if hook not in fired]


def loader_report(loader: Loader, config: Config, known_problems: list[str],
                  fired_hooks: frozenset[str] | None = None) -> DoctorReport:
    """The report on everything `loader` loaded, each lazily loaded plugin imported first (and
    marked so when the host would import it only when first needed), as `hermes plugins doctor`
    shows it."""
    loader.standins.activate_all()
    records = list(loader.records.values())
    lazy = {record.id for record in records if loader.standins.would_defer(record)}
    report = build_report(records, loader.slots, config, known_problems, fired_hooks, loader.home, lazy)
    for spec in loader.standing_by:
        report.plugins.append(standing_by_row(spec))
        report.warnings.append(
            f"plugin {spec.id!r} is in plugins.enabled, but it is an exclusive {spec.exclusive} provider (as Hermes "
            f"reads its source): it is loaded only when selected; set {spec.selecting_setting(loader.slots.declared)}")
    return report


def standing_by_row(spec: PluginSpec) -> dict[str, Any]:
    """The doctor's row for an enabled plugin Hermes reads as `exclusive` that its slot does not select: not
    imported (status `exclusive`), its `registered.providers` the `<slot>:<name>` that selects it, known from
    its folder as Hermes' memory loader knows it."""
    return {"id": spec.id, "status": "exclusive", "error": None,
            "registered": {"providers": [f"{spec.exclusive}:{spec.selection_name}"]}, "import_ms": 0.0,
            "hermes_names": [], "unfired_hooks": None, "lazy": False, "isolated": False}


def build_report(
    records: list[PluginRecord], slots: SlotRegistry, config: Config, known_problems: list[str],
    fired_hooks: frozenset[str] | None = None, home: Path | None = None, lazy: Collection[str] = (),
) -> DoctorReport:
    """The report on loaded `records`; a slot whose configured name is unknown is a problem.
    With the hooks the host fires, each plugin's row names those it registered that never fire,
    and a warning says so; with the host's `home`, a plugin (or the host) past 80 % of an LLM
    budget is a warning. `warnings` is every warning the text output prints, so `--json` carries
    them too. A plugin of `lazy` is one the host imports when first needed (its row's `lazy`)."""
    problems = list(dict.fromkeys([*known_problems, *(p for r in records for p in r.problems)]))
    warnings = [w for r in records for w in r.warnings]
    warnings += [w for r in records for w in r.spec.warnings]
    warnings += config.unknown_keys(decl.config_key for decl in slots.declared)
    for record in records:
        missing = record.spec.missing_env()
        if missing:
            problems.append(f"plugin {record.id!r} requires environment variable(s) {', '.join(missing)}, unset")
        if record.spec.shadows:
            warnings.append(f"plugin {record.id!r} ({record.spec.source}) hides {'; '.join(record.spec.shadows)}")
    active: dict[str, str | None] = {}
    for decl in slots.declared:
        try:
            chosen = slots.select(decl.name, config)
        except Exception as exc:  # noqa: BLE001 - reported, not raised
            problems.append(str(exc))
            chosen = None
        active[decl.name] = chosen.name if chosen is not None else None
    plugins = [
        {
            "id": r.id,
            "status": r.status,
            "error": str(r.failure) if r.failure else None,
            "registered": {k: list(v) for k, v in r.registered.items()},
            "import_ms": r.import_ms,
            "hermes_names": list(r.hermes_names),
            "unfired_hooks": _unfired(r, fired_hooks),
            "lazy": r.id in lazy,
            "isolated": r.process is not None,
        }
        for r in records
    ]
    warnings += [f"plugin {r.id!r} registered hooks this host never fires: {', '.join(unfired)}"
                 for r in records for unfired in [_unfired(r, fired_hooks)] if unfired]
    if home is not None:
        from .._llm.budget import HOST
        from .._llm.spent import nearly_spent

        try:
            warnings += nearly_spent(config, home, [*(r.id for r in records), HOST])
        except HermesError as exc:  # a config value of the wrong type, an unreadable ledger: said, not raised
            warnings.append(f"LLM budgets: {exc}")
    return DoctorReport(plugins, active, problems, warnings)
