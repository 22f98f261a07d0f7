"""Every stage `hermes state status` lists keeps its own tables: one namespace in the shared
database, no table name claimed by two stages, and each stage's PostgreSQL schema creates the
same tables as its SQLite one."""

from __future__ import annotations

import importlib
import re

from hermes_core.cli._state import STAGES

_TABLE = re.compile(r"CREATE TABLE IF NOT EXISTS (\w+)", re.IGNORECASE)


def test_no_table_name_belongs_to_two_stages() -> None:
    owner: dict[str, str] = {}
    for stage, ref, _file in STAGES:
        module, _, name = ref.partition(":")
        store = getattr(importlib.import_module(module), name)
        if not getattr(store, "pg_schema", ""):  # a stage whose store is not on the floor yet
            continue
        assert store.stage == stage
        tables = _TABLE.findall(store.pg_schema)
        assert tables and tables == _TABLE.findall(store.schema), stage
        for table in tables:
            assert owner.setdefault(table, stage) == stage, f"{table} is both {owner[table]}'s and {stage}'s"
