"""config.yaml: round-trip edits that keep the operator's work, atomic writes, clear errors."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from hermes_core import ConfigError, edit_config, load_config
from tests.helpers import HERMES, hermes, make_folder_plugin, write_config

OPERATOR_CONFIG = """\
# My hermes setup -- do not lose this comment
model:
  provider: openrouter   # the cheap one
  model: some/model

plugins:
  # plugins I trust
  enabled:
    - alpha        # first
  disabled: [beta]
  entries:
    alpha:
      settings: {depth: 2}
"""


@pytest.fixture
def plugins(home: Path) -> Path:
    for name in ("alpha", "beta", "gamma"):
        make_folder_plugin(home / "plugins", name, "def register(ctx):\n    pass\n")
    return home


def test_enable_and_disable_keep_comments_order_and_formatting(plugins: Path) -> None:
    path = write_config(plugins, OPERATOR_CONFIG)
    assert hermes("plugins", "enable", "--yes", "gamma").stdout.strip() == "enabled gamma"
    assert hermes("plugins", "enable", "--yes", "beta").stdout.strip() == "enabled beta"
    hermes("plugins", "disable", "alpha")
    text = path.read_text()
    for kept in ("# My hermes setup -- do not lose this comment", "provider: openrouter   # the cheap one",
                 "# plugins I trust", "settings: {depth: 2}"):
        assert kept in text
    assert text.index("model:") < text.index("plugins:")
    config = load_config(plugins)
    assert config.get("plugins.enabled") == ["gamma", "beta"]
    assert config.get("plugins.disabled") == ["alpha"]
    assert hermes("plugins", "enable", "gamma").stdout.strip() == "gamma was already enabled"


def test_enable_creates_the_file_and_the_home(tmp_path: Path, monkeypatch) -> None:
    home = tmp_path / "new-home"
    monkeypatch.setenv("HERMES_HOME", str(home))
    hermes("plugins", "enable", "clock")
    assert load_config(home).get("plugins.enabled") == ["clock"]


def test_enable_of_an_unknown_plugin_is_an_error_listing_what_exists(plugins: Path) -> None:
    result = hermes("plugins", "enable", "nope", check=1)
    assert result.stderr.count("\n") == 1
    assert "no plugin 'nope'" in result.stderr and "alpha" in result.stderr
    assert not (plugins / "config.yaml").exists()


@pytest.mark.parametrize("command", [["plugins", "enable", "alpha"], ["plugins", "list"], ["plugins", "doctor"],
                                     ["tools", "list"]])
def test_malformed_config_is_reported_with_line_and_column_and_never_overwritten(plugins: Path, command) -> None:
    broken = "plugins:\n  enabled: [alpha\n  disabled: []\n"
    path = write_config(plugins, broken)
    before = path.read_bytes()
    result = hermes(*command, check=1)
    assert "line 3, column" in result.stderr and str(path) in result.stderr
    assert "Traceback" not in result.stderr and result.stderr.count("\n") == 1
    assert path.read_bytes() == before


def test_config_that_is_not_a_mapping(plugins: Path) -> None:
    write_config(plugins, "- just\n- a list\n")
    with pytest.raises(ConfigError, match="mapping of settings at the top level"):
        load_config(plugins)


@pytest.mark.parametrize(("text", "key", "expected"), [
    ("plugins:\n  enabled: alpha\n", "plugins.enabled", "list of strings"),
    ("plugins: [alpha]\n", "plugins", "a mapping"),
    ("plugins:\n  hook_callback_timeout: soon\n", "plugins.hook_callback_timeout", "a number of seconds"),
])
def test_wrong_types_name_the_key(plugins: Path, text: str, key: str, expected: str) -> None:
    write_config(plugins, text)
    result = hermes("plugins", "doctor", check=1)
    assert f"{key} in" in result.stderr and expected in result.stderr
    assert result.stderr.count("\n") == 1


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temporary(plugins: Path) -> None:
    path = write_config(plugins, OPERATOR_CONFIG)

    def unrepresentable(doc):
        doc["plugins"]["weird"] = object()

    with pytest.raises(Exception):
        edit_config(unrepresentable, plugins)
    assert path.read_text() == OPERATOR_CONFIG
    assert sorted(p.name for p in plugins.iterdir() if p.name.startswith(".config")) == []


def test_writes_are_atomic_renames_that_keep_the_mode(plugins: Path) -> None:
    path = write_config(plugins, OPERATOR_CONFIG)
    path.chmod(0o600)
    inode = path.stat().st_ino
    edit_config(lambda doc: doc.__setitem__("memory", {"provider": "builtin"}), plugins)
    assert path.stat().st_ino != inode  # replaced by rename, never rewritten in place
    assert path.stat().st_mode & 0o777 == 0o600
    assert load_config(plugins).get("memory.provider") == "builtin"


def test_concurrent_edits_lose_nothing(home: Path) -> None:
    names = [f"p{i}" for i in range(8)]
    for name in names:
        make_folder_plugin(home / "plugins", name, "def register(ctx):\n    pass\n")
    procs = [subprocess.Popen([str(HERMES), "plugins", "enable", "--yes", n], stdout=subprocess.DEVNULL) for n in names]
    assert all(p.wait(timeout=120) == 0 for p in procs)
    assert sorted(load_config(home).get("plugins.enabled")) == names


def age(path: Path, seconds: float = 60) -> None:
    import os
    import time

    os.utime(path, (time.time() - seconds, time.time() - seconds))


def test_parsed_config_is_cached_and_hand_edits_are_seen_at_once(home: Path) -> None:
    path = write_config(home, "memory:\n  provider: aaaa\n")
    cache = home / ".cache" / "config.yaml.json"
    assert load_config(home).get("memory.provider") == "aaaa"
    assert not cache.exists()  # just written: too fresh to cache
    age(path)
    load_config(home)
    assert cache.exists()
    path.write_text("memory:\n  provider: bbbb\n")  # same size, same inode, edited in place
    assert load_config(home).get("memory.provider") == "bbbb"
    age(path)
    load_config(home)
    edit_config(lambda doc: doc["memory"].__setitem__("provider", "cccc"), home)
    assert load_config(home).get("memory.provider") == "cccc"


def test_a_corrupt_cache_is_ignored(home: Path) -> None:
    path = write_config(home, "memory:\n  provider: real\n")
    age(path)
    load_config(home)
    (home / ".cache" / "config.yaml.json").write_text("{not json")
    assert load_config(home).get("memory.provider") == "real"


def test_a_malformed_file_is_reported_even_after_a_good_one_was_cached(home: Path) -> None:
    path = write_config(home, "memory:\n  provider: real\n")
    age(path)
    load_config(home)
    path.write_text("memory: [\n")
    with pytest.raises(ConfigError, match="line 2"):
        load_config(home)


def test_every_key_is_read_through_the_table_with_its_type_and_default(home: Path) -> None:
    from hermes_core import Config, config_keys

    assert Config({}).read(config_keys.HOOK_CALLBACK_TIMEOUT) == config_keys.HOOK_CALLBACK_TIMEOUT.default == 30.0
    assert Config({}).read(config_keys.MODEL_CONTEXT_LENGTH) == 128_000
    config = Config({"plugins": {"hook_callback_timeout": 5, "entries": {"context_engine/lcm.v2": {
        "settings": {"depth": 2}, "allow_tool_override": True}}}})
    assert config.read(config_keys.HOOK_CALLBACK_TIMEOUT) == 5.0
    assert config.read(config_keys.PLUGIN_SETTINGS, "context_engine/lcm.v2") == {"depth": 2}  # ids hold dots, slashes
    assert config.read(config_keys.PLUGIN_ALLOW_TOOL_OVERRIDE, "context_engine/lcm.v2") is True
    assert config.read(config_keys.PLUGIN_ALLOW_TOOL_OVERRIDE, "other") is False
    enabled = config.read(config_keys.PLUGINS_ENABLED)
    enabled.append("x")  # a caller's copy: the default stays empty
    assert config.read(config_keys.PLUGINS_ENABLED) == [] and config_keys.PLUGINS_ENABLED.default == []


@pytest.mark.parametrize(("text", "key", "expected"), [
    ("plugins:\n  entries:\n    a.b/c:\n      allow_tool_override: 'yes'\n", "plugins.entries.a.b/c.allow_tool_override",
     "true or false"),
    ("model:\n  context_length: -3\n", "model.context_length", "a whole number, 1 or more"),
    ("compression:\n  threshold: 2\n", "compression.threshold", "a fraction above 0 and at most 1"),
])
def test_a_value_of_the_wrong_type_names_the_key_the_file_and_what_it_should_be(
    home: Path, text: str, key: str, expected: str
) -> None:
    from hermes_core import config_keys

    write_config(home, text)
    table = {k.name: k for k in config_keys.KEYS}
    pattern = key.replace("a.b/c", "*")
    ids = ["a.b/c"] if "a.b/c" in key else []
    with pytest.raises(ConfigError) as caught:
        load_config(home).read(table[pattern], *ids)
    message = str(caught.value)
    assert message.startswith(f"{key} in {home / 'config.yaml'} must be {expected}, not ")
    assert message.endswith("; fix it in config.yaml")


def test_doctor_warns_about_misspelt_keys_with_the_nearest_known_one_and_still_exits_0(home: Path) -> None:
    write_config(home, """\
        plugins:
          hook_timeout: 3
          entries:
            clock: {allow_tool_overide: true, settings: {anything: [goes, here]}}
        modle: {model: x}
        model: {pricing: {gpt-x: {input: 1}}}
        auxiliary: {compression: {modl: small}}
        terminal: {shell: bash}
        display: {theme: dark}
        """)
    result = hermes("plugins", "doctor")
    warnings = [line for line in result.stdout.splitlines() if "unknown key" in line]
    assert warnings == [
        "warning: config.yaml: unknown key plugins.hook_timeout (did you mean plugins.hook_callback_timeout?); "
        "hermes-core ignores it",
        "warning: config.yaml: unknown key plugins.entries.clock.allow_tool_overide "
        "(did you mean plugins.entries.clock.allow_tool_override?); hermes-core ignores it",
        "warning: config.yaml: unknown key modle (did you mean model?); hermes-core ignores it",
        "warning: config.yaml: unknown key auxiliary.compression.modl (did you mean auxiliary.compression.model?); "
        "hermes-core ignores it",
    ]  # Hermes Agent's own sections (terminal, display) share the file and are not flagged
    assert hermes("plugins", "doctor", "--json")  # exit 0 there too


def test_the_builtin_engines_take_their_defaults_and_settings_from_the_table(home: Path) -> None:
    from hermes_core import PluginManager, config_keys

    write_config(home, "compression:\n  protect_last_n: 7\n")
    with PluginManager(home=home).load().open_session("s", model="m", context_length=1000) as session:
        engine = session.context_engine
        assert engine.protect_last_n == 7
        assert engine.protect_first_n == config_keys.COMPRESSION_PROTECT_FIRST_N.default
        assert engine.threshold_percent == config_keys.COMPRESSION_THRESHOLD.default
