"""What the dashboard's buttons do, each the same as a CLI command:

- `enable_plugin` / `disable_plugin`: `hermes plugins enable|disable ID` (config.yaml's
  `plugins.enabled` / `plugins.disabled`, edited as the CLI does, a managed list refusing what it
  would undo; loaded at the next start of each host); enabling a plugin that asks for consent first
  goes through `consent` (its page, "Grant and enable");
- `pause_job` / `resume_job` / `run_job`: `hermes cron pause|resume|run JOB`.

Each returns a one-line message; a wrong id raises the library's error (shown as one line).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hermes_core import PluginManager, PluginNotFoundError, discover, load_config
from hermes_core._config.plugin_lists import refuse_to_toggle, set_membership

__all__ = ["enable_plugin", "grant_and_enable", "disable_plugin", "pause_job", "resume_job", "run_job"]


def _allowed_spec(manager: PluginManager, plugin_id: str, add_to: str) -> tuple[Any, Any]:
    """The plugin's spec and the config, once a managed list that would undo adding it to `add_to`
    has been asked (refused before anything is asked or granted)."""
    found = discover(home=manager.home)
    spec = found.get(plugin_id)
    if spec is None:
        raise PluginNotFoundError(f"no plugin {plugin_id!r} was found (discovered: {', '.join(found.ids) or 'none'}); "
                                  "see `hermes plugins list`")
    config = load_config(manager.home)
    refuse_to_toggle(spec, config, add_to)
    return spec, config


def _toggle(manager: PluginManager, plugin_id: str, add_to: str, remove_from: str,
            before: Callable[[], None] | None = None) -> str:
    spec, config = _allowed_spec(manager, plugin_id, add_to)
    if before is not None:
        before()
    changed = set_membership(spec.id, add_to, remove_from, config, manager.home)
    return f"{add_to} {spec.id} (each host loads it at its next start)" if changed else f"{spec.id} was already {add_to}"


def enable_plugin(manager: PluginManager, plugin_id: str) -> str:
    """`hermes plugins enable PLUGIN_ID`: `consent.ConsentNeeded` when it would ask first (docs/trust.md)."""
    from .consent import needs_consent

    return _toggle(manager, plugin_id, "enabled", "disabled", lambda: needs_consent(manager, plugin_id))


def grant_and_enable(manager: PluginManager, plugin_id: str, answered: str) -> str:
    """`hermes plugins enable PLUGIN_ID` answered yes at a terminal: the consent to the capability set
    whose hash is `answered` recorded, what it asks for granted, and the plugin enabled."""
    from .consent import grant

    _allowed_spec(manager, plugin_id, "enabled")  # nothing granted to a plugin a managed list keeps disabled
    return grant(manager, plugin_id, answered) + enable_plugin(manager, plugin_id)


def disable_plugin(manager: PluginManager, plugin_id: str) -> str:
    """`hermes plugins disable PLUGIN_ID`."""
    return _toggle(manager, plugin_id, "disabled", "enabled")


def _paused(manager: PluginManager, job: str, paused: bool) -> str:
    from hermes_core.cron import now, open_jobs, zone

    changed = open_jobs(manager.home).set_paused(job, paused, now(), zone(manager.config))
    return f"{'paused' if paused else 'resumed'} {changed['id']} {changed.get('name', '')!r}"


def pause_job(manager: PluginManager, job: str) -> str:
    """`hermes cron pause JOB`."""
    return _paused(manager, job, True)


def resume_job(manager: PluginManager, job: str) -> str:
    """`hermes cron resume JOB`."""
    return _paused(manager, job, False)


def run_job(manager: PluginManager, job: str) -> str:
    """`hermes cron run JOB`: the run's outcome (its answer is delivered as the job says)."""
    import logging

    from hermes_core.cron import Scheduler

    log = logging.getLogger("hermes.dashboard")
    with Scheduler(manager, say=lambda line: log.warning("%s", line)) as scheduler:
        outcome = scheduler.run(job)
    if outcome.get("status") != "ok":
        return f"the run of {job} failed: {outcome.get('error')}"
    return f"ran {job}: {str(outcome.get('text', ''))[:200]}"
