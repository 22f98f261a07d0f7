"""Every stage that keeps shared state in one database: each is listed by `hermes state status`,
names its own tables, indexes and functions (one namespace for all of them), creates in
PostgreSQL the tables its SQLite schema has (where it keeps one SQLite file per home), and all
of them created side by side are listed current."""

from __future__ import annotations

import importlib
import json
import re
from pathlib import Path
from typing import Any

import pytest

from hermes_core.hosting import Store
from tests.helpers import hermes

CREATED = re.compile(r"CREATE\s+(?:TABLE|INDEX|TEXT SEARCH CONFIGURATION|TEXT SEARCH DICTIONARY|"
                     r"(?:OR REPLACE\s+)?FUNCTION|TRIGGER)\s+(?:IF NOT EXISTS\s+)?(\w+)", re.IGNORECASE)
TABLE = re.compile(r"CREATE TABLE IF NOT EXISTS (\w+)", re.IGNORECASE)
# The modules holding the hosts' stores (ctx.state's, private to the library, is reached through a
# plugin's ctx below).
MODULES = ("hermes_core.agent.store", "hermes_core.api_server.store", "hermes_core.cron.shared",
           "hermes_core.gateway.state", "hermes_core.acp_server.folders", "hermes_core._llm.ledger")
ONE_FILE_PER_PLUGIN = {"plugin_state"}  # SQLite: a file of its own per plugin, with other tables
OWN_NAMES = {"budgets"}  # its SQLite file (older than the shared database) names its tables totals and calls


def stores() -> list[Any]:
    """Every `Store` subclass of the library with a PostgreSQL schema."""
    for module in MODULES:
        importlib.import_module(module)
    from hermes_core import PluginManager
    from hermes_core.hosting import Hosts  # noqa: F401  (the hosts' registry)

    manager = PluginManager(discover_plugins=False)
    manager.add_plugin(lambda ctx: ctx.state, "probe")  # a plugin's ctx.state: its store's class
    manager.load()
    found, todo = [], list(Store.__subclasses__())
    while todo:
        store = todo.pop()
        todo.extend(store.__subclasses__())
        if store.pg_schema and not store.__module__.startswith("tests."):
            found.append(store)
    return found


def test_each_stage_is_listed_and_names_its_own_tables(home: Path) -> None:
    listed = {row["stage"] for row in json.loads(hermes("state", "status", "--json").stdout)["stages"]}
    owners: dict[str, str] = {"hermes_schema": "the floor", "hermes_migrations": "the floor"}
    for store in stores():
        assert store.stage in listed, f"{store.__name__}'s stage {store.stage!r} is not in `hermes state status`"
        for name in CREATED.findall(store.pg_schema):
            assert owners.setdefault(name.lower(), store.stage) == store.stage, \
                f"{name} of {store.stage} is {owners[name.lower()]}'s"
        if store.stage not in ONE_FILE_PER_PLUGIN | OWN_NAMES:
            assert TABLE.findall(store.pg_schema) == TABLE.findall(store.schema), store.stage
    assert {"sessions", "plugin_state", "api_server", "cron", "gateway", "acp", "hosts", "budgets"} <= set(owners.values())


def test_every_stage_created_in_one_database_is_current(tmp_path: Path, pg_url: str, home: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    for store in stores():
        with _opened(store, tmp_path, pg_url)._reading() as db:  # the first use creates the stage's tables
            assert db is not None, store.stage
    monkeypatch.setenv("HERMES_STATE_URL", pg_url)
    report = json.loads(hermes("state", "status", "--json").stdout)
    states = {row["stage"]: row["state"] for row in report["stages"]}
    assert all(states[store.stage] == "current" for store in stores()), states


def _opened(cls: Any, folder: Path, url: str) -> Any:
    """A store of `cls` on `url`, made as its hosts make it (a home, or a path and a plugin id)."""
    try:
        return cls(folder, url=url)
    except TypeError:
        return cls(folder / "state.db", "probe", url=url)
