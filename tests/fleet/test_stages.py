"""Every stage that keeps shared state (`hermes state status`'s list) in one database: each names
its own tables (one namespace for all of them), and all of them created side by side are listed
current."""

from __future__ import annotations

import importlib
import json
import re
from pathlib import Path
from typing import Any

import pytest

from hermes_core.cli._state import STAGES
from tests.helpers import hermes

CREATED = re.compile(r"CREATE\s+(?:TABLE|INDEX|TEXT SEARCH CONFIGURATION|TEXT SEARCH DICTIONARY|"
                     r"(?:OR REPLACE\s+)?FUNCTION|TRIGGER)\s+(?:IF NOT EXISTS\s+)?(\w+)", re.IGNORECASE)


def store_class(ref: str) -> Any:
    module, _, name = ref.partition(":")
    return getattr(importlib.import_module(module), name)


def shared_stages() -> list[tuple[str, Any]]:
    """The stages that keep their tables in the shared database (those with a PostgreSQL schema)."""
    return [(stage, cls) for stage, ref, _ in STAGES if getattr(cls := store_class(ref), "pg_schema", "")]


def test_each_stage_names_its_own_tables_in_the_shared_database() -> None:
    owners: dict[str, str] = {"hermes_schema": "the floor"}
    for stage, cls in shared_stages():
        assert cls.stage == stage
        for name in CREATED.findall(cls.pg_schema):
            assert owners.setdefault(name.lower(), stage) == stage, f"{name} of {stage} is {owners[name.lower()]}'s"
    assert {"sessions", "plugin_state"} <= set(owners.values())


def test_every_stage_created_in_one_database_is_current(tmp_path: Path, pg_url: str, home: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    for stage, cls in shared_stages():
        with _opened(cls, tmp_path, pg_url)._reading() as db:  # the first use creates the stage's tables
            assert db is not None, stage
    monkeypatch.setenv("HERMES_STATE_URL", pg_url)
    report = json.loads(hermes("state", "status", "--json").stdout)
    states = {row["stage"]: row["state"] for row in report["stages"]}
    assert all(states[stage] == "current" for stage, _ in shared_stages()), states


def _opened(cls: Any, folder: Path, url: str) -> Any:
    """A store of `cls` on `url`, made as its hosts make it (a home, or a path and a plugin id)."""
    try:
        return cls(folder, url=url)
    except TypeError:
        return cls(folder / "state.db", "probe", url=url)
