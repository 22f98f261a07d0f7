"""`hermes --help` lists the commands plugins add without importing them once they are known."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import hermes, make_folder_plugin, write_config

GREETER = """
from pathlib import Path
Path(__file__).with_name("imported").write_text("yes")

def setup(parser):
    parser.add_argument("who")

def run(args):
    print("hello " + args.who)

def register(ctx):
    ctx.register_cli_command("greet", "Say hello to someone", setup, run)
"""


def test_help_lists_plugin_commands_from_the_last_load_without_importing_them(home: Path) -> None:
    make_folder_plugin(home / "plugins", "greeter", GREETER, "name: greeter\n")
    write_config(home, "plugins:\n  enabled: [greeter]\n")
    marker = home / "plugins" / "greeter" / "imported"
    first = hermes("--help").stdout
    assert "greet" in first and "Say hello to someone" in first and marker.exists()  # learnt by loading once
    marker.unlink()
    again = hermes("--help").stdout
    assert "Say hello to someone" in again and "plugins" in again and "run" in again
    assert not marker.exists()  # listed from the last load: the plugin was not imported
    assert hermes("greet", "Ann").stdout.strip() == "hello Ann" and marker.exists()  # loaded to run


def test_help_notices_a_plugin_disabled_or_edited_since(home: Path) -> None:
    make_folder_plugin(home / "plugins", "greeter", GREETER, "name: greeter\n")
    write_config(home, "plugins:\n  enabled: [greeter]\n")
    assert "Say hello" in hermes("--help").stdout
    init = home / "plugins" / "greeter" / "__init__.py"
    # A different length: Python's own bytecode cache trusts a source whose size and mtime (in
    # whole seconds) are unchanged, and this edit lands within the second of the first import.
    init.write_text(GREETER.replace("Say hello to someone", "Greet someone warmly, by name"))
    edited = hermes("--help").stdout
    assert "Greet someone warmly" in edited and "Say hello" not in edited
    hermes("plugins", "disable", "greeter")
    assert "greet" not in hermes("--help").stdout.split("Commands:")[1]
