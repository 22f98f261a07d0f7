"""The `hermes` CLI, run as a subprocess: JSON shapes, exit codes, one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers import hermes, hermes_json, make_folder_plugin, write_config

DICE = """
import json
from hermes_core import hookimpl

def register(ctx):
    ctx.register_tool("roll", "dice", {"name": "roll", "description": "Roll a die",
        "parameters": {"type": "object", "properties": {"sides": {"type": "integer", "minimum": 2}},
                       "required": ["sides"]}},
        lambda args, **kw: json.dumps({"value": args["sides"]}))
    ctx.register_command("/Dice Stats", lambda raw: f"stats for {raw!r}")
    ctx.register_command("explode", lambda raw: 1 / 0)

@hookimpl
def register_cli_commands(cli, ctx):
    import click
    @cli.command("dice-info")
    def dice_info():
        click.echo(f"dice plugin {ctx.plugin_id}")
"""


def setup_dice(home: Path) -> None:
    make_folder_plugin(home / "plugins", "dice", DICE, "version: '1.0'\ndescription: Dice rolls\n")
    make_folder_plugin(home / "plugins", "broken", "raise ImportError('missing native lib')\n")
    write_config(home, "plugins:\n  enabled: [dice]\n")


def test_plugins_list_json_shape(home: Path) -> None:
    setup_dice(home)
    rows = {row["id"]: row for row in hermes_json("plugins", "list")}
    assert {k: rows["dice"][k] for k in ("id", "name", "version", "source", "kind", "enabled", "description")} == {
        "id": "dice", "name": "dice", "version": "1.0", "source": "user", "kind": "standalone",
        "enabled": True, "description": "Dice rolls",
    }
    assert rows["broken"]["enabled"] is False and rows["clock"]["source"] == "builtin"


def test_plugins_list_table(home: Path) -> None:
    setup_dice(home)
    out = hermes("plugins", "list").stdout.splitlines()
    assert out[0].split() == ["ID", "VERSION", "SOURCE", "KIND", "ENABLED", "DESCRIPTION"]
    assert any(line.split()[:5] == ["dice", "1.0", "user", "standalone", "yes"] for line in out)


def test_plugins_info(home: Path) -> None:
    setup_dice(home)
    info = hermes_json("plugins", "info", "dice")
    assert info["origin"] == str(home / "plugins" / "dice") and info["reason"] == "enabled in plugins.enabled"
    assert "origin:" in hermes("plugins", "info", "dice").stdout
    result = hermes("plugins", "info", "nope", check=1)
    assert result.stderr.startswith("hermes: error: no plugin 'nope'") and result.stderr.count("\n") == 1


def test_doctor_json_shape_and_exit_code(home: Path) -> None:
    setup_dice(home)
    report = hermes_json("plugins", "doctor")
    assert set(report) == {"plugins", "slots", "problems", "warnings", "platforms"}
    dice = next(p for p in report["plugins"] if p["id"] == "dice")
    assert set(dice) == {"id", "status", "error", "registered", "import_ms", "hermes_names", "unfired_hooks", "lazy", "isolated"}
    assert dice["hermes_names"] == [] and dice["unfired_hooks"] == []
    assert dice["status"] == "ok" and dice["error"] is None
    assert dice["registered"] == {"tools": ["roll"], "commands": ["dice-stats", "explode"]}
    assert isinstance(dice["import_ms"], float)
    assert report["slots"]["context_engine"] == "compressor" and report["slots"]["memory"] == "builtin"
    assert report["slots"]["tts"] is None and report["problems"] == []
    write_config(home, "plugins:\n  enabled: [dice, broken]\n")
    report = hermes_json("plugins", "doctor", check=1)
    broken = next(p for p in report["plugins"] if p["id"] == "broken")
    assert broken["status"] == "failed" and broken["error"].startswith("ImportError: missing native lib")
    text = hermes("plugins", "doctor", check=1).stdout
    assert "broken" in text and "failed" in text


def test_doctor_reports_missing_requires_env_and_unknown_enabled_ids(home: Path, monkeypatch) -> None:
    monkeypatch.delenv("DICE_API_KEY", raising=False)
    make_folder_plugin(home / "plugins", "dice", DICE, "requires_env: [DICE_API_KEY]\n")
    write_config(home, "plugins:\n  enabled: [dice, ghost]\n")
    problems = hermes_json("plugins", "doctor", check=1)["problems"]
    assert any("DICE_API_KEY" in p for p in problems)
    assert any("'ghost'" in p for p in problems)


def test_tools_list_and_call(home: Path) -> None:
    setup_dice(home)
    rows = {r["name"]: r for r in hermes_json("tools", "list")}
    assert {k: rows["roll"][k] for k in ("name", "toolset", "plugin", "available")} == {
        "name": "roll", "toolset": "dice", "plugin": "dice", "available": True}
    assert json.loads(hermes("tools", "call", "roll", '{"sides": 6}').stdout) == {"value": 6}
    bad = hermes("tools", "call", "roll", '{"sides": 1}', check=1)
    assert "field 'sides'" in json.loads(bad.stdout)["error"]
    unknown = hermes("tools", "call", "nope", "{}", check=1)
    assert unknown.stderr.startswith(
        "hermes: error: unknown tool 'nope' (available: cronjob, current_time, memory_forget, memory_save, memory_search, "
        "read_file, roll, skill_view, skills_list, todo_list, write_file)")
    assert "not a JSON object" in hermes("tools", "call", "roll", "{nope", check=2).stderr


def test_command_runs_a_plugin_command(home: Path) -> None:
    setup_dice(home)
    assert hermes("command", "dice-stats", "two", "words").stdout.strip() == "stats for 'two words'"
    failed = hermes("command", "explode", check=1)
    assert failed.stderr.strip() == "hermes: error: /explode (plugin 'dice') failed: ZeroDivisionError: division by zero"
    assert "unknown command /nope" in hermes("command", "nope", check=1).stderr


def test_errors_are_one_line_and_debug_shows_the_traceback(home: Path) -> None:
    setup_dice(home)
    plain = hermes("command", "explode", check=1)
    assert "Traceback" not in plain.stderr
    debug = hermes("--debug", "command", "explode", check=1)
    assert "Traceback" in debug.stderr and "ZeroDivisionError" in debug.stderr


def test_plugin_failures_are_one_line_warnings_and_the_cli_keeps_working(home: Path) -> None:
    setup_dice(home)
    write_config(home, "plugins:\n  enabled: [dice, broken]\n")
    result = hermes("tools", "list")
    assert "hermes: warning: plugin 'broken' failed to load: ImportError: missing native lib" in result.stderr
    assert "Traceback" not in result.stderr and "roll" in result.stdout


def test_plugins_add_cli_commands(home: Path) -> None:
    setup_dice(home)
    assert hermes("dice-info").stdout.strip() == "dice plugin dice"
    assert "dice-info" in hermes("--help").stdout


def test_a_plugin_whose_cli_hook_raises_keeps_none_of_its_commands(home: Path) -> None:
    make_folder_plugin(home / "plugins", "clibad", """
from hermes_core import hookimpl
@hookimpl
def register_cli_commands(cli):
    @cli.command("half-added")
    def half():
        pass
    raise RuntimeError("cli hook broke")
""")
    write_config(home, "plugins:\n  enabled: [clibad]\n")
    result = hermes("--help")
    assert "half-added" not in result.stdout
    assert "register_cli_commands of plugin 'clibad' failed: RuntimeError: cli hook broke" in result.stderr
    assert "No such command" in hermes("half-added", check=2).stderr


def test_usage_errors_are_one_line_too(home: Path) -> None:
    setup_dice(home)
    bad_json = hermes("tools", "call", "roll", "{nope", check=2)
    assert bad_json.stderr.count("\n") == 1 and "see `hermes tools call --help`" in bad_json.stderr
    unknown = hermes("no-such-command", check=2)
    assert unknown.stderr.count("\n") == 1 and unknown.stderr.startswith("hermes: error: No such command")
    assert hermes("--version").stdout.startswith("hermes, version ")
    assert "Usage:" in hermes("plugins", "--help").stdout


def test_enable_refuses_to_touch_a_config_of_the_wrong_shape(home: Path) -> None:
    setup_dice(home)
    path = write_config(home, "plugins: [dice]\n")
    result = hermes("plugins", "enable", "dice", check=1)
    assert result.stderr.count("\n") == 1 and "a mapping" in result.stderr
    assert path.read_text() == "plugins: [dice]\n"
