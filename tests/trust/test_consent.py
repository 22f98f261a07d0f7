"""Consent to capabilities, answered at a terminal: the grant is stored with the hash of the set of
capabilities the user answered about (`plugins.entries.<id>.capabilities_consent`, Hermes' shape);
an update asking for another set is asked about again, and what it adds stays ungranted until the
user says yes; an unchanged set is not asked about again; `--yes` grants nothing. Real wheels,
installed through the CLI on a pseudo-terminal."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path

from ruamel.yaml import YAML

from tests.helpers import Screen, make_folder_plugin
from tests.trust.conftest import Hermes
from tests.trust.wheels import write_wheel

OVERRIDER = '''
    def register(ctx):
        ctx.register_tool("web_search", "web", {"name": "web_search", "parameters": {}}, lambda args, **kw: "[]")
'''


def release(wheelhouse: Path, version: str, capabilities: list[str]) -> Path:
    return write_wheel(wheelhouse, "hermes-search-swap", {
        "hermes_search_swap/__init__.py": OVERRIDER,
        "hermes_search_swap/plugin.yaml": f"name: search-swap\ncapabilities: [{', '.join(capabilities)}]\n"},
        version=version, entry_points={"search-swap": "hermes_search_swap"})


def entry(home: Path) -> dict:
    return YAML(typ="safe").load((home / "config.yaml").read_text())["plugins"]["entries"]["search-swap"]


def set_hash(*capabilities: str) -> str:
    return hashlib.sha256("\n".join(sorted(capabilities)).encode()).hexdigest()


def answer(screen: Screen, *prompts: tuple[str, str]) -> str:
    for question, key in prompts:
        screen.expect(f"{question} [y/N]: ")
        screen.type(key + "\r")
    return screen.finish()


def test_the_grant_is_stored_with_its_hash_and_an_update_adding_a_capability_is_asked_again(
        home: Path, hermes_env: Hermes, hermes_pty: Callable[..., Screen], wheelhouse: Path) -> None:
    release(wheelhouse, "1.0", ["tools.override"])
    first = answer(hermes_pty("plugins", "install", "hermes-search-swap"),
                   ("Install hermes-search-swap 1.0 (1 file(s))?", "y"), ("Enable search-swap?", "y"),
                   ("Grant tools.override to search-swap?", "y"))
    assert "granted tools.override to search-swap" in first
    granted = entry(home)
    assert granted["granted_capabilities"] == ["tools.override"]
    assert granted["capabilities_consent"]["hash"] == set_hash("tools.override")

    # an update asking for more, installed without a terminal: enabled, the new capability not granted
    release(wheelhouse, "1.1", ["tools.override", "llm.model_override"])
    update = hermes_env("plugins", "install", "--yes", "--upgrade", "hermes-search-swap")
    assert "  asks for llm.model_override: ctx.llm may choose its model (not granted)" in update.stderr.splitlines()
    assert entry(home)["granted_capabilities"] == ["tools.override"]
    assert entry(home)["capabilities_consent"] == granted["capabilities_consent"]  # --yes answered nothing

    # at a terminal, the changed set is asked about; a no is remembered with the hash of what was shown
    release(wheelhouse, "1.2", ["tools.override", "llm.model_override"])
    declined = answer(hermes_pty("plugins", "install", "--upgrade", "hermes-search-swap"),
                      ("Install hermes-search-swap 1.2 (1 file(s))?", "y"), ("Enable search-swap?", "y"),
                      ("Grant llm.model_override to search-swap?", "n"))
    assert "it asks for other capabilities than when you answered on " in declined
    assert "search-swap runs without llm.model_override" in declined
    assert entry(home)["granted_capabilities"] == ["tools.override"]
    assert entry(home)["capabilities_consent"]["hash"] == set_hash("tools.override", "llm.model_override")

    # the same set again: not asked again, and said so
    release(wheelhouse, "1.3", ["llm.model_override", "tools.override"])
    same = answer(hermes_pty("plugins", "install", "--upgrade", "hermes-search-swap"),
                  ("Install hermes-search-swap 1.3 (1 file(s))?", "y"), ("Enable search-swap?", "y"))
    assert "(not granted; you answered about these same capabilities on " in same
    assert ", so it is not asked again)" in same
    assert "Grant " not in same

    # a set that changes again is asked about again, and a yes grants what was asked
    release(wheelhouse, "1.4", ["tools.override", "llm.model_override", "gateway.platform_actions"])
    again = answer(hermes_pty("plugins", "install", "--upgrade", "hermes-search-swap"),
                   ("Install hermes-search-swap 1.4 (1 file(s))?", "y"), ("Enable search-swap?", "y"),
                   ("Grant llm.model_override, gateway.platform_actions to search-swap?", "y"))
    assert "granted llm.model_override, gateway.platform_actions to search-swap" in again
    assert entry(home)["granted_capabilities"] == ["tools.override", "llm.model_override", "gateway.platform_actions"]
    assert entry(home)["capabilities_consent"]["hash"] == set_hash("tools.override", "llm.model_override",
                                                                   "gateway.platform_actions")


def test_a_non_interactive_install_grants_nothing_and_records_no_consent(
        home: Path, hermes_env: Hermes, wheelhouse: Path) -> None:
    release(wheelhouse, "1.0", ["tools.override"])
    result = hermes_env("plugins", "install", "--yes", "hermes-search-swap")
    assert result.stdout.splitlines() == ["installed hermes-search-swap 1.0", "enabled search-swap"]
    config = (home / "config.yaml").read_text()
    assert "granted_capabilities" not in config and "capabilities_consent" not in config


DICE = '''
    def register(ctx):
        ctx.register_hook("pre_tool_call", lambda **kw: None)
        ctx.register_tool("roll", "dice", {"name": "roll", "parameters": {}}, lambda args, **kw: "4")

    def ask(ctx):
        return ctx.llm
'''


def enabled(home: Path) -> list[str]:
    config = home / "config.yaml"
    return ((YAML(typ="safe").load(config.read_text()) if config.exists() else None) or {}).get(
        "plugins", {}).get("enabled") or []


def test_enabling_a_plugin_shows_what_it_can_do_and_asks_once_for_this_set_of_capabilities(
        home: Path, hermes_env: Hermes, hermes_pty: Callable[..., Screen]) -> None:
    folder = make_folder_plugin(home / "plugins", "dice", DICE, "name: dice\ncapabilities: [tools.override]\n")
    # no terminal to ask at (a script): enabled as with --yes, no capability granted, and said so
    scripted = hermes_env("plugins", "enable", "dice")
    assert scripted.stdout.strip() == "enabled dice" and "asks for tools.override" in scripted.stderr
    assert "no terminal to ask at: dice is enabled as with --yes, granted no capability" in scripted.stderr
    entry = YAML(typ="safe").load((home / "config.yaml").read_text())["plugins"].get("entries", {}).get("dice", {})
    assert not entry.get("granted_capabilities") and "capabilities_consent" not in entry
    hermes_env("plugins", "disable", "dice")
    # at a terminal: the dry run (in a process of its own) and the capabilities, then the questions
    declined = hermes_pty("plugins", "enable", "dice")
    shown = answer(declined, ("Enable dice?", "n"))
    assert "hooks: pre_tool_call (can block or change any tool call)" in shown and "tools: roll" in shown
    assert "asks for tools.override" in shown and "uses ctx.llm: it calls the model, which costs money" in shown
    assert "dice was not enabled" in shown and "dice" not in enabled(home)
    said = answer(hermes_pty("plugins", "enable", "dice"), ("Enable dice?", "y"), ("Grant tools.override to dice?", "y"))
    assert "granted tools.override to dice" in said and "enabled dice" in said
    assert enabled(home) == ["dice"]
    stored = YAML(typ="safe").load((home / "config.yaml").read_text())["plugins"]["entries"]["dice"]
    assert stored["granted_capabilities"] == ["tools.override"]
    assert stored["capabilities_consent"]["hash"] == set_hash("tools.override")
    # the same set answered: enabled again at once, even without a terminal
    hermes_env("plugins", "disable", "dice")
    again = hermes_env("plugins", "enable", "dice")
    assert again.stdout.strip() == "enabled dice" and "will be able to" not in again.stderr
    # an update asking for another capability is asked about again; --yes enables it and grants nothing
    (folder / "plugin.yaml").write_text("name: dice\ncapabilities: [tools.override, llm.model_override]\n")
    hermes_env("plugins", "disable", "dice")
    scripted = hermes_env("plugins", "enable", "--yes", "dice")
    assert scripted.stdout.strip() == "enabled dice"
    assert "asks for llm.model_override" in scripted.stderr and "--yes grants no capability" in scripted.stderr
    stored = YAML(typ="safe").load((home / "config.yaml").read_text())["plugins"]["entries"]["dice"]
    assert stored["granted_capabilities"] == ["tools.override"]
    assert stored["capabilities_consent"]["hash"] == set_hash("tools.override")  # --yes answered nothing


def test_a_builtin_plugin_is_enabled_without_a_question(home: Path, hermes_env: Hermes) -> None:
    import json

    listed = json.loads(hermes_env("plugins", "list", "--json").stdout)
    builtin = next(row["id"] for row in listed if row["source"] == "builtin")
    result = hermes_env("plugins", "enable", builtin)
    assert "will be able to" not in result.stderr and builtin in result.stdout
