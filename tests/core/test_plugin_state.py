"""`ctx.state` (`hermes_core.PluginState`): JSON values in `plugin-data/<id>/state.db`, each change
durable once it returns, shared safely by processes, within a 10 MB quota; an older
`state.json` imported once. (A dict's behaviour and the quota run on both backends in
tests/fleet/test_plugin_state_contract.py.)"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from hermes_core import PluginManager, PluginState, PluginStateError

def state_of(home: Path, plugin_id: str = "memo") -> PluginState:
    """A plugin's state as the host opens it (the path the loader passes: the old `state.json`)."""
    return PluginState(home / "plugin-data" / plugin_id / "state.json", plugin_id)


def run_python(code: str, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=timeout)


def test_a_plugin_s_values_round_trip_and_outlive_its_manager(home: Path) -> None:
    def memo(ctx: Any) -> None:
        ctx.state["runs"] = ctx.state.get("runs", 0) + 1
        ctx.state.update({"nested": {"b": [1, 2.5, None, True], "a": "naïve ☕"}, "empty": {}})

        def remember(raw: str) -> str:
            ctx.state.set("last", raw)
            return json.dumps(dict(ctx.state.items()))
        ctx.register_command("remember", remember)

    for run in (1, 2):
        manager = PluginManager(home=home, discover_plugins=False).load()
        try:
            assert manager.add_plugin(memo, "memo").status == "ok"
            got = json.loads(manager.commands.run("remember", f"tea {run}") or "null")
        finally:
            manager.close()
        assert got == {"runs": run, "nested": {"a": "naïve ☕", "b": [1, 2.5, None, True]}, "empty": {},
                       "last": f"tea {run}"}
    assert (home / "plugin-data" / "memo" / "state.db").is_file()
    assert not (home / "plugin-data" / "memo" / "state.json").exists()


def test_it_works_like_a_dict(home: Path) -> None:
    state = state_of(home)
    assert (len(state), state.keys(), state.get("a"), state.get("a", 7), "a" in state) == (0, [], None, 7, False)
    assert not (home / "plugin-data").exists()  # reading an empty state creates nothing
    state["b"] = 1
    state.set("a", [1])
    state.update({"c": None, "b": 2})
    assert state.keys() == ["b", "a", "c"] and state.items() == [("b", 2), ("a", [1]), ("c", None)]
    assert (len(state), state["c"], "c" in state, 3 in state) == (3, None, True, False)
    assert state.get(3, "no") == "no"  # type: ignore[arg-type]
    assert state.delete("b") is True and state.delete("b") is False
    with pytest.raises(KeyError):
        del state["b"]
    with pytest.raises(KeyError):
        state["b"]
    state["b"] = 3  # a key set again comes last, as in a dict
    assert state.keys() == ["a", "c", "b"]
    state.clear()
    assert (len(state), state.items()) == (0, [])


def test_a_value_that_is_not_json_or_a_bad_key_is_refused_and_nothing_is_written(home: Path) -> None:
    state = state_of(home)
    state["kept"] = "before"
    with pytest.raises(PluginStateError, match=r"ctx.state of plugin 'memo' takes JSON values only"):
        state["kept"] = object()
    with pytest.raises(PluginStateError, match=r"plugin 'memo' takes JSON values only"):
        state.update({"new": 1, "kept": {1, 2}})
    for key in ("", 7, None):
        with pytest.raises(PluginStateError, match=r"ctx.state of plugin 'memo' takes non-empty text keys"):
            state.set(key, 1)  # type: ignore[arg-type]
    assert state.items() == [("kept", "before")]


def test_a_state_json_is_imported_once_and_kept_as_state_json_migrated(home: Path) -> None:
    folder = home / "plugin-data" / "memo"
    folder.mkdir(parents=True)
    old = {"runs": 4, "seen": {"a": [1, 2]}, "text": "naïve"}
    (folder / "state.json").write_text(json.dumps(old, sort_keys=True), encoding="utf-8")
    state = state_of(home)
    assert dict(state.items()) == old
    assert not (folder / "state.json").exists()
    assert json.loads((folder / "state.json.migrated").read_text(encoding="utf-8")) == old
    state["runs"] = 5
    # a process killed between committing the import and renaming the file leaves it behind
    (folder / "state.json").write_text(json.dumps(old), encoding="utf-8")
    again = state_of(home)
    assert again["runs"] == 5 and len(again) == 3  # not imported a second time
    assert not (folder / "state.json").exists() and (folder / "state.json.migrated").exists()


def test_a_state_json_that_is_not_json_is_an_error_and_creates_no_database(home: Path) -> None:
    folder = home / "plugin-data" / "memo"
    folder.mkdir(parents=True)
    (folder / "state.json").write_text('{"runs": 4,', encoding="utf-8")
    not_json = r"state of plugin 'memo' .*state.json\) is not JSON .*; fix or remove the file$"
    with pytest.raises(PluginStateError, match=not_json):
        state_of(home).get("runs")
    with pytest.raises(PluginStateError, match=not_json):
        state_of(home)["runs"] = 1
    assert sorted(path.name for path in folder.iterdir()) == ["state.json"]
    for damaged in (b'{"runs": "\xff"}', b"[" * 100_000 + b"]" * 100_000):  # not UTF-8; nested past the parser
        (folder / "state.json").write_bytes(damaged)
        with pytest.raises(PluginStateError, match=not_json):
            state_of(home).get("runs")
        assert sorted(path.name for path in folder.iterdir()) == ["state.json"]
    (folder / "state.json").unlink()
    assert state_of(home).keys() == []


def test_a_state_json_written_with_a_bom_is_imported(home: Path) -> None:
    folder = home / "plugin-data" / "memo"
    folder.mkdir(parents=True)
    (folder / "state.json").write_bytes(b'\xef\xbb\xbf{"runs": 4, "last": "t\xc3\xa9"}')
    assert dict(state_of(home).items()) == {"runs": 4, "last": "té"}


KILLED = """
import os, sys
from pathlib import Path
from hermes_core import PluginState

state = PluginState(Path(sys.argv[1]), "memo")
state["last"] = {"words": sys.argv[2]}
print("set", flush=True)
os.kill(os.getpid(), 9)
"""


def test_a_set_that_returned_survives_the_process_being_killed(home: Path) -> None:
    path = home / "plugin-data" / "memo" / "state.json"
    killed = run_python(KILLED, str(path), "before the kill")
    assert (killed.returncode, killed.stdout) == (-9, "set\n"), killed.stderr
    assert state_of(home)["last"] == {"words": "before the kill"}


WRITER = """
import sys, time
from pathlib import Path
from hermes_core import PluginState

state = PluginState(Path(sys.argv[1]), "memo")
name, start = sys.argv[2], float(sys.argv[3])
while time.time() < start:
    pass
for n in range(200):  # the first set imports state.json (once: a second import would undo sets)
    state[f"{name}-{n}"] = n
"""


def test_processes_setting_keys_at_once_lose_none_and_import_state_json_once(home: Path) -> None:
    path = home / "plugin-data" / "memo" / "state.json"
    path.parent.mkdir(parents=True)
    old = {f"w{w}-{n}": "from state.json" for w in range(2) for n in range(200)}
    path.write_text(json.dumps({**old, "kept": True}), encoding="utf-8")
    start = time.time() + 1.0  # both processes are up and spinning when the moment comes
    writers = [subprocess.Popen([sys.executable, "-c", WRITER, str(path), f"w{n}", str(start)],
                                stderr=subprocess.PIPE, text=True) for n in range(2)]
    errors = [writer.communicate(timeout=60)[1] for writer in writers]
    assert [writer.returncode for writer in writers] == [0, 0], errors
    state = state_of(home)
    assert dict(state.items()) == {"kept": True, **{f"w{w}-{n}": n for w in range(2) for n in range(200)}}
    assert not path.exists() and path.with_name("state.json.migrated").exists()


def test_a_value_set_by_another_process_is_read_at_once(home: Path) -> None:
    state = state_of(home)
    state["n"] = 1
    assert state["n"] == 1
    setter = run_python("import sys; from pathlib import Path; from hermes_core import PluginState\n"
                        "PluginState(Path(sys.argv[1]), 'memo').update({'n': 2, 'other': 'x'})",
                        str(home / "plugin-data" / "memo" / "state.json"))
    assert setter.returncode == 0, setter.stderr
    assert (state["n"], state.get("other"), len(state)) == (2, "x", 2)
