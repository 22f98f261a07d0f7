"""Consent before the dashboard enables a plugin, as `hermes plugins enable` asks it at a terminal
(docs/trust.md): a third-party plugin without a stored consent to its capability set is first shown
with what it will be able to do (its `register()` dry run in a process of its own, never in the
dashboard's; the capabilities its plugin.yaml asks for) and enabled by "Grant and enable", which
records the consent and grants what it asks for (`hermes plugins enable ID`, answered yes)."""

from __future__ import annotations

from html import escape
from pathlib import Path
from typing import Any
from urllib.parse import quote

from hermes_core import HermesError, PluginManager, PluginNotFoundError, discover, load_config, redact_secrets
from hermes_core._consent import (asked, asks_before_enabling, consent_hash, consented, declared_of, known_of, pending_of,
                                  record_consent)

__all__ = ["ConsentNeeded", "consent_url", "needs_consent", "what_it_asks", "grant", "render"]


class ConsentNeeded(HermesError):
    """Enabling the plugin asks for the operator's consent first: its page is at `url`."""

    def __init__(self, plugin_id: str) -> None:
        super().__init__(f"enabling {plugin_id} asks for your consent first: see what it will be able to do")
        self.url = consent_url(plugin_id)


def consent_url(plugin_id: str) -> str:
    return f"/plugins/consent?plugin={quote(plugin_id, safe='')}"


def _spec(manager: PluginManager, plugin_id: str) -> Any:
    found = discover(home=manager.home)
    spec = found.get(plugin_id)
    if spec is None:
        raise PluginNotFoundError(f"no plugin {plugin_id!r} was found (discovered: {', '.join(found.ids) or 'none'}); "
                                  "see `hermes plugins list`")
    return spec


def needs_consent(manager: PluginManager, plugin_id: str) -> None:
    """Raise `ConsentNeeded` unless enabling `plugin_id` asks nothing (built-in, enabled already, or
    a consent to its capability set stored)."""
    spec = _spec(manager, plugin_id)
    if asks_before_enabling(load_config(manager.home), spec) is not None:
        raise ConsentNeeded(spec.id)


def what_it_asks(manager: PluginManager, plugin_id: str) -> dict[str, Any]:
    """What the consent page shows: the lines the CLI shows, the capabilities "Grant and enable"
    grants, and the hash of the set it answers (sent back with the grant); {"error": ...} for an
    unknown plugin."""
    try:
        spec = _spec(manager, plugin_id)
    except HermesError as exc:
        return {"error": str(exc)}
    declared = declared_of(spec)
    shown = asked(spec, Path(spec.python) if spec.python else None, declared, manager.home)
    return {"plugin": spec.id, "builtin": spec.source == "builtin", "lines": shown.lines,
            "grants": [] if shown.answered else shown.pending, "hash": consent_hash(declared)}


def grant(manager: PluginManager, plugin_id: str, answered: str) -> str:
    """Record the consent to what `plugin_id` asks for and grant it (what "Grant and enable" does
    before enabling it); refused when what it asks for is not the set the page showed (`answered`:
    that set's hash). Returns what was granted, as a clause ("" for nothing)."""
    spec = _spec(manager, plugin_id)
    declared = declared_of(spec)
    if consent_hash(declared) != answered:
        raise HermesError(f"{spec.id} asks for other capabilities than the page showed; reload it and answer again")
    config = load_config(manager.home)
    # this very set answered before (the page showed no grant): what was declined then stays so
    granting = [] if consented(config, spec.id, declared) else pending_of(config, spec.id, declared)
    record_consent(spec.id, granting, known_of(declared), manager.home)
    return f"granted {', '.join(granting)} to {spec.id}; " if granting else ""


def render(data: dict[str, Any]) -> str:
    """The consent page's body: the lines, and the button that grants and enables."""
    def e(value: Any) -> str:
        return escape(redact_secrets(str(value)))

    plugin = data["plugin"]
    lines = "".join(f"<li>{e(line)}</li>" for line in data["lines"])
    grants = (f"<p>Grant and enable grants {e(', '.join(data['grants']))} to {e(plugin)} and records your consent "
              "to what it asks for: an update asking for more is asked about again.</p>" if data["grants"] else
              f"<p>Grant and enable records your consent to what {e(plugin)} asks for: an update asking for more "
              "is asked about again.</p>")
    return (f'<p>{e(plugin)} will be able to (from a dry run of its register() in a process of its own):</p>'
            f'<ul data-consent="{escape(plugin)}">{lines}</ul>{grants}'
            f'<form class="inline" data-action="/actions/plugins/grant"><input type="hidden" name="plugin" '
            f'value="{escape(plugin)}"><input type="hidden" name="hash" value="{escape(data["hash"])}">'
            '<button type="submit">Grant and enable</button></form> <a href="/plugins">Cancel</a>'
            '<p class="muted">The same as <code>hermes plugins enable ' + e(plugin) + '</code> answered yes at a '
            "terminal; each host loads the change at its next start.</p>")
