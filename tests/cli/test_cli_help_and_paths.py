"""What an operator types first: bare `hermes` and `hermes plugins` print their help (exit 0),
and `hermes paths` says where everything lives, at the places hermes really writes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hermes_core.testing import ScriptedServer
from tests.helpers import hermes, hermes_json, llm_config, make_folder_plugin

NAMES = ["home", "config", "plugins", "sessions", "memory", "logs", "cache"]


def test_bare_hermes_prints_its_help_and_succeeds(home: Path) -> None:
    result = hermes()
    assert result.stderr == ""
    lines = result.stdout.splitlines()
    assert lines[0] == "Usage: hermes [OPTIONS] COMMAND [ARGS]..." and "Commands:" in lines
    listed = {line.split()[0] for line in lines[lines.index("Commands:") + 1:] if line.strip()}
    assert {"plugins", "tools", "run", "chat", "sessions", "paths"} <= listed


def test_bare_hermes_plugins_prints_its_help_and_succeeds(home: Path) -> None:
    result = hermes("plugins")
    assert result.stderr == "" and result.stdout.startswith("Usage: hermes plugins [OPTIONS] COMMAND")
    assert {"list", "info", "enable", "disable", "doctor", "new"} <= {
        line.split()[0] for line in result.stdout.split("Commands:")[1].splitlines() if line.strip()}


def test_a_misspelt_command_is_still_a_one_line_error(home: Path) -> None:
    result = hermes("plugins", "lst", check=2)
    assert result.stdout == "" and result.stderr.count("\n") == 1 and "No such command 'lst'" in result.stderr


def test_paths_prints_one_line_per_place_under_hermes_home(home: Path) -> None:
    lines = hermes("paths").stdout.splitlines()
    assert [line.split()[0] for line in lines] == NAMES
    for line in lines:
        name, path = line.split()[:2]
        assert Path(path) == home or Path(path).is_relative_to(home), line
        assert line.endswith("(not created yet)") == (not Path(path).exists()), line
    assert hermes_json("paths") == {line.split()[0]: line.split()[1] for line in lines}


def test_paths_name_prints_that_path_alone(home: Path) -> None:
    assert hermes("paths", "sessions").stdout == f"{home / 'sessions.db'}\n"
    assert hermes_json("paths", "config") == {"config": str(home / "config.yaml")}
    result = hermes("paths", "session", check=2)
    assert "'session' is not one of: home, config, plugins, sessions" in result.stderr


def test_paths_without_hermes_home_is_under_the_users_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HERMES_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert hermes_json("paths")["home"] == str(tmp_path / ".hermes")


def test_the_printed_paths_are_where_hermes_writes(home: Path, llm_server: ScriptedServer) -> None:
    llm_config(home, llm_server.url, "plugins:\n  enabled: [tldr, notes]\n")
    make_folder_plugin(home / "plugins", "notes", "def register(ctx):\n    ctx.register_command('n', str)\n")
    paths = {name: Path(path) for name, path in hermes_json("paths").items()}
    assert {row["id"]: row["source"] for row in hermes_json("plugins", "list")}["notes"] == "user"
    llm_server.reply("hello there")
    hermes("run", "say hello")
    llm_server.reply("A short summary.")
    hermes("command", "tldr", "a long text to summarise")
    hermes("tools", "call", "memory_save", json.dumps({"content": "the demo remembers this"}))
    assert paths["plugins"] == home / "plugins" and (paths["plugins"] / "notes" / "__init__.py").is_file()
    assert paths["config"].is_file() and "tldr" in paths["config"].read_text()
    assert paths["sessions"].is_file() and "say hello" in hermes("sessions", "list").stdout
    assert paths["memory"].is_file()
    assert "tldr" in (paths["logs"] / "agent.log").read_text()
    assert any(paths["cache"].iterdir())
    assert "(not created yet)" not in hermes("paths").stdout


def test_paths_names_the_shared_database_when_state_url_is_set(home: Path) -> None:
    (home / "config.yaml").write_text("state:\n  url: postgresql://ops:s3cret@db.internal:5432/hermes\n",
                                      encoding="utf-8")
    line = next(line for line in hermes("paths").stdout.splitlines() if line.startswith("sessions"))
    assert line.split()[1] == "postgresql://ops:***@db.internal:5432/hermes" and "s3cret" not in line
    assert line.endswith("(the shared database: state.url)")
    assert hermes("paths", "sessions").stdout == "postgresql://ops:***@db.internal:5432/hermes\n"
