"""`hermes state status`: where the shared state is (SQLite under the home, or the PostgreSQL
database `state.url` names), whether it can be reached, each stage's schema version and the
hosts that share it; `hermes state migrate --to URL`: the home's SQLite state copied into that
database (resumable, never twice, the files left as they were). The URL's password is never
printed."""

from __future__ import annotations

import importlib
import sqlite3
from typing import Any

import click

from .._paths import hermes_home
from ._common import echo_json

# Every stage that keeps shared state: its name, its store class, and its SQLite file under the home
# (a pattern: one file per plugin, the newest schema among them shown; or, for the stages that keep
# Hermes' JSON files when no URL is set, that file).
STAGES: list[tuple[str, str, str]] = [
    ("sessions", "hermes_core.agent.store:SessionStore", "sessions.db"),
    ("plugin_state", "hermes_core._ctx.state:_StateFile", "plugin-data/*/state.db"),
    ("api_server", "hermes_core.api_server.store:ApiStore", "api_server.db"),
    ("hosts", "hermes_core._store.hosts:Hosts", "hosts.db"),
    ("cron", "hermes_core.cron.shared:CronStore", "cron/jobs.json"),
    ("gateway", "hermes_core.gateway.state:GatewayStore", "gateway/approvals.json"),
    ("acp", "hermes_core.acp_server.folders:AcpStore", "acp/sessions.json"),
    ("budgets", "hermes_core._llm.ledger:Ledger", "llm-usage.db"),
]


def _stage(ref: str) -> Any:
    module, _, name = ref.partition(":")
    return getattr(importlib.import_module(module), name)


def _known(ref: str) -> int:
    return int(_stage(ref).schema_version)


def _sqlite_version(path: Any) -> int | None:
    if "*" in path.name or "*" in path.parent.name:
        found = [v for match in sorted(path.parent.parent.glob(f"{path.parent.name}/{path.name}"))
                 if (v := _sqlite_version(match)) is not None]
        return None if not found else -1 if -1 in found else max(found)
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


@state.command()
@click.option("--to", "to", required=True, metavar="URL", help="The postgresql:// database to copy into.")
@click.option("--json", "as_json", is_flag=True, help="Print what was copied as JSON.")
def migrate(to: str, as_json: bool) -> None:
    """Copy this home's SQLite state into the PostgreSQL database URL.

    Sessions, the API server's store and every plugin's ctx.state are copied table by table, the
    budgets ledger's totals added to the database's;
    Hermes' files (cron/jobs.json, approvals, pairings, ACP folders) are imported as a host does on
    first use. Safe to stop and run again: it goes on where it stopped and never copies a row twice.
    The home's files are only read. Then point every host at the database (state.url in
    config.yaml or HERMES_STATE_URL).
    """
    from .._store import parse_state_url
    from .._store.migrate import migrate as copy_all
    from .._store.postgres import postgres

    url = parse_state_url(to, where="--to")
    assert url is not None
    home = hermes_home()
    database = postgres(url)
    database.ping()  # a wrong password or a missing database: one line, before anything is said
    copies, stages = [], []
    for _name, ref, _file in STAGES:
        stage = _stage(ref)
        stages.append(stage)
        for copy in stage.copies(home):
            copy.ready = (lambda stage=stage: database.prepare(stage))
            copies.append(copy)
    say = (lambda line: None) if as_json else (lambda line: click.echo(f"  {line}", err=True))
    if not as_json:
        click.echo(f"copying {home} into {url.masked}", err=True)
    report = copy_all(database, copies, say=say)
    imported = [line for stage in stages if (line := stage.import_home(home, url))]
    if as_json:
        echo_json({"copied": report, "imported": imported})
        return
    for row in report:
        skipped = f", {row['skipped']} already there" if row["skipped"] else ""
        click.echo(f"{row['table']:<16} {row['copied']:>8} copied ({row['total']} in all{skipped})  from {row['source']}")
    for line in imported:
        click.echo(line)
    click.echo(f"done; the SQLite files were left as they were. Point every host at the database: "
               f"state.url: {url.masked} in config.yaml (with the password), or HERMES_STATE_URL")
