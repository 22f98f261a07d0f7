"""Every stage `hermes state status` lists keeps its own tables: one namespace in the shared
database, no table name claimed by two stages, and each stage's PostgreSQL schema creates the
same tables as its SQLite one."""

from __future__ import annotations

import importlib
import json
import re
from typing import Any

from hermes_core.hosting import Store
from tests.helpers import hermes

_TABLE = re.compile(r"CREATE TABLE IF NOT EXISTS (\w+)", re.IGNORECASE)
HOSTS = ("hermes_core.agent.store", "hermes_core.api_server.store", "hermes_core.cron.shared",
         "hermes_core.gateway.state", "hermes_core.acp_server.folders")


def stores() -> list[Any]:
    for module in HOSTS:
        importlib.import_module(module)
    found, todo = [], list(Store.__subclasses__())
    while todo:
        store = todo.pop()
        todo.extend(store.__subclasses__())
        if store.pg_schema and not store.__module__.startswith("tests."):
            found.append(store)
    return found


def test_no_table_name_belongs_to_two_stages(home: Any) -> None:
    listed = {row["stage"] for row in json.loads(hermes("state", "status", "--json").stdout)["stages"]}
    owner: dict[str, str] = {}
    for store in stores():
        assert store.stage in listed, f"{store.__name__}'s stage {store.stage!r} is not in `hermes state status`"
        tables = _TABLE.findall(store.pg_schema)
        assert tables and tables == _TABLE.findall(store.schema), store.stage
        for table in tables:
            assert owner.setdefault(table, store.stage) == store.stage, f"{table} is {owner[table]}'s and {store.stage}'s"
    assert {"cron", "gateway", "acp", "hosts"} <= set(owner.values())
