"""The managed scope: an administrator's config.yaml (here under $HERMES_MANAGED_DIR, a temporary
folder) wins over the user's key by key, for every read; writes to a managed key are refused."""

from __future__ import annotations

import collections
import json
import os
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from hermes_core import ConfigError, config_keys, edit_config, load_config
from tests.helpers import hermes, hermes_json, llm_config, make_folder_plugin, plugin_ctx, write_config

DICE = """
def register(ctx):
    ctx.register_tool("roll", "dice", {"name": "roll", "description": "Roll a die",
                                       "parameters": {"type": "object", "properties": {}}}, lambda args, **kw: "4")
"""


@pytest.fixture
def managed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "etc-hermes"
    folder.mkdir()
    monkeypatch.setenv("HERMES_MANAGED_DIR", str(folder))
    return folder


def write_managed(folder: Path, text: str) -> Path:
    path = folder / "config.yaml"
    path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return path


def test_a_managed_key_wins_over_the_users_and_its_siblings_stay_the_users(home: Path, managed: Path) -> None:
    write_config(home, """
        model: {provider: openai, model: user-model, base_url: http://user}
        plugins: {hook_callback_timeout: 9, enabled: [a, b]}
    """)
    write_managed(managed, """
        model: {provider: custom, base_url: http://managed}
        plugins: {enabled: [c]}
    """)
    config = load_config(home)
    assert config.read(config_keys.MODEL_ROUTE[0]) == "custom"
    assert config.read(config_keys.MODEL_MODEL) == "user-model"
    assert config.read(config_keys.MODEL_ROUTE[2]) == "http://managed"
    assert config.string_list("plugins.enabled") == ["c"]  # a list is one leaf: replaced whole
    assert config.read(config_keys.HOOK_CALLBACK_TIMEOUT) == 9.0
    assert config.managed_file("plugins", "enabled") == managed / "config.yaml"
    assert config.managed_file("plugins", "hook_callback_timeout") is None


def test_without_a_user_file_the_managed_settings_still_apply(home: Path, managed: Path) -> None:
    write_managed(managed, "plugins: {entries: {x: {llm: {allow_model_override: false}}}}\n")
    assert load_config(home).read(config_keys.LLM_ALLOW_MODEL_OVERRIDE, "x") is False


def test_a_managed_trust_entry_wins_over_the_users_grant(home: Path, managed: Path) -> None:
    write_config(home, "plugins: {entries: {x: {llm: {allow_model_override: true, allowed_models: [m1]}}}}\n")
    write_managed(managed, "plugins: {entries: {x: {llm: {allow_model_override: false}}}}\n")
    config = load_config(home)
    assert config.read(config_keys.LLM_ALLOW_MODEL_OVERRIDE, "x") is False
    assert config.section("plugins", "entries", "x", "llm")["allowed_models"] == ["m1"]


def test_the_plugin_gate_honours_a_managed_disabled_list(home: Path, managed: Path) -> None:
    make_folder_plugin(home / "plugins", "dice", DICE, "version: '1.0'\n")
    write_config(home, "plugins:\n  enabled: [dice]\n")
    assert {r["id"]: r for r in hermes_json("plugins", "list")}["dice"]["enabled"] is True
    assert "roll" in hermes("tools", "list").stdout
    write_managed(managed, "plugins:\n  disabled: [dice]\n")
    assert {r["id"]: r for r in hermes_json("plugins", "list")}["dice"]["enabled"] is False
    assert "roll" not in hermes("tools", "list").stdout


def test_enabling_a_plugin_when_the_list_is_managed_is_refused_naming_the_file(home: Path, managed: Path) -> None:
    make_folder_plugin(home / "plugins", "dice", DICE, "version: '1.0'\n")
    path = write_config(home, "# mine\nplugins:\n  enabled: []\n")
    managed_file = write_managed(managed, "plugins:\n  enabled: []\n")
    result = hermes("plugins", "enable", "dice", check=1)
    assert result.stderr.count("\n") == 1
    assert "plugins.enabled" in result.stderr and str(managed_file) in result.stderr
    assert path.read_text() == "# mine\nplugins:\n  enabled: []\n"
    write_managed(managed, "plugins:\n  disabled: [dice]\n")  # it would stay disabled: refused as well
    result = hermes("plugins", "enable", "dice", check=1)
    assert "plugins.disabled" in result.stderr and path.read_text() == "# mine\nplugins:\n  enabled: []\n"


def enabled(plugin_id: str) -> bool:
    return bool({r["id"]: r for r in hermes_json("plugins", "list")}[plugin_id]["enabled"])


def test_a_managed_disabled_list_refuses_enabling_only_the_plugins_it_lists(home: Path, managed: Path) -> None:
    make_folder_plugin(home / "plugins", "dice", DICE, "version: '1.0'\n")
    make_folder_plugin(home / "plugins", "notes", "def register(ctx):\n    pass\n", "version: '1.0'\n")
    path = write_config(home, "plugins:\n  enabled: []\n  disabled: [notes]\n")
    managed_file = write_managed(managed, "plugins:\n  disabled: [dice]\n")
    assert hermes("plugins", "enable", "notes", "--yes").stdout.startswith("enabled notes")
    assert enabled("notes") and not enabled("dice")
    # the user's disabled list is not read while the managed one replaces it: it is left as it was
    assert path.read_text() == "plugins:\n  enabled:\n  - notes\n  disabled: [notes]\n"
    for args in (("enable", "dice", "--yes"), ("disable", "notes")):  # what the managed list would undo
        refused = hermes("plugins", *args, check=1)
        assert refused.stderr.count("\n") == 1, refused.stderr
        assert f"cannot {args[0]} {args[1]}: plugins.disabled" in refused.stderr
        assert str(managed_file) in refused.stderr
        assert path.read_text() == "plugins:\n  enabled:\n  - notes\n  disabled: [notes]\n"
    assert hermes("plugins", "disable", "dice").stdout.startswith("dice was already disabled")


def test_a_managed_enabled_list_refuses_enabling_only_the_plugins_it_leaves_out(home: Path, managed: Path) -> None:
    make_folder_plugin(home / "plugins", "dice", DICE, "version: '1.0'\n")
    make_folder_plugin(home / "plugins", "notes", "def register(ctx):\n    pass\n", "version: '1.0'\n")
    path = write_config(home, "plugins:\n  disabled: [clock]\n")
    managed_file = write_managed(managed, "plugins:\n  enabled: [dice]\n")
    refused = hermes("plugins", "enable", "notes", "--yes", check=1)
    assert "plugins.enabled" in refused.stderr and str(managed_file) in refused.stderr
    assert hermes("plugins", "enable", "dice", "--yes").stdout.startswith("dice was already enabled")
    assert hermes("plugins", "enable", "clock").stdout.startswith("enabled clock")  # built in: loads unless disabled
    assert path.read_text() == "plugins:\n  disabled: []\n" and enabled("clock") and enabled("dice")


def test_a_managed_file_is_parsed_once_per_process_while_unchanged_and_an_edit_is_seen_at_once(
        home: Path, managed: Path) -> None:
    write_config(home, "plugins: {hook_callback_timeout: 9}\n")
    path = write_managed(managed, "plugins: {disabled: [aa]}\n")
    first = load_config(home).managed
    assert first is not None and load_config(home).managed is first  # just written: read again, not parsed again
    path.write_text("plugins: {disabled: [bb]}\n", encoding="utf-8")  # the same size, maybe the same clock tick
    assert load_config(home).string_list("plugins.disabled") == ["bb"]
    an_hour_ago = time.time() - 3600
    os.utime(path, (an_hour_ago, an_hour_ago))
    second = load_config(home).managed
    assert second is not None and second.data == {"plugins": {"disabled": ["bb"]}}
    assert load_config(home).managed is second and load_config(home).read(config_keys.HOOK_CALLBACK_TIMEOUT) == 9


def test_a_bare_model_name_is_the_model_in_config_yaml_and_in_the_managed_file_alike(home: Path, managed: Path) -> None:
    route = config_keys.MODEL_ROUTE
    write_config(home, "model: gpt-4o\n")
    assert load_config(home).read(route[1]) == "gpt-4o"
    write_managed(managed, "model: {provider: custom, base_url: http://managed}\n")
    config = load_config(home)
    assert (config.read(route[0]), config.read(route[1]), config.read(route[2])) == ("custom", "gpt-4o", "http://managed")
    assert hermes("config", "get", "model.model").stdout == "gpt-4o\n"
    write_config(home, "model: {provider: openai, model: mine}\n")
    managed_file = write_managed(managed, "model: gpt-4o\n")
    config = load_config(home)
    assert (config.read(route[0]), config.read(route[1])) == ("openai", "gpt-4o")
    path = write_config(home, "model: mine\n")
    refused = hermes("config", "set", "model", "other", check=1)  # a bare name is model.model, which is managed
    assert "model.model" in refused.stderr and str(managed_file) in refused.stderr
    assert path.read_text() == "model: mine\n"


def test_a_long_running_host_looks_at_the_managed_file_once_per_config_check(
        home: Path, managed: Path, llm_server: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    user = [{"role": "user", "content": "hi"}]
    config_file = llm_config(home, llm_server.url)
    managed_file = write_managed(managed, "plugins: {entries: {probe: {llm: {allow_model_override: false}}}}\n")
    an_hour_ago = time.time() - 3600
    for path in (config_file, managed_file):
        os.utime(path, (an_hour_ago, an_hour_ago))
    llm_server.always("ok")
    llm = plugin_ctx(home).llm
    llm.complete(user)
    stats: collections.Counter[str] = collections.Counter()
    stat = os.stat

    def counted(path: Any, *args: Any, **kwargs: Any) -> os.stat_result:
        stats[os.fspath(path)] += 1
        return stat(path, *args, **kwargs)

    monkeypatch.setattr(os, "stat", counted)
    for _ in range(3):
        llm.complete(user)
    monkeypatch.setattr(os, "stat", stat)
    assert stats[str(config_file)] >= 3  # the host checks config.yaml on every call...
    assert stats[str(managed_file)] == stats[str(config_file)] and stats[str(managed)] == 0  # ...and the managed file once
    write_managed(managed, "plugins: {entries: {probe: {llm: {allow_model_override: true}}}}\n")
    assert llm.complete(user, model="pinned").model == "pinned"  # an edit of the managed file applies at once


def test_config_set_of_a_managed_key_is_refused_and_of_another_key_is_written(home: Path, managed: Path) -> None:
    path = write_config(home, "# keep this\nmodel:\n  model: mine\n")
    managed_file = write_managed(managed, "model:\n  provider: custom\n")
    before = path.read_bytes()
    refused = hermes("config", "set", "model.provider", "openai", check=1)
    assert refused.stderr.count("\n") == 1
    assert "model.provider" in refused.stderr and str(managed_file) in refused.stderr
    assert "administrator" in refused.stderr and path.read_bytes() == before
    assert hermes("config", "unset", "model.provider", check=1).stderr.count("\n") == 1
    hermes("config", "set", "model.model", "other")
    assert path.read_text() == "# keep this\nmodel:\n  model: other\n"


def test_config_set_under_a_key_that_holds_a_value_says_which_key_to_unset(home: Path) -> None:
    path = write_config(home, "model:\n  provider: custom\n")
    refused = hermes("config", "set", "model.provider.name", "x", check=1)
    assert refused.stderr.count("\n") == 1
    assert "model.provider" in refused.stderr and "hermes config unset model.provider" in refused.stderr
    assert path.read_text() == "model:\n  provider: custom\n"


def test_an_edit_through_the_api_that_changes_a_managed_key_writes_nothing(home: Path, managed: Path) -> None:
    path = write_config(home, "plugins:\n  entries:\n    x:\n      allow_tool_override: false\n")
    write_managed(managed, "plugins:\n  entries:\n    x:\n      allow_tool_override: false\n")
    before = path.read_bytes()

    def grant(document: dict) -> None:  # type: ignore[type-arg]
        document["plugins"]["entries"]["x"] = {"allow_tool_override": True, "settings": {"k": 1}}

    with pytest.raises(ConfigError, match="plugins.entries.x.allow_tool_override"):
        edit_config(grant, home)
    assert path.read_bytes() == before


def test_config_show_marks_the_managed_keys(home: Path, managed: Path) -> None:
    write_config(home, "model:\n  model: mine\n")
    managed_file = write_managed(managed, "plugins:\n  disabled: [dice]\n  entries:\n    a.b:\n      settings: {k: 1}\n")
    shown = hermes_json("config", "show")
    assert shown["managed_file"] == str(managed_file)
    assert shown["managed_keys"] == ["plugins.disabled", "plugins.entries.a\\.b.settings.k"]
    assert shown["config"]["model"] == {"model": "mine"} and shown["config"]["plugins"]["disabled"] == ["dice"]
    text = hermes("config").stdout
    assert f"managed by your administrator ({managed_file})" in text and "#   plugins.disabled" in text
    got = hermes("config", "get", "plugins.disabled")
    assert got.stdout.strip() == "- dice" and str(managed_file) in got.stderr


def test_a_broken_managed_file_stops_every_read_with_one_line_naming_it(home: Path, managed: Path) -> None:
    make_folder_plugin(home / "plugins", "dice", DICE, "version: '1.0'\n")
    write_config(home, "plugins:\n  enabled: [dice]\n")
    managed_file = write_managed(managed, "plugins:\n  disabled: [dice\n")
    for args in (("plugins", "list"), ("tools", "list"), ("config", "show")):
        result = hermes(*args, check=1)
        assert result.stderr.count("\n") == 1, result.stderr
        assert str(managed_file) in result.stderr and "administrator" in result.stderr
    with pytest.raises(ConfigError, match="line 3"):
        load_config(home)


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a file whatever its mode")
def test_an_unreadable_managed_file_is_an_error_not_the_users_values(home: Path, managed: Path) -> None:
    managed_file = write_managed(managed, "plugins:\n  disabled: [dice]\n")
    managed_file.chmod(0)
    try:
        with pytest.raises(ConfigError, match="cannot read"):
            load_config(home)
    finally:
        managed_file.chmod(0o644)


def test_a_managed_dir_variable_naming_no_folder_is_an_error(home: Path, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HERMES_MANAGED_DIR", str(tmp_path / "nowhere"))
    result = hermes("plugins", "list", check=1)
    assert "HERMES_MANAGED_DIR" in result.stderr and result.stderr.count("\n") == 1


def test_a_wrong_value_in_a_managed_key_names_the_managed_file(home: Path, managed: Path) -> None:
    managed_file = write_managed(managed, "plugins:\n  hook_callback_timeout: soon\n")
    with pytest.raises(ConfigError) as error:
        load_config(home).read(config_keys.HOOK_CALLBACK_TIMEOUT)
    assert str(managed_file) in str(error.value) and "administrator" in str(error.value)


def test_the_hermes_cli_config_reader_sees_the_managed_values(home: Path, managed: Path) -> None:
    write_config(home, "model: {model: mine, provider: openai}\n")
    write_managed(managed, "model: {provider: custom}\n")
    from hermes_cli.config import load_config as hermes_load_config

    loaded = hermes_load_config()
    assert loaded["model"]["provider"] == "custom" and loaded["model"]["default"] == "mine"
    assert json.dumps(loaded)


SETTER = """
def register(ctx):
    def setk(args, **kw):
        try:
            ctx.set_config("endpoint", "http://mine")
        except PermissionError as exc:  # as Hermes raises it for an administrator-managed setting
            return "refused: " + str(exc)
        return "set"

    ctx.register_tool("setk", "setter", {"name": "setk", "description": "Set a setting",
                                         "parameters": {"type": "object", "properties": {}}}, setk)
"""


def test_a_plugins_set_config_of_a_managed_setting_is_a_permission_error(home: Path, managed: Path) -> None:
    make_folder_plugin(home / "plugins", "setter", SETTER, "version: '1.0'\n")
    path = write_config(home, "plugins:\n  enabled: [setter]\n")
    managed_file = write_managed(managed, "plugins:\n  entries:\n    setter:\n      settings:\n        endpoint: http://it\n")
    answer = hermes("tools", "call", "setk", "{}").stdout
    assert answer.startswith("refused: cannot change plugins.entries.setter.settings.endpoint")
    assert str(managed_file) in answer and path.read_text() == "plugins:\n  enabled: [setter]\n"
    write_managed(managed, "plugins:\n  entries:\n    setter:\n      settings:\n        other: 1\n")
    assert hermes("tools", "call", "setk", "{}").stdout.strip() == "set"


def test_hermes_cli_managed_scope_answers_as_hermes_does(home: Path, managed: Path) -> None:
    write_managed(managed, "model: {provider: custom}\nplugins: {enabled: [a]}\n")
    from hermes_cli import managed_scope

    assert managed_scope.get_managed_dir() == managed
    assert managed_scope.managed_config_keys() == {"model.provider", "plugins.enabled"}
    assert managed_scope.is_key_managed("plugins.enabled") and not managed_scope.is_key_managed("plugins.disabled")
    merged = managed_scope.apply_managed_overlay({"model": {"provider": "openai", "model": "m"}})
    assert merged["model"] == {"provider": "custom", "model": "m"} and merged["plugins"] == {"enabled": ["a"]}
    assert managed_scope.apply_managed_overlay({"model": "bare"})["model"] == {"provider": "custom", "model": "bare"}
    assert managed_scope.load_managed_env() == {} and managed_scope.is_env_managed("OPENAI_API_KEY") is False


def test_config_show_masks_secrets_and_shows_what_json_cannot_hold(home: Path, managed: Path) -> None:
    write_config(home, "platforms:\n  telegram: {token: '123456:ABCdefGHIjkl', chat: ops}\n"
                       "providers:\n  mine: {api_key: plain-looking, base_url: 'https://u:hunter2@proxy.example/v1'}\n"
                       "since: 2024-01-01\n")
    write_managed(managed, "model: {provider: custom, base_url: http://managed}\n")
    for shown in (hermes("config", "show").stdout, hermes("config", "show", "--json").stdout,
                  hermes("config", "get", "providers").stdout, hermes("config", "get", "platforms", "--json").stdout):
        assert "123456:ABC" not in shown and "plain-looking" not in shown and "hunter2" not in shown, shown
    assert "[REDACTED]" in hermes("config", "get", "platforms.telegram").stdout
    assert json.loads(hermes("config", "show", "--json").stdout)["config"]["platforms"]["telegram"]["chat"] == "ops"
    assert "since: '2024-01-01'" in hermes("config", "show").stdout  # a date read by YAML, shown as its text
    assert hermes("config", "get", "since").stdout == "2024-01-01\n"
    assert hermes("config", "get", "platforms.telegram.token").stdout == "123456:ABCdefGHIjkl\n"  # asked for by name


def test_config_set_and_unset_under_a_bare_model_name_edit_the_model_mapping(home: Path) -> None:
    path = write_config(home, "model: gpt-4o  # the default\n")
    hermes("config", "set", "model.provider", "openai")
    assert load_config(home).section("model") == {"model": "gpt-4o", "provider": "openai"}
    assert "# the default" in path.read_text()
    write_config(home, "model: gpt-4o\n")
    hermes("config", "unset", "model.model")
    assert hermes("config", "get", "model.model", check=1).stderr.startswith("hermes: error: model.model is not set")
    hermes("config", "set", "notes", "")
    assert load_config(home).section().get("notes") == ""  # empty text stays text, not null
