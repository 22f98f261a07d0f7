"""`hermes plugins list` answered at start-up, before click is imported: the same bytes and exit
code as the click command for every combination of its options, and click for anything else.

The console script (`hermes`) takes the start-up path; `hermes_core.cli.main` is the click
command line itself, so each test runs both as subprocesses and compares what they print.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import HERMES, install_dist, make_folder_plugin, write_config

CLICK_MAIN = "from hermes_core.cli import main; main()"


def run(*args: str, click: bool = False, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    """Exit code, stdout and stderr of `hermes ARGS`: the console script, or the click CLI."""
    command = [sys.executable, "-c", CLICK_MAIN, *args] if click else [str(HERMES), *args]
    result = subprocess.run(command, capture_output=True, env=env, timeout=120)
    return result.returncode, result.stdout.decode("utf-8", "replace"), result.stderr.decode("utf-8", "replace")


def imported(*args: str, env: dict[str, str] | None = None) -> set[str]:
    """The modules the console script imports for `hermes ARGS` (from `python -X importtime`)."""
    result = subprocess.run([sys.executable, "-X", "importtime", str(HERMES), *args],
                            capture_output=True, text=True, env=env, timeout=120)
    return {line.split("|")[-1].strip() for line in result.stderr.splitlines() if line.startswith("import time:")}


def list_flags() -> list[str]:
    """The options of `hermes plugins list`, as its `--help` (click's) shows them, `--help` aside."""
    code, out, _ = run("plugins", "list", "--help", click=True)
    assert code == 0
    flags = re.findall(r"^\s+(--[a-z][a-z-]*)", out, re.MULTILINE)
    return [flag for flag in flags if flag != "--help"]


def option_lines() -> list[list[str]]:
    """Every combination of the listing's options, in every order, and each given twice."""
    flags = list_flags()
    assert flags, "`hermes plugins list --help` shows no option: the combinations would prove little"
    lines: list[list[str]] = []
    for size in range(len(flags) + 1):
        for chosen in itertools.permutations(flags, size):
            lines.append(list(chosen))
    lines += [[flag, flag] for flag in flags]
    return lines


@pytest.fixture
def plugins(home: Path, site: Path) -> Path:
    """Plugins of every source and state: enabled, disabled, active, broken, needing the host,
    shadowed, and entry points discovery skips (the listing warns about those on stderr)."""
    make_folder_plugin(home / "plugins", "notes", "def register(ctx):\n    pass\n",
                       "name: notes\nversion: '2.1'\ndescription: Notes — with a dash and ünïcode\n")
    make_folder_plugin(home / "plugins", "broken", "", "name: [not, a, name]\n")
    make_folder_plugin(home / "plugins" / "memory", "vec", "", "description: vectors\n")
    install_dist(site, "hermes-ep", {"ep": "hermes_ep_module", "bad name!": "hermes_ep_module"},
                 {"hermes_ep_module": "def register(ctx):\n    pass\n"}, summary="An entry-point plugin")
    install_dist(site, "hermes-gw", {"gw": "hermes_gw_module"},
                 {"hermes_gw_module": "from gateway.hooks import X\n"}, summary="needs the host")
    install_dist(site, "hermes-notes", {"notes": "hermes_notes_module"},
                 {"hermes_notes_module": ""}, summary="shadows the folder plugin")
    write_config(home, "plugins:\n  enabled: [notes, ep, gw]\n  disabled: [clock]\nmemory:\n  provider: vec\n"
                       "mcp_servers:\n  echo:\n    command: python3\n")
    return home


@pytest.mark.parametrize("config", ["none", "yaml"])
def test_every_option_combination_prints_what_the_click_command_prints(plugins: Path, config: str) -> None:
    if config == "none":
        (plugins / "config.yaml").unlink()
    for args in option_lines():
        fast = run("plugins", "list", *args)
        assert fast == run("plugins", "list", *args, click=True), args
        assert fast[0] == 0 and fast[1], args
    code, out, err = run("plugins", "list")
    assert "ep " in out and "BROKEN" in out and "bad name!" in err  # the rows and the warnings compared above


# What of hermes-core the listing imported before the host layer and the stand-ins moved: it imports no more.
BEFORE_ISSUE_41 = {
    "hermes_core", "hermes_core._version", "hermes_core._errors", "hermes_core._quote", "hermes_core._paths",
    "hermes_core._files", "hermes_core._config", "hermes_core._config.config", "hermes_core._config.file",
    "hermes_core._config.managed", "hermes_core._config.parse",
    "hermes_core._discovery", "hermes_core._discovery.discover", "hermes_core._discovery.entry_points",
    "hermes_core._discovery.manifest", "hermes_core._discovery.source_scan", "hermes_core._discovery.spec",
    "hermes_core._hermes", "hermes_core._hermes.host", "hermes_core._hermes.names", "hermes_core._slots", "hermes_core._slots.declarations",
    "hermes_core.cli", "hermes_core.cli._listing", "hermes_core.cli._start", "hermes_core.cli._tables",
    "hermes_core.config_keys._values",  # issue 44: config_keys split in two (the table, and Key with its checks)
    "hermes_core._profiles", "hermes_core._profiles.names", "hermes_core._profiles.select",  # issue 58: `-p NAME`
    "hermes_core.config_keys._prompt_files",  # issue 58: the prompt files' keys (imports only _values)
    "hermes_core.config_keys._observability",  # issue 59: the observability.* keys, in a module of their own
    "hermes_core.config_keys._budgets",  # issue 55: the budgets' keys in a module of their own
}


def test_the_listing_imports_no_click_no_plugin_no_openai_no_mcp_and_no_ray(plugins: Path) -> None:
    for args in option_lines():  # the config names an MCP server: listing plugins starts none
        modules = imported("plugins", "list", *args)
        assert "hermes_core._discovery.discover" in modules  # the probe sees the listing's imports...
        heavy = {"click", "openai", "jsonschema", "pluggy", "mcp", "ray", "uvicorn", "starlette", "anyio", "croniter",
                 "acp", "pydantic"}
        assert not {m for m in modules if m.split(".")[0] in heavy}, args
        assert not {m for m in modules if m.split(".")[:2] in (["hermes_core", "batch"], ["hermes_core", "_standins"],
                                                               ["hermes_core", "hosting"], ["hermes_core", "mcp_server"],
                                                               ["hermes_core", "acp_server"], ["hermes_core", "api_server"],
                                                               ["hermes_core", "cron"])}
        assert {m for m in modules if m.split(".")[0] == "hermes_core"} <= BEFORE_ISSUE_41, args
        assert not {"hermes_ep_module", "hermes_gw_module", "hermes_notes_module"} & modules  # ...and no plugin


def test_a_managed_file_adds_no_heavy_import_to_the_listing(plugins: Path, tmp_path: Path) -> None:
    folder = tmp_path / "etc-hermes"
    folder.mkdir()
    (folder / "config.yaml").write_text("plugins:\n  disabled: [notes]\n", encoding="utf-8")
    env = os.environ | {"HERMES_MANAGED_DIR": str(folder)}
    modules = imported("plugins", "list", "--json", env=env)
    assert "hermes_core._discovery.discover" in modules
    heavy = {"click", "openai", "jsonschema", "pluggy", "attrs", "mcp", "pydantic"}
    assert not {m for m in modules if m.split(".")[0] in heavy}
    assert {m for m in modules if m.split(".")[0] == "hermes_core"} <= BEFORE_ISSUE_41
    code, out, err = run("plugins", "list", "--json", env=env)
    assert (code, out, err) == run("plugins", "list", "--json", env=env, click=True)
    assert code == 0 and {row["id"]: row["enabled"] for row in json.loads(out)}["notes"] is False


@pytest.mark.parametrize("args", [
    ["plugins", "list", "--help"],
    ["plugins", "list", "-h"],
    ["plugins", "list", "--jsn"],
    ["plugins", "list", "--json=yes"],
    ["plugins", "list", "extra"],
    ["plugins", "list", "--"],
    ["--debug", "plugins", "list"],
    ["plugins", "--help"],
    ["plugins", "info", "ep"],
])
def test_anything_else_is_left_to_click(plugins: Path, args: list[str]) -> None:
    assert "click" in imported(*args)
    assert run(*args) == run(*args, click=True)


def test_shell_completion_is_left_to_click(plugins: Path) -> None:
    env = os.environ | {"_HERMES_COMPLETE": "bash_complete", "COMP_WORDS": "hermes plugins list", "COMP_CWORD": "2"}
    assert "click" in imported("plugins", "list", env=env)
    assert run("plugins", "list", env=env) == run("plugins", "list", env=env, click=True)


def test_a_malformed_config_is_reported_by_click(plugins: Path) -> None:
    write_config(plugins, "plugins: [unclosed\n")
    assert "click" in imported("plugins", "list")
    code, out, err = run("plugins", "list")
    assert (code, out, err) == run("plugins", "list", click=True)
    assert code != 0 and err.startswith("hermes: error:") and "config.yaml" in err


def test_terminal_escapes_in_a_description_are_left_to_click(plugins: Path, site: Path) -> None:
    install_dist(site, "hermes-red", {"red": "hermes_red_module"}, {"hermes_red_module": ""},
                 summary="\x1b[31mred\x1b[0m")
    assert "click" in imported("plugins", "list")
    code, out, err = run("plugins", "list")
    assert (code, out, err) == run("plugins", "list", click=True)
    assert "red" in out and "\x1b" not in out  # click strips them from a pipe
    assert "click" not in imported("plugins", "list", "--json")  # JSON escapes them itself
    assert run("plugins", "list", "--json") == run("plugins", "list", "--json", click=True)


def test_a_stream_that_is_not_utf8_is_left_to_click(plugins: Path) -> None:
    env = os.environ | {"PYTHONIOENCODING": "ascii"}
    assert "click" in imported("plugins", "list", env=env)
    for args in option_lines():
        assert run("plugins", "list", *args, env=env) == run("plugins", "list", *args, env=env, click=True), args


GREETER = """
def register(ctx):
    ctx.register_cli_command("greet", "Say hello to someone", lambda parser: None, lambda args: 0)
"""
HELP_LINES = [[], ["--help"], ["-h"]]  # what click answers with `hermes --help`'s text


@pytest.fixture
def greeter(plugins: Path) -> Path:
    """The `plugins` fixture's plugins and one that adds a command to `hermes`."""
    make_folder_plugin(plugins / "plugins", "greeter", GREETER, "name: greeter\n")
    write_config(plugins, "plugins:\n  enabled: [notes, ep, gw, greeter]\n")
    return plugins


def rendered_twice(env: dict[str, str] | None = None) -> str:
    """`hermes --help` through click twice: the first loads the plugins to learn their commands,
    the second lists them from that load and keeps the text it renders."""
    assert "click" in imported("--help", env=env)
    code, out, _ = run("--help", env=env)
    assert code == 0
    return out


def test_help_is_printed_without_click_once_click_has_rendered_it(greeter: Path) -> None:
    text = rendered_twice()
    assert "greet" in text and "Say hello to someone" in text and "plugins" in text
    for args in HELP_LINES:
        modules = imported(*args)
        assert "hermes_core.cli._command_cache" in modules, args  # the probe sees the start-up path's imports...
        assert not {m for m in modules if m.split(".")[0] in {"click", "openai", "pluggy"}}, args
        assert not {"hermes_plugins.greeter", "hermes_ep_module"} & modules, args  # ...and no plugin
        assert run(*args) == run(*args, click=True) == (0, text, ""), args


@pytest.mark.parametrize("change", ["width", "language", "disabled", "installed", "edited"])
def test_help_is_rendered_again_when_what_it_shows_may_have_changed(greeter: Path, site: Path, change: str) -> None:
    before = rendered_twice()
    env = None
    if change == "width":
        env = os.environ | {"COLUMNS": "56"}
    elif change == "language":
        env = os.environ | {"LANGUAGE": "de"}
    elif change == "disabled":
        write_config(greeter, "plugins:\n  enabled: [notes, ep, gw]\n")
    elif change == "installed":
        install_dist(site, "hermes-hi", {"hi": "hermes_hi_module"},
                     {"hermes_hi_module": GREETER.replace('"greet", "Say hello', '"hi", "Say hi')})
        write_config(greeter, "plugins:\n  enabled: [notes, ep, gw, greeter, hi]\n")
    else:  # a different length: Python's bytecode cache trusts a source of the same size and second
        (greeter / "plugins" / "greeter" / "__init__.py").write_text(GREETER.replace("Say hello to someone", "Greet anyone"))
    runs = []
    for _ in range(3):  # click renders it (after loading the plugins once if they changed), then it is kept
        through_click = "click" in imported("--help", env=env)
        runs.append((through_click, run("--help", env=env)))
    assert runs[0][0] and not runs[-1][0], runs
    after = run("--help", env=env, click=True)
    assert all(output == after for _, output in runs) and after[0] == 0
    assert (after[1] != before) == (change != "language")  # (no translation of click's words here)
    shown = {"width": "Say hello to someone", "language": "Say hello to someone", "installed": "Say hi to someone",
             "edited": "Greet anyone"}
    assert shown[change] in after[1] if change in shown else "greet" not in after[1]


@pytest.mark.parametrize("damage", ["not JSON", "wrong shapes", "a text that is not one"])
def test_a_damaged_cache_file_is_left_to_click_and_written_again(greeter: Path, damage: str) -> None:
    text = rendered_twice()
    cache = greeter / ".cache" / "cli-commands.json"
    kept = json.loads(cache.read_text(encoding="utf-8"))
    cache.write_text({"not JSON": '{"key": "', "wrong shapes": '{"key": [], "commands": [], "help": 3}',
                      "a text that is not one": json.dumps(kept | {"help": {k: 42 for k in kept["help"]}})}[damage],
                     encoding="utf-8")
    assert "click" in imported("--help")
    for _ in range(2):  # rendered by click (after loading the plugins, when the command list was lost too), kept
        code, out, _ = run("--help")
        assert (code, out) == (0, text)
    assert "click" not in imported("--help")
    assert json.loads(cache.read_text(encoding="utf-8"))["help"]  # a whole file again
