"""`hermes paths`: where the config, plugins, sessions, memory, logs and caches live."""

from __future__ import annotations

from typing import Any

import click

from .._paths import hermes_paths
from ._common import echo_json


@click.command()
@click.argument("name", required=False)
@click.option("--json", "as_json", is_flag=True, help="Print a JSON object: name → path.")
def paths(name: str | None, as_json: bool) -> None:
    """Show where hermes keeps its files: config, plugins, sessions, logs, caches.

    Everything is under $HERMES_HOME (default ~/.hermes). With NAME (home, config, plugins,
    sessions, memory, logs or cache) only that path is printed: cd "$(hermes paths home)".
    """
    found: dict[str, Any] = dict(hermes_paths())
    from .._store.url import state_url

    shared = state_url(found["home"])
    if shared is not None:  # sessions are in the shared database `state.url` names, not in sessions.db
        found["sessions"] = shared.masked
    if name is not None:
        if name not in found:
            raise click.BadParameter(f"{name!r} is not one of: {', '.join(found)}", param_hint="NAME")
        found = {name: found[name]}
        if not as_json:
            click.echo(found[name])
            return
    if as_json:
        echo_json({key: str(path) for key, path in found.items()})
        return
    width = max(len(key) for key in found)
    for key, path in found.items():
        note = "  (the shared database: state.url)" if isinstance(path, str) else \
            "" if path.exists() else "  (not created yet)"
        click.echo(f"{key.ljust(width)}  {path}{note}")
