"""Operator commands through the `hermes` CLI as a subprocess: tables that fit the terminal
(under a pseudo-terminal), the active engines in `plugins list`, shell completion, and
`plugins install` / `plugins remove` pip-installing a real distribution into a real venv."""

from __future__ import annotations

import fcntl
import os
import pty
import struct
import subprocess
import termios
from pathlib import Path

from tests.helpers import HERMES, hermes, hermes_json, make_folder_plugin, write_config

LONG = "A description far longer than any terminal is wide, " * 4


def under_pty(*args: str, columns: int = 80, env: dict[str, str] | None = None) -> str:
    """What `hermes ARGS` shows on a terminal `columns` wide (window size set, no COLUMNS)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    environ = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")} | (env or {})
    proc = subprocess.Popen([str(HERMES), *args], stdin=slave, stdout=slave, stderr=slave, env=environ)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    assert proc.wait(timeout=120) == 0
    return b"".join(chunks).decode().replace("\r\n", "\n")


def long_plugins(home: Path) -> None:
    for name in ("a-plugin-with-a-rather-long-id", "short"):
        make_folder_plugin(home / "plugins", name, "def register(ctx):\n    pass\n",
                           f"version: '1.0'\ndescription: {LONG}\n")
    write_config(home, "plugins:\n  enabled: [short]\n")


def test_plugins_list_fits_an_80_column_terminal_with_descriptions_cut(home: Path) -> None:
    long_plugins(home)
    lines = under_pty("plugins", "list", columns=80).splitlines()
    assert lines[0].split() == ["ID", "VERSION", "SOURCE", "KIND", "ENABLED", "DESCRIPTION"]
    assert max(len(line) for line in lines) <= 80, lines
    row = next(line for line in lines if line.startswith("a-plugin-with-a-rather-long-id "))
    assert row.endswith("A descript\u2026")  # the id whole, the description cut to its header


def test_tables_follow_the_terminal_width(home: Path) -> None:
    long_plugins(home)
    wide = under_pty("plugins", "list", columns=160).splitlines()
    assert max(len(line) for line in wide) <= 160 and max(len(line) for line in wide) > 100


def test_columns_sets_the_width_on_a_terminal_and_a_pipe_gets_whole_rows(home: Path) -> None:
    long_plugins(home)
    lines = under_pty("plugins", "list", columns=160, env={"COLUMNS": "70"}).splitlines()
    assert max(len(line) for line in lines) <= 70 and "\u2026" in lines[-1]
    env = os.environ | {"COLUMNS": "70"}
    piped = subprocess.run([str(HERMES), "plugins", "list"], capture_output=True, text=True, env=env, check=True)
    assert LONG.strip() in piped.stdout and "\u2026" not in piped.stdout


def test_tools_list_fits_the_terminal(home: Path) -> None:
    lines = under_pty("tools", "list", columns=60).splitlines()
    assert lines[0].split()[:2] == ["NAME", "TOOLSET"] and max(len(line) for line in lines) <= 60, lines


def test_plugins_list_marks_the_active_context_engine_and_memory_provider(home: Path) -> None:
    rows = {row["id"]: row for row in hermes_json("plugins", "list")}
    assert rows["context_engine/compressor"]["active"] == "context_engine"
    assert rows["context_engine/lcm"]["enabled"] is True and rows["context_engine/lcm"]["active"] is None
    assert rows["memory/builtin"]["active"] == "memory" and rows["clock"]["active"] is None

    write_config(home, "context:\n  engine: lcm\n")
    rows = {row["id"]: row for row in hermes_json("plugins", "list")}
    assert rows["context_engine/lcm"]["active"] == "context_engine"
    assert rows["context_engine/compressor"]["active"] is None
    table = {line.split()[0]: line.split() for line in hermes("plugins", "list").stdout.splitlines()}
    assert table["context_engine/lcm"][4] == "active" and table["context_engine/compressor"][4] == "yes"
    assert hermes_json("plugins", "info", "context_engine/lcm")["active"] == "context_engine"


def test_a_disabled_engine_is_not_marked_active(home: Path) -> None:
    write_config(home, "context:\n  engine: lcm\nplugins:\n  disabled: [context_engine/lcm]\n")
    rows = {row["id"]: row for row in hermes_json("plugins", "list")}
    assert rows["context_engine/lcm"]["active"] is None and rows["context_engine/lcm"]["enabled"] is False
