"""`hermes -p NAME` and `hermes profile ...`, run as the console script with real files: a named
profile is `<root>/profiles/<name>/`, its own HERMES_HOME, and the default profile is the root."""

from __future__ import annotations

import io
import json
import os
import subprocess
import tarfile
from pathlib import Path

import pytest

from tests.helpers import HERMES, hermes, make_folder_plugin, write_config


def out(*args: str) -> str:
    return hermes(*args).stdout.strip()


def fails(*args: str, code: int = 1) -> str:
    """The one line a failing command says on stderr."""
    result = hermes(*args, check=code)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("hermes: error: "), result.stderr
    return lines[0]


def test_the_default_profile_is_the_root_and_a_named_one_its_own_home(home: Path) -> None:
    assert out("profile") == f"default  {home}"
    hermes("profile", "create", "work")
    work = home / "profiles" / "work"
    assert (work / ".env").is_file() and oct((work / ".env").stat().st_mode & 0o777) == "0o600"
    assert out("-p", "work", "paths", "home") == str(work)
    assert out("--profile", "work", "paths", "home") == str(work)
    assert out("paths", "home", "--profile=work") == str(work)  # anywhere before the command's own arguments
    assert out("-p", "work", "profile") == f"work  {work}"
    assert out("-p", "default", "paths", "home") == str(home)
    assert out("paths", "home") == str(home)


def test_use_makes_a_profile_sticky_until_another_is_chosen(home: Path) -> None:
    hermes("profile", "create", "work")
    work = home / "profiles" / "work"
    hermes("profile", "use", "work")
    assert (home / "active_profile").read_text().strip() == "work"
    assert out("paths", "home") == str(work)
    assert out("-p", "default", "paths", "home") == str(home)  # the flag wins over the sticky choice
    listed = {entry["name"]: entry for entry in json.loads(out("profile", "list", "--json"))}
    assert listed["work"]["current"] and listed["work"]["sticky"] and not listed["default"]["current"]
    hermes("profile", "use", "default")
    assert not (home / "active_profile").exists()
    assert out("paths", "home") == str(home)


def test_a_home_inside_profiles_is_kept_as_it_is(home: Path) -> None:
    hermes("profile", "create", "work")
    hermes("profile", "create", "play")
    hermes("profile", "use", "play")
    env = os.environ | {"HERMES_HOME": str(home / "profiles" / "work")}
    result = subprocess.run([str(HERMES), "paths", "home"], capture_output=True, text=True, env=env, timeout=120)
    assert result.stdout.strip() == str(home / "profiles" / "work")  # not the sticky `play`
    result = subprocess.run([str(HERMES), "profile", "list", "--json"], capture_output=True, text=True, env=env,
                            timeout=120)
    assert [entry["name"] for entry in json.loads(result.stdout)] == ["default", "play", "work"]


def test_a_sticky_profile_that_is_gone_is_a_warning_and_the_default(home: Path) -> None:
    (home / "active_profile").write_text("gone\n")
    result = hermes("paths", "home")
    assert result.stdout.strip() == str(home)
    assert result.stderr.count("names profile 'gone', which does not exist") == 1


@pytest.mark.parametrize("args, said", [
    (["-p", "Work", "paths"], "'Work' is not a profile name"),
    (["-p", "-x", "paths"], "'-x' is not a profile name"),
    (["paths", "-p"], "-p needs a profile name"),
    (["-p", "nope", "paths"], "profile 'nope' does not exist"),
    (["-p", "a", "--profile", "b", "paths"], "two profiles were given"),
])
def test_a_wrong_profile_option_is_one_line(home: Path, args: list[str], said: str) -> None:
    assert said in fails(*args, code=2)


@pytest.mark.parametrize("name, said", [
    ("default", "reserved"), ("test", "reserved"), ("sudo", "reserved"), ("Caps", "not a profile name"),
    ("a" * 65, "not a profile name"), ("_x", "not a profile name"),
])
def test_names_follow_hermes_rule(home: Path, name: str, said: str) -> None:
    assert said in fails("profile", "create", name)
    assert not (home / "profiles" / name).exists()


def test_the_listing_runs_in_the_chosen_profile_without_click(home: Path) -> None:
    hermes("profile", "create", "work")
    make_folder_plugin(home / "profiles" / "work" / "plugins", "onlyhere", "def register(ctx):\n    pass\n",
                       "name: onlyhere\n")
    assert "onlyhere" in out("-p", "work", "plugins", "list")
    assert "onlyhere" not in out("plugins", "list")
    result = subprocess.run([os.sys.executable, "-X", "importtime", str(HERMES), "-p", "work", "plugins", "list"],
                            capture_output=True, text=True, timeout=120)
    assert "onlyhere" in result.stdout
    assert not [line for line in result.stderr.splitlines() if line.rstrip().endswith("| click")]


def seed(home: Path) -> None:
    """A profile with everything a clone takes and everything it must not."""
    write_config(home, """
        # my settings
        model:
          model: gpt-4o
          api_key: sk-live-abcdefghijklmnop1234
        platforms:
          telegram:
            enabled: true
            token: 123456:telegram-secret
        api_server:
          key: the-server-key
          port: 8650
    """)
    (home / ".env").write_text("OPENAI_API_KEY=sk-openai-1234567890abcdef\nTELEGRAM_BOT_TOKEN=tg-secret\n"
                               "API_SERVER_KEY=server-secret\nGATEWAY_ALLOWED_USERS=42\n# a note\n")
    (home / "SOUL.md").write_text("You are terse.\n")
    (home / "skills" / "brew").mkdir(parents=True)
    (home / "skills" / "brew" / "SKILL.md").write_text("---\nname: brew\ndescription: tea\n---\nBrew tea.\n")
    (home / "memories").mkdir(exist_ok=True)
    (home / "memories" / "MEMORY.md").write_text("likes tea\n")
    (home / "memories" / "USER.md").write_text("Ada\n")
    (home / "sessions.db").write_text("not copied")
    (home / "cron").mkdir(exist_ok=True)
    (home / "cron" / "jobs.json").write_text('{"jobs": []}')
    (home / "gateway").mkdir(exist_ok=True)
    (home / "gateway" / "status.json").write_text("{}")


def test_a_clone_copies_config_env_soul_skills_and_memory_never_sessions_state_or_channels(home: Path) -> None:
    seed(home)
    hermes("profile", "create", "twin", "--clone")
    twin = home / "profiles" / "twin"
    config = (twin / "config.yaml").read_text()
    assert "# my settings" in config and "gpt-4o" in config and "port: 8650" in config
    assert "telegram" not in config and "the-server-key" not in config
    env = (twin / ".env").read_text()
    assert "OPENAI_API_KEY=sk-openai" in env and "# a note" in env
    assert "TELEGRAM" not in env and "API_SERVER_KEY" not in env and "GATEWAY_ALLOWED_USERS" not in env
    assert (twin / "SOUL.md").read_text() == "You are terse.\n"
    assert (twin / "skills" / "brew" / "SKILL.md").is_file()
    assert (twin / "memories" / "MEMORY.md").read_text() == "likes tea\n"
    assert (twin / "memories" / "USER.md").read_text() == "Ada\n"
    assert not (twin / "sessions.db").exists() and not (twin / "cron" / "jobs.json").exists()
    assert not (twin / "gateway").exists() and not (twin / "config.yaml.lock").exists()
    hermes("profile", "create", "third", "--clone-from", "twin")
    assert (home / "profiles" / "third" / "SOUL.md").is_file()
    assert "no profile 'ghost'" in fails("profile", "create", "fourth", "--clone-from", "ghost")
    assert not (home / "profiles" / "fourth").exists()
    assert [p.name for p in (home / "profiles").iterdir()] and not list((home / "profiles").glob(".*"))


def test_rename_moves_the_home_and_the_sticky_choice(home: Path) -> None:
    hermes("profile", "create", "old")
    hermes("profile", "use", "old")
    hermes("profile", "rename", "old", "new")
    assert (home / "profiles" / "new").is_dir() and not (home / "profiles" / "old").exists()
    assert out("paths", "home") == str(home / "profiles" / "new")
    assert "cannot be renamed" in fails("profile", "rename", "default", "x")
    hermes("profile", "create", "other")
    assert "already exists" in fails("profile", "rename", "other", "new")


def test_delete_refuses_the_default_a_running_gateway_and_asks_first(home: Path) -> None:
    hermes("profile", "create", "work")
    work = home / "profiles" / "work"
    assert "cannot be deleted" in fails("profile", "delete", "default", "--yes")
    assert "--yes" in fails("profile", "delete", "work")  # no terminal to ask on
    (work / "gateway").mkdir()
    (work / "gateway" / "status.json").write_text(json.dumps({"state": "running", "pid": os.getpid()}))
    assert "has a gateway running" in fails("profile", "delete", "work", "--yes")
    assert work.is_dir()
    (work / "gateway" / "status.json").unlink()
    hermes("profile", "use", "work")
    hermes("profile", "delete", "work", "--yes")
    assert not work.exists() and not (home / "active_profile").exists()
    assert not list((home / "profiles").iterdir())
    assert "no profile 'work'" in fails("profile", "delete", "work", "--yes")


def test_export_leaves_the_secrets_out_and_import_makes_a_new_profile(home: Path, tmp_path: Path) -> None:
    seed(home)
    write_config(home, """
        model:
          model: gpt-4o
          api_key: sk-live-abcdefghijklmnop1234
          base_url: http://127.0.0.1:9/v1
        providers:
          mine:
            api_key: ${MINE_KEY}
            password: hunter2
    """)
    archive = tmp_path / "out" / "me.tar.gz"
    hermes("profile", "export", "default", "-o", str(archive))
    with tarfile.open(archive) as tar:
        files = {member.name: tar.extractfile(member).read().decode() for member in tar.getmembers() if member.isfile()}
    assert set(files) == {"default/config.yaml", "default/.env", "default/SOUL.md", "default/skills/brew/SKILL.md",
                          "default/memories/MEMORY.md", "default/memories/USER.md"}
    text = "\n".join(files.values())
    for secret in ("sk-live", "sk-openai", "tg-secret", "server-secret", "hunter2"):
        assert secret not in text
    assert "OPENAI_API_KEY=\n" in files["default/.env"] and "${MINE_KEY}" in files["default/config.yaml"]
    assert "http://127.0.0.1:9/v1" in files["default/config.yaml"]
    assert "holds the default profile" in fails("profile", "import", str(archive))
    hermes("profile", "import", str(archive), "--name", "copy")
    copy = home / "profiles" / "copy"
    assert (copy / "SOUL.md").read_text() == "You are terse.\n" and (copy / "skills" / "brew" / "SKILL.md").is_file()
    assert out("-p", "copy", "profile") == f"copy  {copy}"
    assert "already exists" in fails("profile", "import", str(archive), "--name", "copy")


def test_import_refuses_an_archive_that_leaves_its_folder(home: Path, tmp_path: Path) -> None:
    archive = tmp_path / "evil.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        for name in ("evil/config.yaml", "evil/../../escaped"):
            info = tarfile.TarInfo(name)
            info.size = 2
            tar.addfile(info, io.BytesIO(b"x\n"))
    assert "nothing was imported" in fails("profile", "import", str(archive))
    assert not (home / "profiles" / "evil").exists() and not (tmp_path / "escaped").exists()
    (tmp_path / "junk.tar.gz").write_text("not an archive")
    assert "cannot read" in fails("profile", "import", str(tmp_path / "junk.tar.gz"))


PROBE = """
def register(ctx):
    ctx.register_command("whoami", lambda raw: ctx.profile_name + " " + str(ctx.hermes_home), argument_mode="none")
"""


def test_ctx_profile_name_answers_as_hermes(home: Path, tmp_path: Path) -> None:
    for folder in (home, home / "profiles" / "work"):
        make_folder_plugin(folder / "plugins", "probe", PROBE, "name: probe\n")
        write_config(folder, "plugins:\n  enabled: [probe]\n")
    assert out("command", "whoami") == f"default {home}"
    assert out("-p", "work", "command", "whoami") == f"work {home / 'profiles' / 'work'}"
    fake_user = tmp_path / "user"
    custom = fake_user / ".hermes" / "elsewhere"  # under ~/.hermes, neither the root nor a profile
    make_folder_plugin(custom / "plugins", "probe", PROBE, "name: probe\n")
    write_config(custom, "plugins:\n  enabled: [probe]\n")
    env = os.environ | {"HOME": str(fake_user), "HERMES_HOME": str(custom)}
    result = subprocess.run([str(HERMES), "command", "whoami"], capture_output=True, text=True, env=env, timeout=120)
    assert result.stdout.strip() == f"custom {custom}", result.stderr


def test_a_clone_without_skills_or_with_its_channels_and_a_description(home: Path) -> None:
    seed(home)
    hermes("profile", "create", "bare", "--clone", "--no-skills", "--description", "Answers  the\nphone.")
    bare = home / "profiles" / "bare"
    assert not (bare / "skills" / "brew").exists() and (bare / "SOUL.md").is_file()
    assert "TELEGRAM" not in (bare / ".env").read_text()
    hermes("profile", "create", "bot", "--clone", "--clone-channels")
    bot = home / "profiles" / "bot"
    assert "API_SERVER_KEY" in (bot / ".env").read_text() and "telegram" in (bot / "config.yaml").read_text()
    assert json.loads(out("profile", "show", "bare", "--json"))["description"] == "Answers the phone."
    hermes("profile", "describe", "bot", "Runs the Telegram bot.")
    assert out("profile", "describe", "bot") == "Runs the Telegram bot."
    assert "add --clone or --clone-from" in fails("profile", "create", "nope", "--no-skills")


def test_an_alias_is_written_when_asked_runs_its_profile_and_follows_it(home: Path, tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    user = tmp_path / "user"
    bin_dir = user / ".local" / "bin"
    monkeypatch.setenv("HOME", str(user))
    monkeypatch.setenv("PATH", os.pathsep.join([str(bin_dir), os.environ["PATH"]]))
    hermes("profile", "create", "plain")
    assert not bin_dir.exists()  # nothing outside the home unless asked
    hermes("profile", "create", "coder", "--alias")
    coder = home / "profiles" / "coder"
    ran = subprocess.run([str(bin_dir / "coder"), "profile"], capture_output=True, text=True, timeout=60)
    assert ran.returncode == 0 and ran.stdout.strip() == f"coder  {coder}"
    hermes("profile", "alias", "coder", "--name", "cdr")
    assert json.loads(out("profile", "show", "coder", "--json"))["aliases"] == ["cdr", "coder"]
    assert "it is a hermes command" in fails("profile", "alias", "coder", "--name", "chat")
    (bin_dir / "tool").write_text("#!/bin/sh\necho mine\n")
    assert "another command of that name" in fails("profile", "alias", "coder", "--name", "tool")
    assert "no alias 'tool'" in fails("profile", "alias", "tool", "--remove")
    hermes("profile", "rename", "coder", "dev")
    ran = subprocess.run([str(bin_dir / "cdr"), "profile"], capture_output=True, text=True, timeout=60)
    assert ran.stdout.strip() == f"dev  {home / 'profiles' / 'dev'}"
    hermes("profile", "alias", "cdr", "--remove")
    hermes("profile", "delete", "dev", "--yes")
    assert sorted(p.name for p in bin_dir.iterdir()) == ["tool"]
