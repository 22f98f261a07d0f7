"""Create (and clone), list, use, rename and delete profiles under a root. Every change is made
whole or not at all: a new profile is built beside its place and renamed into it; a deleted one is
renamed out of the way before its files are removed."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Iterator, MutableMapping
from pathlib import Path
from typing import Any

from .._errors import ProfileError
from .._files import write_atomic
from .names import DEFAULT, active_file, check_name, profile_home, profiles_dir

__all__ = ["CLONED", "channel_env_key", "clone_into", "create", "delete", "describe", "description", "edit_home",
           "existing", "names", "rename", "scrub_env", "sticky", "use"]

# What a new profile starts with (Hermes' folders hermes-core uses), and its placeholder `.env`.
_FOLDERS = ("memories", "skills", "logs", "cron")
_PLACEHOLDER_ENV = "# This profile's secrets: KEY=value, one a line (API keys, API_SERVER_KEY, bot tokens).\n"
# What a clone copies, besides `config.yaml` and `.env` (both without the messaging channels).
CLONED = ("SOUL.md", "skills", "memories/MEMORY.md", "memories/USER.md")

# `.env` names of a messaging channel or of the API server: a clone never takes them.
_CHANNEL_ENV = re.compile(
    r"^(API_SERVER_KEY|GATEWAY_.*|.*_(BOT_TOKEN|APP_TOKEN|ALLOWED_USERS|ALLOW_ALL_USERS|WEBHOOK_SECRET|"
    r"SIGNING_SECRET|HOME_CHANNEL)|(TELEGRAM|DISCORD|SLACK|WHATSAPP|SIGNAL|MATRIX|MATTERMOST|EMAIL|SMS|TWILIO|"
    r"TEAMS|FEISHU|WECOM|DINGTALK|BLUEBUBBLES|LINE|HOMEASSISTANT|WEBHOOK)_.*)$")
# `config.yaml` keys of the messaging channels and of the API server's keys: a clone drops them.
_CHANNEL_CONFIG = (("platforms",), ("gateway", "platforms"), ("api_server", "key"), ("api_server", "keys"),
                   ("api_server", "profiles"))


def channel_env_key(name: str) -> bool:
    """Whether `.env` variable `name` belongs to a messaging channel or the API server."""
    return bool(_CHANNEL_ENV.match(name))


def names(root: Path) -> list[str]:
    """The named profiles under `root` (folders of `<root>/profiles/` with a valid name), sorted."""
    folder = profiles_dir(root)
    if not folder.is_dir():
        return []
    return sorted(entry.name for entry in folder.iterdir()
                  if entry.is_dir() and re.fullmatch(r"[a-z0-9][a-z0-9_-]{0,63}", entry.name))


def existing(root: Path, name: str) -> Path:
    """The home of profile `name`, which must exist."""
    home = profile_home(root, name)
    if name != DEFAULT and not home.is_dir():
        known = ", ".join([DEFAULT, *names(root)])
        raise ProfileError(f"no profile {name!r} in {root} (there are: {known}); `hermes profile create {name}` makes it")
    return home


def sticky(root: Path) -> str:
    """The profile `hermes profile use` chose (`<root>/active_profile`), "default" when none."""
    try:
        text = active_file(root).read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return DEFAULT
    return text or DEFAULT


def use(root: Path, name: str) -> Path:
    """Make `name` the sticky profile of `root` (`default` forgets the choice); its home."""
    home = existing(root, check_name(name))
    if name == DEFAULT:
        with contextlib.suppress(FileNotFoundError):
            active_file(root).unlink()
    else:
        root.mkdir(parents=True, exist_ok=True)
        write_atomic(active_file(root), name + "\n")
    return home


def scrub_env(text: str, keep: Callable[[str], bool]) -> str:
    """`.env` text with the lines of each variable `keep` refuses left out (comments stay)."""
    lines = []
    for line in text.splitlines(keepends=True):
        name = line.strip().removeprefix("export ").partition("=")[0].strip()
        if line.strip() and not line.lstrip().startswith("#") and "=" in line and not keep(name):
            continue
        lines.append(line)
    return "".join(lines)


def edit_home(home: Path, mutate: Callable[[Any], bool | None]) -> None:
    """`edit_config` on the config of a home being built, leaving no lock file behind."""
    from .._config.file import edit_config

    edit_config(mutate, home=home)
    with contextlib.suppress(FileNotFoundError):
        (home / "config.yaml.lock").unlink()


def _drop_channels(data: Any) -> None:
    for path in _CHANNEL_CONFIG:
        node = data
        for part in path[:-1]:
            node = node.get(part) if isinstance(node, MutableMapping) else None
        if isinstance(node, MutableMapping):
            node.pop(path[-1], None)


def clone_into(source: Path, target: Path, *, skills: bool = True, channels: bool = False) -> None:
    """Copy what a clone takes from the home `source` into the new home `target`: `config.yaml` and
    `.env` without the messaging channels and API server keys (`channels`: with them), SOUL.md,
    skills (unless `skills` is false) and the memory files; never sessions, state, logs, cron jobs
    or the gateway's files."""
    config = source / "config.yaml"
    if config.is_file():
        shutil.copy2(config, target / "config.yaml")
        if not channels:
            edit_home(target, _drop_channels)
    env = source / ".env"
    if env.is_file():
        text = env.read_text(encoding="utf-8")
        scrubbed = text if channels else scrub_env(text, lambda name: not channel_env_key(name))
        (target / ".env").write_text(scrubbed, encoding="utf-8")
        os.chmod(target / ".env", 0o600)
    for part in CLONED:
        if part == "skills" and not skills:
            continue
        found = source / part
        if found.is_dir():
            shutil.copytree(found, target / part, symlinks=True, dirs_exist_ok=True)
        elif found.is_file():
            (target / part).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(found, target / part)


@contextlib.contextmanager
def building(root: Path, name: str) -> Iterator[Path]:
    """A folder to build profile `name` in, renamed to `<root>/profiles/<name>` when the block ends
    well, removed when it does not: nothing half-made is ever a profile."""
    folder = profiles_dir(root)
    target = folder / name
    if target.exists():
        raise ProfileError(f"profile {name!r} already exists ({target}); choose another name or delete it first")
    folder.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{name}.", suffix=".new", dir=folder))
    try:
        yield work
        os.chmod(work, 0o700)
        if target.exists():
            raise ProfileError(f"profile {name!r} was created meanwhile ({target}); nothing was changed")
        os.rename(work, target)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise


def create(root: Path, name: str, *, clone_from: Path | None = None, skills: bool = True, channels: bool = False,
           about: str = "") -> Path:
    """A new profile `name` under `root` (its folders and a placeholder `.env`), cloned from the
    home `clone_from` when given (`skills`, `channels`: as `clone_into`), described by `about`; its home."""
    check_name(name, new=True)
    with building(root, name) as work:
        for part in _FOLDERS:
            (work / part).mkdir()
        if clone_from is not None:
            clone_into(clone_from, work, skills=skills, channels=channels)
        if about:
            describe(work, about)
        env = work / ".env"
        if not env.exists():
            env.write_text(_PLACEHOLDER_ENV, encoding="utf-8")
        os.chmod(env, 0o600)
    return profiles_dir(root) / name


def rename(root: Path, old: str, new: str) -> Path:
    """Rename profile `old` to `new` (the sticky choice follows it); its new home."""
    if old == DEFAULT:
        raise ProfileError("the default profile is the root and cannot be renamed; create a named one instead")
    source = existing(root, check_name(old))
    target = profiles_dir(root) / check_name(new, new=True)
    if target.exists():
        raise ProfileError(f"profile {new!r} already exists ({target}); choose another name")
    os.rename(source, target)
    if sticky(root) == old:
        write_atomic(active_file(root), new + "\n")
    return target


def delete(root: Path, name: str) -> Path:
    """Remove profile `name` and everything in its home (the sticky choice falls back to the
    default); the home it had. The caller checks that nothing runs there."""
    if name == DEFAULT:
        raise ProfileError("the default profile is the root and cannot be deleted; delete a named profile")
    home = existing(root, check_name(name))
    gone = Path(tempfile.mkdtemp(prefix=f".{name}.", suffix=".deleted", dir=profiles_dir(root)))
    os.rename(home, gone / name)
    if sticky(root) == name:
        with contextlib.suppress(FileNotFoundError):
            active_file(root).unlink()
    shutil.rmtree(gone, ignore_errors=True)
    return home


def _profile_yaml(home: Path) -> dict[str, Any]:
    """`<home>/profile.yaml` (Hermes' file of what a profile is), {} when there is none."""
    from io import StringIO

    from ruamel.yaml import YAML
    from ruamel.yaml.error import YAMLError

    path = home / "profile.yaml"
    try:
        data = YAML(typ="safe").load(StringIO(path.read_text(encoding="utf-8")))
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError, YAMLError) as exc:
        raise ProfileError(f"{path} is not readable YAML ({' '.join(str(exc).split())}); fix or remove it") from None
    return dict(data) if isinstance(data, dict) else {}


def description(home: Path) -> str:
    """What profile `home` is for, in a sentence or two (`profile.yaml`'s `description`; "" when none)."""
    try:
        found = _profile_yaml(home).get("description")
    except ProfileError:
        return ""
    return found.strip() if isinstance(found, str) else ""


def describe(home: Path, text: str) -> None:
    """Set what profile `home` is for (`profile.yaml`'s `description`, other keys kept; "" removes it)."""
    from io import StringIO

    from ruamel.yaml import YAML

    data = _profile_yaml(home)
    if text.strip():
        data["description"] = " ".join(text.split())
    else:
        data.pop("description", None)
    out, yaml = StringIO(), YAML(typ="safe", pure=True)
    yaml.default_flow_style = False
    yaml.dump(data, out)
    write_atomic(home / "profile.yaml", out.getvalue())
