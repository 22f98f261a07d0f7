"""`hermes state status`: where the shared state is (SQLite under the home, or the PostgreSQL
database `state.url` names), whether it can be reached, each stage's schema version and the
hosts that share it. The URL's password is never printed."""

from __future__ import annotations

import importlib
import sqlite3
from typing import Any

import click

from .._paths import hermes_home
from ._common import echo_json

# Every stage that keeps shared state: its name, its store class, and its SQLite file under the home
# (or, for the stages that keep Hermes' JSON files when no URL is set, that file).
STAGES: list[tuple[str, str, str]] = [
    ("sessions", "hermes_core.agent.store:SessionStore", "sessions.db"),
    ("api_server", "hermes_core.api_server.store:ApiStore", "api_server.db"),
    ("hosts", "hermes_core._store.hosts:Hosts", "hosts.db"),
    ("cron", "hermes_core.cron.shared:CronStore", "cron/jobs.json"),
    ("gateway", "hermes_core.gateway.state:GatewayStore", "gateway/approvals.json"),
    ("acp", "hermes_core.acp_server.folders:AcpStore", "acp/sessions.json"),
]


def _known(ref: str) -> int:
    module, _, name = ref.partition(":")
    return int(getattr(importlib.import_module(module), name).schema_version)


def _sqlite_version(path: Any) -> int | None:
    if not path.exists() or path.suffix != ".db":
        return None
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            return int(db.execute("PRAGMA user_version").fetchone()[0])
        finally:
            db.close()
    except sqlite3.Error:
        return -1


def status_report() -> dict[str, Any]:
    """What `hermes state status --json` prints."""
    from .. import config_keys
    from .._config.file import load_config
    from .._store import Hosts, state_url

    home = hermes_home()
    url = state_url(home)
    lease = float(load_config(home).read(config_keys.STATE_LEASE))
    report: dict[str, Any] = {"backend": "sqlite" if url is None else "postgresql",
                              "location": str(home) if url is None else url.masked,
                              "reachable": True, "error": None, "round_trip_ms": None, "stages": [], "hosts": []}
    versions: dict[str, int] = {}
    try:
        if url is None:
            versions = {stage: v for stage, _, file in STAGES if (v := _sqlite_version(home / file)) is not None}
        else:
            from .._store.postgres import postgres

            database = postgres(url)
            database.ping()  # the first opens the pool
            report["round_trip_ms"] = round(database.ping() * 1000, 2)
            versions = database.versions()
        report["hosts"] = Hosts(home, url=url).listing(within=2 * lease)
    except Exception as exc:  # noqa: BLE001 - a store that cannot be reached is the answer, in words
        from .._errors import HermesError

        if not isinstance(exc, HermesError):
            raise
        report.update(reachable=False, error=str(exc))
    for stage, ref, file in STAGES:
        known = _known(ref)
        have = versions.get(stage)
        if url is None and not file.endswith(".db"):  # Hermes' file, not a schema
            state = f"in {file} (Hermes' file)" if (home / file).exists() else "not created yet"
        else:
            state = "not created yet" if have is None else "unreadable" if have < 0 else \
                "current" if have == known else "older: upgraded on first use" if have < known else \
                "NEWER than this hermes-core: upgrade it"
        report["stages"].append({"stage": stage, "version": have, "known": known, "state": state})
    return report


@click.group()
def state() -> None:
    """Where the shared state is kept: SQLite under $HERMES_HOME, or the database state.url names."""


@state.command()
@click.option("--json", "as_json", is_flag=True, help="Print a JSON object.")
def status(as_json: bool) -> None:
    """Show the backend, whether it can be reached, each stage's schema version and the hosts."""
    report = status_report()
    if as_json:
        echo_json(report)
    else:
        click.echo(f"backend    {report['backend']}  {report['location']}")
        if report["reachable"]:
            trip = report["round_trip_ms"]
            click.echo("reachable  yes" + (f" ({trip} ms round trip)" if trip is not None else ""))
        else:
            click.echo(f"reachable  NO: {report['error']}")
        for row in report["stages"]:
            version = "-" if row["version"] is None else row["version"]
            click.echo(f"  {row['stage']:<12} schema {version} (this hermes-core: {row['known']}): {row['state']}")
        alive = [host for host in report["hosts"] if host["alive"]]
        click.echo(f"hosts      {len(alive)} alive" + "".join(f"\n  {h['kind']:<8} {h['id']}" for h in alive))
    if not report["reachable"]:
        raise SystemExit(1)
