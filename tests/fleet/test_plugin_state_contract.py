"""`ctx.state`'s contract on both backends: a plugin's SQLite file under the home, or its rows of
the shared database `state.url` names. The same tests run on each: a dict's behaviour, the
10 MB quota (also against hosts writing at once), a `state.json` imported once, and on
PostgreSQL one state for the plugin on every host."""

from __future__ import annotations

import itertools
import json
import threading
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hermes_core import PluginManager, PluginState, PluginStateError

QUOTA = 10 * 1024 * 1024  # "at most 10 MB" (docs/ctx.md)
_ids = itertools.count()


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request: pytest.FixtureRequest) -> str | None:
    """None (SQLite under the home) or a fresh PostgreSQL database's URL: each test runs on both."""
    return None if request.param == "sqlite" else str(request.getfixturevalue("pg_url"))


def state_of(home: Path, url: str | None, plugin_id: str = "memo") -> PluginState:
    """A plugin's state as the loader opens it (the path of the old `state.json`, and the home's URL)."""
    return PluginState(home / "plugin-data" / plugin_id / "state.json", plugin_id, url=url)


def test_it_works_like_a_dict_and_keeps_the_order_keys_were_first_set(tmp_path: Path, url: str | None) -> None:
    state = state_of(tmp_path, url)
    assert (len(state), state.keys(), state.get("a", 7), "a" in state, state.delete("a")) == (0, [], 7, False, False)
    state["b"] = 1
    state.update({"a": [1, {"x": None}], "c": "naïve ☕ 100% ?"})
    state["b"] = 2  # a replaced key keeps its place
    assert state.items() == [("b", 2), ("a", [1, {"x": None}]), ("c", "naïve ☕ 100% ?")]
    assert (state["a"], "c" in state, len(state)) == ([1, {"x": None}], True, 3)
    del state["a"]
    with pytest.raises(KeyError):
        del state["a"]
    assert state.keys() == ["b", "c"]
    state.clear()
    assert (len(state), state.items()) == (0, [])
    with pytest.raises(PluginStateError, match="takes JSON values only"):
        state["x"] = object()
    assert state_of(tmp_path, url).items() == []  # another host (or process) reads the same


def test_each_plugin_has_its_own_state_and_quota(tmp_path: Path, url: str | None) -> None:
    first, second = state_of(tmp_path, url, "first"), state_of(tmp_path, url, "second")
    first["k"] = "x" * (QUOTA - 100)
    second["k"] = "x" * (QUOTA - 100)  # the other plugin's state counts nothing here
    assert (first.keys(), second.keys()) == (["k"], ["k"])
    first.clear()
    assert (len(first), len(second)) == (0, 1)


def test_the_quota_counts_the_whole_state_and_follows_replacements_and_deletes(tmp_path: Path, url: str | None) -> None:
    state = state_of(tmp_path, url)
    half = "x" * (QUOTA // 2)
    state["a"] = half
    state["a"] = half + "y"  # a replaced value counts once
    with pytest.raises(PluginStateError) as refused:
        state["b"] = half
    assert str(refused.value) == ("ctx.state of plugin 'memo' would exceed its 10 MB quota; keep large data "
                                  "in files under the plugin's own folder")
    with pytest.raises(PluginStateError, match="quota"):
        state.update({"small": 1, "b": half})  # all or nothing
    assert state.keys() == ["a"] and state["a"] == half + "y"
    del state["a"]
    state["b"] = half
    state["c"] = "x" * (QUOTA - len(half) - 2 * len('"b": "", '))  # exactly the quota, as JSON
    assert len(json.dumps(dict(state.items()))) == QUOTA
    with pytest.raises(PluginStateError, match="quota"):
        state["d"] = 0
    state.clear()
    state["d"] = half
    assert state.keys() == ["d"]


def test_hosts_writing_at_once_never_pass_the_quota_together(tmp_path: Path, url: str | None) -> None:
    hosts = [state_of(tmp_path, url) for _ in range(4)]
    errors: list[BaseException] = []
    refused = [0]

    def host(n: int) -> None:
        for i in range(3):
            try:
                hosts[n].update({f"{n}-{i}": "x" * (QUOTA // 8)})
            except PluginStateError as exc:
                if "quota" not in str(exc):
                    errors.append(exc)
                refused[0] += 1

    threads = [threading.Thread(target=host, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert len(hosts[0]) == 7 and refused[0] == 5  # 12 writes of 1/8 each: seven fit
    assert len(json.dumps(dict(hosts[0].items()))) <= QUOTA


def test_hosts_updating_the_same_keys_at_once_take_turns(tmp_path: Path, url: str | None) -> None:
    hosts = [state_of(tmp_path, url) for _ in range(4)]
    errors: list[BaseException] = []

    def host(n: int) -> None:
        keys = ["a", "b", "c"] if n % 2 else ["c", "b", "a"]  # in opposite orders: no deadlock either
        for i in range(25):
            try:
                hosts[n].update({key: [n, i] for key in keys})
            except PluginStateError as exc:
                errors.append(exc)

    threads = [threading.Thread(target=host, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    values = dict(hosts[0].items())
    assert len({json.dumps(v) for v in values.values()}) == 1 and values["a"][1] == 24  # one update won whole


def test_a_state_json_is_imported_once(tmp_path: Path, url: str | None) -> None:
    folder = tmp_path / "plugin-data" / "memo"
    folder.mkdir(parents=True)
    old = {"runs": 4, "seen": {"a": [1, 2]}, "text": "naïve"}
    (folder / "state.json").write_text(json.dumps(old), encoding="utf-8")
    state = state_of(tmp_path, url)
    assert dict(state.items()) == old
    assert not (folder / "state.json").exists() and (folder / "state.json.migrated").exists()
    state["runs"] = 5
    (folder / "state.json").write_text(json.dumps(old), encoding="utf-8")  # left by a process killed in between
    again = state_of(tmp_path, url)
    assert again["runs"] == 5 and len(again) == 3  # not imported a second time
    assert not (folder / "state.json").exists()


def test_on_the_shared_database_every_host_has_one_state_per_plugin(tmp_path: Path, pg_url: str) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    for home, runs in ((one, 1), (two, 2)):
        (home / "plugin-data" / "memo").mkdir(parents=True)
        (home / "plugin-data" / "memo" / "state.json").write_text(json.dumps({"runs": runs}), encoding="utf-8")
    assert state_of(one, pg_url)["runs"] == 1
    assert state_of(two, pg_url).items() == [("runs", 1)]  # the first host's file was imported, once
    assert (two / "plugin-data" / "memo" / "state.json.migrated").exists()
    state_of(two, pg_url)["runs"] = 3
    assert state_of(one, pg_url)["runs"] == 3
    assert "postgresql://hermes:***@" in repr(state_of(one, pg_url))
    with pytest.raises(PluginStateError, match="NUL"):
        state_of(one, pg_url)["a\x00b"] = 1


def test_a_plugin_on_two_homes_naming_one_database_shares_its_state(
        tmp_path: Path, url: str | None, monkeypatch: pytest.MonkeyPatch) -> None:
    if url is not None:
        monkeypatch.setenv("HERMES_STATE_URL", url)
    else:
        monkeypatch.delenv("HERMES_STATE_URL", raising=False)

    def memo(ctx: Any) -> None:
        ctx.state["runs"] = ctx.state.get("runs", 0) + 1

    for home in (tmp_path / "one", tmp_path / "two", tmp_path / "one"):
        manager = PluginManager(home=home, discover_plugins=False).load()
        try:
            assert manager.add_plugin(memo, "memo").status == "ok"
        finally:
            manager.close()
    runs = [state_of(tmp_path / home, url)["runs"] for home in ("one", "two")]
    assert runs == ([3, 3] if url else [2, 1])
    assert (tmp_path / "one" / "plugin-data" / "memo" / "state.db").exists() is (url is None)


def test_a_malformed_state_url_is_the_plugins_state_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HERMES_STATE_URL", "mysql://u:secret@h/db")
    seen: list[str] = []

    def memo(ctx: Any) -> None:
        try:
            ctx.state["x"] = 1
        except PluginStateError as exc:
            seen.append(str(exc))

    manager = PluginManager(home=tmp_path, discover_plugins=False).load()
    try:
        assert manager.add_plugin(memo, "memo").status == "ok"
    finally:
        manager.close()
    (line,) = seen
    assert line.startswith("ctx.state of plugin 'memo' cannot be opened: HERMES_STATE_URL must start with postgresql://")
    assert "secret" not in line


KEYS = st.sampled_from(["a", "b", "c", "ключ", "k k"])
JSON = st.recursive(st.none() | st.booleans() | st.integers(-10, 10) | st.text(max_size=5),
                    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(st.text(max_size=3), inner, max_size=2),
                    max_leaves=4)
CHANGES = st.lists(st.one_of(st.tuples(st.just("set"), KEYS, JSON), st.tuples(st.just("delete"), KEYS),
                             st.tuples(st.just("update"), st.dictionaries(KEYS, JSON, max_size=3)),
                             st.just(("clear",))), max_size=10)


@settings(max_examples=30, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(changes=CHANGES)
def test_any_changes_leave_what_a_dict_would_hold_in_its_order(tmp_path: Path, url: str | None,
                                                                 changes: list[tuple[Any, ...]]) -> None:
    plugin = f"p{next(_ids)}"  # a new plugin (its own file, its own rows) per example
    state = state_of(tmp_path, url, plugin)
    model: dict[str, Any] = {}
    for change in changes:
        if change[0] == "set":
            state.set(change[1], change[2])
            model[change[1]] = change[2]
        elif change[0] == "delete":
            assert state.delete(change[1]) is (change[1] in model)
            model.pop(change[1], None)
        elif change[0] == "update":
            state.update(change[1])
            model.update(change[1])
        else:
            state.clear()
            model.clear()
    assert state.items() == list(model.items()) and len(state) == len(model)


def test_state_status_shows_the_plugins_state_schema(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.helpers import hermes

    monkeypatch.delenv("HERMES_STATE_URL", raising=False)
    before = {s["stage"]: s for s in json.loads(hermes("state", "status", "--json").stdout)["stages"]}
    assert before["plugin_state"]["state"] == "not created yet" and before["plugin_state"]["known"] == 1
    state_of(home, None, "memo")["x"] = 1
    state_of(home, None, "other")["x"] = 1
    after = {s["stage"]: s for s in json.loads(hermes("state", "status", "--json").stdout)["stages"]}
    assert (after["plugin_state"]["version"], after["plugin_state"]["state"]) == (1, "current")
    assert after["sessions"]["state"] == "not created yet"
