"""What the dashboard's buttons do, each the same as a CLI command:

- `enable_plugin` / `disable_plugin`: `hermes plugins enable|disable ID` (config.yaml's
  `plugins.enabled` / `plugins.disabled`; loaded at the next start of each host); enabling a
  plugin that asks for consent first goes through `consent` (its page, "Grant and enable");
- `pause_job` / `resume_job` / `run_job`: `hermes cron pause|resume|run JOB`.

Each returns a one-line message; a wrong id raises the library's error (shown as one line).
"""

from __future__ import annotations

from typing import Any

from hermes_core import PluginManager, PluginNotFoundError, discover, edit_config

__all__ = ["enable_plugin", "grant_and_enable", "disable_plugin", "pause_job", "resume_job", "run_job"]


def _membership(home: Any, plugin_id: str, add_to: str, remove_from: str) -> bool:
    def mutate(doc: Any) -> bool:
        section = doc.setdefault("plugins", {})
        if not isinstance(section, dict):
            from hermes_core import ConfigError

            raise ConfigError("plugins in config.yaml is not a mapping; fix it by hand first (it was not changed)")
        target = section.setdefault(add_to, [])
        other = section.get(remove_from)
        if not isinstance(target, list) or (other is not None and not isinstance(other, list)):
            from hermes_core import ConfigError

            raise ConfigError(f"plugins.{add_to} or plugins.{remove_from} in config.yaml is not a list; fix it by "
                              "hand first (it was not changed)")
        changed = plugin_id not in target
        if changed:
            target.append(plugin_id)
        while isinstance(other, list) and plugin_id in other:
            other.remove(plugin_id)
            changed = True
        return changed

    return bool(edit_config(mutate, home))


def _toggle(manager: PluginManager, plugin_id: str, add_to: str, remove_from: str) -> str:
    found = discover(home=manager.home)
    spec = found.get(plugin_id)
    if spec is None:
        raise PluginNotFoundError(f"no plugin {plugin_id!r} was found (discovered: {', '.join(found.ids) or 'none'}); "
                                  "see `hermes plugins list`")
    changed = _membership(manager.home, spec.id, add_to, remove_from)
    return f"{add_to} {spec.id} (each host loads it at its next start)" if changed else f"{spec.id} was already {add_to}"


def enable_plugin(manager: PluginManager, plugin_id: str) -> str:
    """`hermes plugins enable PLUGIN_ID`: `consent.ConsentNeeded` when it would ask first (docs/trust.md)."""
    from .consent import needs_consent

    needs_consent(manager, plugin_id)
    return _toggle(manager, plugin_id, "enabled", "disabled")


def grant_and_enable(manager: PluginManager, plugin_id: str, answered: str) -> str:
    """`hermes plugins enable PLUGIN_ID` answered yes at a terminal: the consent to the capability set
    whose hash is `answered` recorded, what it asks for granted, and the plugin enabled."""
    from .consent import grant

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
