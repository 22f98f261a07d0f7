"""What an operator types first: bare `hermes` and `hermes plugins` print their help (exit 0)."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import hermes


def test_bare_hermes_prints_its_help_and_succeeds(home: Path) -> None:
    result = hermes()
    assert result.stderr == ""
    lines = result.stdout.splitlines()
    assert lines[0] == "Usage: hermes [OPTIONS] COMMAND [ARGS]..." and "Commands:" in lines
    listed = {line.split()[0] for line in lines[lines.index("Commands:") + 1:] if line.strip()}
    assert {"plugins", "tools", "run", "chat", "sessions"} <= listed


def test_bare_hermes_plugins_prints_its_help_and_succeeds(home: Path) -> None:
    result = hermes("plugins")
    assert result.stderr == "" and result.stdout.startswith("Usage: hermes plugins [OPTIONS] COMMAND")
    assert {"list", "info", "enable", "disable", "doctor", "new"} <= {
        line.split()[0] for line in result.stdout.split("Commands:")[1].splitlines() if line.strip()}


def test_a_misspelt_command_is_still_a_one_line_error(home: Path) -> None:
    result = hermes("plugins", "lst", check=2)
    assert result.stdout == "" and result.stderr.count("\n") == 1 and "No such command 'lst'" in result.stderr

