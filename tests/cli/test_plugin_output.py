"""What a plugin writes to file descriptor 1 directly (a subprocess it starts while loading, a
raw `os.write`, C code) never lands inside a command's output: while plugin code runs under a
command whose stdout is read by something else, descriptor 1 points at stderr."""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers import hermes, make_folder_plugin, write_config

NOISY = '''
import os
import subprocess
import sys

subprocess.run(["echo", "a child of the plugin says hello"], check=True)
os.write(1, b"a raw write to descriptor 1\\n")


def register(ctx):
    ctx.register_tool("noisy", "noise", {"name": "noisy", "description": "Noisy",
                      "parameters": {"type": "object", "properties": {}}}, tool)

    def setup(parser):
        parser.add_argument("word")

    def run(args):
        subprocess.run(["echo", f"the command's child says {args.word}"], check=True)
        print("the command prints")
        return 0

    ctx.register_cli_command("noisy", "Make noise", setup, run)


def tool(args, **kwargs):
    subprocess.run(["echo", "the tool's child"], check=True)
    os.write(1, b"the tool writes to descriptor 1\\n")
    return '{"ok": true}'
'''

CHILD_LINES = ("a child of the plugin says hello", "a raw write to descriptor 1")


def test_descriptor_1_writes_of_plugin_code_go_to_stderr_and_the_json_still_parses(home: Path) -> None:
    make_folder_plugin(home / "plugins", "noisy", NOISY, "name: noisy\n")
    write_config(home, "plugins:\n  enabled: [noisy]\n")
    doctor = hermes("plugins", "doctor", "--json")
    report = json.loads(doctor.stdout)
    assert next(p for p in report["plugins"] if p["id"] == "noisy")["status"] == "ok"
    assert all(line in doctor.stderr for line in CHILD_LINES)
    tools = hermes("tools", "list", "--json")
    assert "noisy" in {row["name"] for row in json.loads(tools.stdout)}
    called = hermes("tools", "call", "noisy", "{}")
    assert json.loads(called.stdout) == {"ok": True}
    assert "the tool's child" in called.stderr and "the tool writes to descriptor 1" in called.stderr


def test_a_plugins_own_cli_command_owns_stdout_and_its_childrens_output(home: Path) -> None:
    make_folder_plugin(home / "plugins", "noisy", NOISY, "name: noisy\n")
    write_config(home, "plugins:\n  enabled: [noisy]\n")
    result = hermes("noisy", "loud")
    assert result.stdout.splitlines() == ["the command's child says loud", "the command prints"]
    assert all(line in result.stderr for line in CHILD_LINES)  # its load's output still went to stderr
